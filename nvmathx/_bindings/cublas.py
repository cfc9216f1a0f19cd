"""ctypes bindings of cuBLAS v2 (libcublas): the batched LU and triangular solves nvmathx.linalg's
solvers make, with typed errors.

Every function returns ``cublasStatus_t``; :func:`check` turns a nonzero status into
:class:`CublasError` carrying its C name. Handles and pointers are plain ints; the batched routines
take device arrays of device pointers (one per matrix). Scalars (``alpha`` of trsm) are read from
host memory (the handle's default pointer mode). Constants follow cublas_api.h (CUDA 12 and 13
share them).
"""

from __future__ import annotations

import ctypes
import enum

from .._errors import CudaLibraryError
from ._loader import FunctionTable, address
from ._status import status_functions

__all__ = [
    "CublasError",
    "Status",
    "FillMode",
    "Operation",
    "SideMode",
    "DiagType",
    "PREFIX",
    "status_name",
    "check",
    "get_version",
    "create",
    "destroy",
    "set_stream",
    "getrf_batched",
    "getrs_batched",
    "trsm",
    "trsm_batched",
]


class CublasError(CudaLibraryError):
    """A cuBLAS call returned a nonzero ``cublasStatus_t``."""

    library = "cuBLAS"
    hint = "Set CUBLAS_LOGINFO_DBG=1 to see cuBLAS's own explanation"


class Status(enum.IntEnum):
    """cublasStatus_t."""

    SUCCESS = 0
    NOT_INITIALIZED = 1
    ALLOC_FAILED = 3
    INVALID_VALUE = 7
    ARCH_MISMATCH = 8
    MAPPING_ERROR = 11
    EXECUTION_FAILED = 13
    INTERNAL_ERROR = 14
    NOT_SUPPORTED = 15
    LICENSE_ERROR = 16


class FillMode(enum.IntEnum):
    LOWER = 0
    UPPER = 1


class Operation(enum.IntEnum):
    N = 0
    T = 1
    C = 2


class SideMode(enum.IntEnum):
    LEFT = 0
    RIGHT = 1


class DiagType(enum.IntEnum):
    NON_UNIT = 0
    UNIT = 1


# The letter of the typed routines (cublas<t>getrfBatched) and the ctypes type of their scalars.
PREFIX = {"float32": "S", "float64": "D", "complex64": "C", "complex128": "Z"}
_SCALAR: dict[str, type[ctypes.Array]] = {
    "float32": ctypes.c_float * 1, "float64": ctypes.c_double * 1, "complex64": ctypes.c_float * 2,
    "complex128": ctypes.c_double * 2,
}

_p = ctypes.c_void_p
_pp = ctypes.POINTER(ctypes.c_void_p)
_int = ctypes.c_int
_SIGNATURES = {
    "cublasCreate_v2": (_int, [_pp]),
    "cublasDestroy_v2": (_int, [_p]),
    "cublasSetStream_v2": (_int, [_p, _p]),
    "cublasGetVersion_v2": (_int, [_p, ctypes.POINTER(_int)]),
}
for _t in PREFIX.values():
    # handle, n, Aarray (device T**), lda, PivotArray (device int*), infoArray (device int*), batchSize
    _SIGNATURES[f"cublas{_t}getrfBatched"] = (_int, [_p, _int, _p, _int, _p, _p, _int])
    # handle, trans, n, nrhs, Aarray, lda, devIpiv, Barray, ldb, info (host int*), batchSize
    _SIGNATURES[f"cublas{_t}getrsBatched"] = (_int, [_p, _int, _int, _int, _p, _int, _p, _p, _int, _p, _int])
    # handle, side, uplo, trans, diag, m, n, alpha (host T*), A, lda, B, ldb
    _SIGNATURES[f"cublas{_t}trsm_v2"] = (_int, [_p, _int, _int, _int, _int, _int, _int, _p, _p, _int, _p, _int])
    # handle, side, uplo, trans, diag, m, n, alpha, Aarray, lda, Barray, ldb, batchCount
    _SIGNATURES[f"cublas{_t}trsmBatched"] = (_int, [_p, _int, _int, _int, _int, _int, _int, _p, _p, _int, _p, _int,
                                                    _int])

