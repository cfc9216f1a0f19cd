"""ctypes bindings of cuSOLVER's dense API (libcusolver): the calls nvmathx.linalg's solvers make,
with typed errors.

Every function returns ``cusolverStatus_t``; :func:`check` turns a nonzero status into
:class:`CusolverError` carrying its C name. Handles, parameter objects and pointers are plain ints.
The 64-bit API (``cusolverDnX*``) serves one system at a time, of any size; the legacy typed LU
(``cusolverDn<t>getrf`` / ``getrs``, 32-bit sizes and pivots) serves systems whose element count
fits 32 bits, where its solve is the faster of the two; ``potrfBatched`` and
``potrsBatched`` take arrays of device pointers (one per system, 32-bit sizes) and write one
``info`` per system (potrf) or one for the whole call (potrs, which takes one right-hand side).
Constants follow cusolver_common.h, cublas_api.h and library_types.h (CUDA 12 and 13 share them).
"""

from __future__ import annotations

import ctypes
import enum

from .._errors import CudaLibraryError
from ._loader import FunctionTable, address
from ._status import status_functions

__all__ = [
    "CusolverError",
    "Status",
    "FillMode",
    "Operation",
    "DATA_TYPES",
    "status_name",
    "check",
    "get_version",
    "create",
    "destroy",
    "set_stream",
    "create_params",
    "destroy_params",
    "xgetrf_buffer_size",
    "xgetrf",
    "xgetrs",
    "getrf_buffer_size",
    "getrf",
    "getrs",
    "xpotrf_buffer_size",
    "xpotrf",
    "xpotrs",
    "potrf_batched",
    "potrs_batched",
    "BATCHED_PREFIX",
]


class CusolverError(CudaLibraryError):
    """A cuSOLVER call returned a nonzero ``cusolverStatus_t``."""

    library = "cuSOLVER"
    hint = "Set CUSOLVERDN_LOG_LEVEL=5 to see cuSOLVER's own explanation"


class Status(enum.IntEnum):
    """cusolverStatus_t."""

    SUCCESS = 0
    NOT_INITIALIZED = 1
    ALLOC_FAILED = 2
    INVALID_VALUE = 3
    ARCH_MISMATCH = 4
    MAPPING_ERROR = 5
    EXECUTION_FAILED = 6
    INTERNAL_ERROR = 7
    MATRIX_TYPE_NOT_SUPPORTED = 8
    NOT_SUPPORTED = 9
    ZERO_PIVOT = 10
    INVALID_LICENSE = 11


class FillMode(enum.IntEnum):
    """cublasFillMode_t: which triangle holds the matrix."""

    LOWER = 0
    UPPER = 1


class Operation(enum.IntEnum):
    """cublasOperation_t."""

    N = 0
    T = 1
    C = 2


# cudaDataType_t of each dtype the solvers take.
DATA_TYPES = {"float32": 0, "float64": 1, "complex64": 4, "complex128": 5}

# The letter of the typed batched routines (cusolverDn<t>potrfBatched).
BATCHED_PREFIX = {"float32": "S", "float64": "D", "complex64": "C", "complex128": "Z"}

_p = ctypes.c_void_p
_pp = ctypes.POINTER(ctypes.c_void_p)
_int = ctypes.c_int
_i64 = ctypes.c_int64
_size = ctypes.c_size_t
_psize = ctypes.POINTER(ctypes.c_size_t)
_SIGNATURES = {
    "cusolverGetVersion": (_int, [ctypes.POINTER(_int)]),
    "cusolverDnCreate": (_int, [_pp]),
    "cusolverDnDestroy": (_int, [_p]),
    "cusolverDnSetStream": (_int, [_p, _p]),
    "cusolverDnCreateParams": (_int, [_pp]),
    "cusolverDnDestroyParams": (_int, [_p]),
    # handle, params, m, n, dataTypeA, A, lda, computeType, device bytes*, host bytes*
    "cusolverDnXgetrf_bufferSize": (_int, [_p, _p, _i64, _i64, _int, _p, _i64, _int, _psize, _psize]),
    # handle, params, m, n, dataTypeA, A, lda, ipiv (int64*), computeType, device buffer, bytes, host buffer,
    # bytes, info
    "cusolverDnXgetrf": (_int, [_p, _p, _i64, _i64, _int, _p, _i64, _p, _int, _p, _size, _p, _size, _p]),
    # handle, params, trans, n, nrhs, dataTypeA, A, lda, ipiv, dataTypeB, B, ldb, info
    "cusolverDnXgetrs": (_int, [_p, _p, _int, _i64, _i64, _int, _p, _i64, _p, _int, _p, _i64, _p]),
    # handle, params, uplo, n, dataTypeA, A, lda, computeType, device bytes*, host bytes*
    "cusolverDnXpotrf_bufferSize": (_int, [_p, _p, _int, _i64, _int, _p, _i64, _int, _psize, _psize]),
    # handle, params, uplo, n, dataTypeA, A, lda, computeType, device buffer, bytes, host buffer, bytes, info
    "cusolverDnXpotrf": (_int, [_p, _p, _int, _i64, _int, _p, _i64, _int, _p, _size, _p, _size, _p]),
    # handle, params, uplo, n, nrhs, dataTypeA, A, lda, dataTypeB, B, ldb, info
    "cusolverDnXpotrs": (_int, [_p, _p, _int, _i64, _i64, _int, _p, _i64, _int, _p, _i64, _p]),
}
for _t in BATCHED_PREFIX.values():
    # handle, m, n, A, lda, Lwork (int*, in elements)
    _SIGNATURES[f"cusolverDn{_t}getrf_bufferSize"] = (_int, [_p, _int, _int, _p, _int, ctypes.POINTER(_int)])
    # handle, m, n, A, lda, Workspace, devIpiv (int*), devInfo
    _SIGNATURES[f"cusolverDn{_t}getrf"] = (_int, [_p, _int, _int, _p, _int, _p, _p, _p])
    # handle, trans, n, nrhs, A, lda, devIpiv (int*), B, ldb, devInfo
    _SIGNATURES[f"cusolverDn{_t}getrs"] = (_int, [_p, _int, _int, _int, _p, _int, _p, _p, _int, _p])
    # handle, uplo, n, Aarray (device T**), lda, infoArray (device int*), batchSize
    _SIGNATURES[f"cusolverDn{_t}potrfBatched"] = (_int, [_p, _int, _int, _p, _int, _p, _int])
    # handle, uplo, n, nrhs (1), Aarray, lda, Barray, ldb, info (device int*), batchSize
    _SIGNATURES[f"cusolverDn{_t}potrsBatched"] = (_int, [_p, _int, _int, _int, _p, _int, _p, _int, _p, _int])

_lib = FunctionTable("cusolver", _SIGNATURES)


status_name, check, _call = status_functions("CUSOLVER_STATUS_", Status, CusolverError, globals())


def get_version() -> int:
    """cusolverGetVersion(): e.g. 12000 for cuSOLVER 12.0.0."""
    version = _int()
    _call("cusolverGetVersion", ctypes.byref(version))
    return version.value


def create() -> int:
    """A new cuSOLVER dense handle for the current device."""
    handle = ctypes.c_void_p()
    _call("cusolverDnCreate", ctypes.byref(handle))
    return address(handle)


def destroy(handle: int) -> None:
    _call("cusolverDnDestroy", handle)


def set_stream(handle: int, stream: int) -> None:
    _call("cusolverDnSetStream", handle, stream)


def create_params() -> int:
    """A new cusolverDnParams_t (default algorithms) for the 64-bit API."""
    params = ctypes.c_void_p()
    _call("cusolverDnCreateParams", ctypes.byref(params))
    return address(params)


def destroy_params(params: int) -> None:
    _call("cusolverDnDestroyParams", params)


def _sizes(name: str, *args) -> tuple[int, int]:
    device, host = _size(0), _size(0)
    _call(name, *args, ctypes.byref(device), ctypes.byref(host))
    return device.value, host.value


def xgetrf_buffer_size(handle, params, n: int, dtype: str, a: int, lda: int) -> tuple[int, int]:
    """(device bytes, host bytes) of workspace that :func:`xgetrf` needs for an n x n matrix."""
    t = DATA_TYPES[dtype]
    return _sizes("cusolverDnXgetrf_bufferSize", handle, params, n, n, t, a, lda, t)


def xgetrf(handle, params, n: int, dtype: str, a: int, lda: int, ipiv: int, device_buffer: int, device_bytes: int,
           host_buffer: int, host_bytes: int, info: int) -> None:
    """LU with partial pivoting of an n x n column-major matrix, in place; ``ipiv`` (int64, 1-based) and
    ``info`` (int32: 0, or i > 0 when U[i-1, i-1] is exactly zero) are device pointers."""
    t = DATA_TYPES[dtype]
    _call("cusolverDnXgetrf", handle, params, n, n, t, a, lda, ipiv, t, device_buffer, device_bytes, host_buffer,
          host_bytes, info, detail=f"n {n}, {dtype}")