_lib = FunctionTable("cublas", _SIGNATURES)


status_name, check, _call = status_functions("CUBLAS_STATUS_", Status, CublasError, globals())


def create() -> int:
    """A new cuBLAS handle for the current device."""
    handle = ctypes.c_void_p()
    _call("cublasCreate_v2", ctypes.byref(handle))
    return address(handle)


def destroy(handle: int) -> None:
    _call("cublasDestroy_v2", handle)


def set_stream(handle: int, stream: int) -> None:
    _call("cublasSetStream_v2", handle, stream)


def get_version(handle: int) -> int:
    """cublasGetVersion_v2(): e.g. 130100 for cuBLAS 13.1.0."""
    version = _int()
    _call("cublasGetVersion_v2", handle, ctypes.byref(version))
    return version.value


def getrf_batched(handle, n: int, dtype: str, a_array: int, lda: int, pivots: int, info_array: int,
                  batch: int) -> None:
    """LU with partial pivoting of ``batch`` n x n matrices in place; ``pivots`` (int32, n per
    matrix, 1-based) and ``info_array`` (one int32 per matrix: i > 0 when U[i-1, i-1] is zero) are
    device pointers."""
    _call(f"cublas{PREFIX[dtype]}getrfBatched", handle, n, a_array, lda, pivots, info_array, batch,
          detail=f"n {n}, batch {batch}")


def getrs_batched(handle, trans: int, n: int, nrhs: int, dtype: str, a_array: int, lda: int, pivots: int,
                  b_array: int, ldb: int, batch: int) -> None:
    """Solve op(A_i) X_i = B_i with :func:`getrf_batched`'s factors, B_i overwritten. The ``info`` of
    this call reports bad arguments only; it lives on the host and is checked here."""
    info = _int(0)
    _call(f"cublas{PREFIX[dtype]}getrsBatched", handle, int(trans), n, nrhs, a_array, lda, pivots, b_array, ldb,
          ctypes.byref(info), batch, detail=f"n {n}, nrhs {nrhs}, batch {batch}")
    if info.value != 0:
        check(Status.INVALID_VALUE, f"cublas{PREFIX[dtype]}getrsBatched", f"argument {-info.value} is invalid")


def _one(dtype: str) -> ctypes.Array:
    scalar: ctypes.Array = _SCALAR[dtype]()
    scalar[0] = 1.0
    return scalar


def trsm(handle, side: int, uplo: int, trans: int, diag: int, m: int, n: int, dtype: str, a: int, lda: int, b: int,
         ldb: int) -> None:
    """Solve op(A) X = B (side LEFT; B is m x n) for triangular A, overwriting B (alpha = 1)."""
    alpha = _one(dtype)
    _call(f"cublas{PREFIX[dtype]}trsm_v2", handle, int(side), int(uplo), int(trans), int(diag), m, n,
          ctypes.byref(alpha), a, lda, b, ldb, detail=f"m {m}, n {n}")


def trsm_batched(handle, side: int, uplo: int, trans: int, diag: int, m: int, n: int, dtype: str, a_array: int,
                 lda: int, b_array: int, ldb: int, batch: int) -> None:
    """:func:`trsm` for ``batch`` systems whose device pointers are at ``a_array`` and ``b_array``."""
    alpha = _one(dtype)
    _call(f"cublas{PREFIX[dtype]}trsmBatched", handle, int(side), int(uplo), int(trans), int(diag), m, n,
          ctypes.byref(alpha), a_array, lda, b_array, ldb, batch, detail=f"m {m}, n {n}, batch {batch}")