def xgetrs(handle, params, trans: int, n: int, nrhs: int, dtype: str, a: int, lda: int, ipiv: int, b: int,
           ldb: int, info: int) -> None:
    """Solve op(A) X = B with :func:`xgetrf`'s factors; B (n x nrhs, column-major) is overwritten."""
    t = DATA_TYPES[dtype]
    _call("cusolverDnXgetrs", handle, params, int(trans), n, nrhs, t, a, lda, ipiv, t, b, ldb, info,
          detail=f"n {n}, nrhs {nrhs}, {dtype}")


_ITEM_BYTES = {"float32": 4, "float64": 8, "complex64": 8, "complex128": 16}


def getrf_buffer_size(handle, n: int, dtype: str, a: int, lda: int) -> int:
    """Device bytes of workspace that :func:`getrf` needs for an n x n matrix (the C call counts
    elements)."""
    elements = _int(0)
    _call(f"cusolverDn{BATCHED_PREFIX[dtype]}getrf_bufferSize", handle, n, n, a, lda, ctypes.byref(elements),
          detail=f"n {n}, {dtype}")
    return elements.value * _ITEM_BYTES[dtype]


def getrf(handle, n: int, dtype: str, a: int, lda: int, workspace: int, ipiv: int, info: int) -> None:
    """LU with partial pivoting through the legacy typed API: as :func:`xgetrf`, with int32 pivots."""
    _call(f"cusolverDn{BATCHED_PREFIX[dtype]}getrf", handle, n, n, a, lda, workspace, ipiv, info,
          detail=f"n {n}, {dtype}")


def getrs(handle, trans: int, n: int, nrhs: int, dtype: str, a: int, lda: int, ipiv: int, b: int, ldb: int,
          info: int) -> None:
    """Solve op(A) X = B with :func:`getrf`'s factors (int32 pivots); B is overwritten."""
    _call(f"cusolverDn{BATCHED_PREFIX[dtype]}getrs", handle, int(trans), n, nrhs, a, lda, ipiv, b, ldb, info,
          detail=f"n {n}, nrhs {nrhs}, {dtype}")


def xpotrf_buffer_size(handle, params, uplo: int, n: int, dtype: str, a: int, lda: int) -> tuple[int, int]:
    """(device bytes, host bytes) of workspace that :func:`xpotrf` needs."""
    t = DATA_TYPES[dtype]
    return _sizes("cusolverDnXpotrf_bufferSize", handle, params, int(uplo), n, t, a, lda, t)


def xpotrf(handle, params, uplo: int, n: int, dtype: str, a: int, lda: int, device_buffer: int, device_bytes: int,
           host_buffer: int, host_bytes: int, info: int) -> None:
    """Cholesky factorization in place (the ``uplo`` triangle); ``info`` > 0 names the order of the first
    leading minor that is not positive definite."""
    t = DATA_TYPES[dtype]
    _call("cusolverDnXpotrf", handle, params, int(uplo), n, t, a, lda, t, device_buffer, device_bytes, host_buffer,
          host_bytes, info, detail=f"n {n}, {dtype}")


def xpotrs(handle, params, uplo: int, n: int, nrhs: int, dtype: str, a: int, lda: int, b: int, ldb: int,
           info: int) -> None:
    """Solve A X = B with :func:`xpotrf`'s factor; B is overwritten."""
    t = DATA_TYPES[dtype]
    _call("cusolverDnXpotrs", handle, params, int(uplo), n, nrhs, t, a, lda, t, b, ldb, info,
          detail=f"n {n}, nrhs {nrhs}, {dtype}")


def potrf_batched(handle, uplo: int, n: int, dtype: str, a_array: int, lda: int, info_array: int,
                  batch: int) -> None:
    """Cholesky of ``batch`` matrices whose device pointers are at ``a_array`` (device memory);
    ``info_array`` holds one int32 per matrix."""
    name = f"cusolverDn{BATCHED_PREFIX[dtype]}potrfBatched"
    _call(name, handle, int(uplo), n, a_array, lda, info_array, batch, detail=f"n {n}, batch {batch}")


def potrs_batched(handle, uplo: int, n: int, dtype: str, a_array: int, lda: int, b_array: int, ldb: int, info: int,
                  batch: int) -> None:
    """Solve A_i x_i = b_i for one right-hand side each (cuSOLVER accepts nrhs = 1 only) with
    :func:`potrf_batched`'s factors; ``info`` is one int32 in device memory."""
    name = f"cusolverDn{BATCHED_PREFIX[dtype]}potrsBatched"
    _call(name, handle, int(uplo), n, 1, a_array, lda, b_array, ldb, info, batch, detail=f"n {n}, batch {batch}")
