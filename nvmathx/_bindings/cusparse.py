"""ctypes bindings of cuSPARSE's generic API (libcusparse): the calls nvmathx.sparse makes, with
typed errors.

Every function returns ``cusparseStatus_t``; :func:`check` turns a nonzero status into
:class:`CusparseError` carrying its C name. Handles and descriptors are plain ints (``void*``).
Constants follow cusparse.h and library_types.h (cuSPARSE 12 of CUDA 12 and 13 share them).
"""

from __future__ import annotations

import ctypes
import enum
import functools
from typing import Callable

from .._errors import CudaLibraryError
from ._loader import FunctionTable, address
from ._status import status_functions

__all__ = [
    "CusparseError",
    "Status",
    "Operation",
    "IndexType",
    "IndexBase",
    "Order",
    "DataType",
    "SpMVAlg",
    "SpMMAlg",
    "check",
    "get_version",
    "create",
    "destroy",
    "set_stream",
    "create_csr",
    "destroy_sp_mat",
    "csr_set_pointers",
    "create_dn_mat",
    "destroy_dn_mat",
    "dn_mat_set_values",
    "create_dn_vec",
    "destroy_dn_vec",
    "dn_vec_set_values",
    "spmv_buffer_size",
    "spmv",
    "spmv_prepared",
    "spmm_buffer_size",
    "spmm_preprocess",
    "spmm",
    "spmm_prepared",
]


class CusparseError(CudaLibraryError):
    """A cuSPARSE call returned a nonzero ``cusparseStatus_t``."""

    library = "cuSPARSE"
    hint = "Set CUSPARSE_LOG_LEVEL=5 to see cuSPARSE's own explanation"


class Status(enum.IntEnum):
    """cusparseStatus_t."""

    SUCCESS = 0
    NOT_INITIALIZED = 1
    ALLOC_FAILED = 2
    INVALID_VALUE = 3
    ARCH_MISMATCH = 4
    MAPPING_ERROR = 5
    EXECUTION_FAILED = 6
    INTERNAL_ERROR = 7
    MATRIX_TYPE_NOT_SUPPORTED = 8
    ZERO_PIVOT = 9
    NOT_SUPPORTED = 10
    INSUFFICIENT_RESOURCES = 11


class Operation(enum.IntEnum):
    """cusparseOperation_t."""

    NON_TRANSPOSE = 0
    TRANSPOSE = 1
    CONJUGATE_TRANSPOSE = 2


class IndexType(enum.IntEnum):
    """cusparseIndexType_t."""

    INDEX_16U = 1
    INDEX_32I = 2
    INDEX_64I = 3


class IndexBase(enum.IntEnum):
    """cusparseIndexBase_t."""

    ZERO = 0
    ONE = 1


class Order(enum.IntEnum):
    """cusparseOrder_t: the layout of a dense matrix."""

    COL = 1
    ROW = 2


class DataType(enum.IntEnum):
    """cudaDataType_t (library_types.h): the values cuSPARSE's generic API takes here."""

    R_32F = 0
    R_64F = 1
    R_16F = 2
    C_32F = 4
    C_64F = 5
    R_16BF = 14


DTYPE_NAMES = {"float32": DataType.R_32F, "float64": DataType.R_64F, "float16": DataType.R_16F,
               "bfloat16": DataType.R_16BF, "complex64": DataType.C_32F, "complex128": DataType.C_64F}
INDEX_TYPES = {"int32": IndexType.INDEX_32I, "int64": IndexType.INDEX_64I}


class SpMVAlg(enum.IntEnum):
    """cusparseSpMVAlg_t (the CSR members and the default)."""

    DEFAULT = 0
    CSR_ALG1 = 2
    CSR_ALG2 = 3


class SpMMAlg(enum.IntEnum):
    """cusparseSpMMAlg_t (the CSR members and the default)."""

    DEFAULT = 0
    CSR_ALG1 = 4
    CSR_ALG2 = 6
    CSR_ALG3 = 12


_p = ctypes.c_void_p
_pp = ctypes.POINTER(ctypes.c_void_p)
_int = ctypes.c_int
_i64 = ctypes.c_int64
_psize = ctypes.POINTER(ctypes.c_size_t)
# handle, opA, alpha, matA, vecX, beta, vecY, computeType, alg, then size_t* or void* buffer
_SPMV = [_p, _int, _p, _p, _p, _p, _p, _int, _int]
# handle, opA, opB, alpha, matA, matB, beta, matC, computeType, alg, then size_t* or void* buffer
_SPMM = [_p, _int, _int, _p, _p, _p, _p, _p, _int, _int]
_SIGNATURES = {
    "cusparseGetProperty": (_int, [_int, ctypes.POINTER(_int)]),
    "cusparseGetErrorName": (ctypes.c_char_p, [_int]),
    "cusparseCreate": (_int, [_pp]),
    "cusparseDestroy": (_int, [_p]),
    "cusparseSetStream": (_int, [_p, _p]),
    # spMatDescr, rows, cols, nnz, csrRowOffsets, csrColInd, csrValues, csrRowOffsetsType, csrColIndType,
    # idxBase, valueType
    "cusparseCreateCsr": (_int, [_pp, _i64, _i64, _i64, _p, _p, _p, _int, _int, _int, _int]),
    "cusparseDestroySpMat": (_int, [_p]),
    "cusparseCsrSetPointers": (_int, [_p, _p, _p, _p]),
    # dnMatDescr, rows, cols, ld, values, valueType, order
    "cusparseCreateDnMat": (_int, [_pp, _i64, _i64, _i64, _p, _int, _int]),
    "cusparseDestroyDnMat": (_int, [_p]),
    "cusparseDnMatSetValues": (_int, [_p, _p]),
    # dnVecDescr, size, values, valueType
    "cusparseCreateDnVec": (_int, [_pp, _i64, _p, _int]),
    "cusparseDestroyDnVec": (_int, [_p]),
    "cusparseDnVecSetValues": (_int, [_p, _p]),
    "cusparseSpMV_bufferSize": (_int, _SPMV + [_psize]),
    "cusparseSpMV": (_int, _SPMV + [_p]),
    "cusparseSpMM_bufferSize": (_int, _SPMM + [_psize]),
    "cusparseSpMM_preprocess": (_int, _SPMM + [_p]),
    "cusparseSpMM": (_int, _SPMM + [_p]),
}

_lib = FunctionTable("cusparse", _SIGNATURES)


status_name, check, _call = status_functions("CUSPARSE_STATUS_", Status, CusparseError, globals(),
                                             library_name="cusparseGetErrorName")


def get_version() -> tuple[int, int, int]:
    """(major, minor, patch) of the loaded cuSPARSE (cusparseGetProperty; no handle needed)."""
    parts = []
    for prop in range(3):  # libraryPropertyType_t: MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL
        value = ctypes.c_int(0)
        _call("cusparseGetProperty", prop, ctypes.byref(value))
        parts.append(int(value.value))
    return parts[0], parts[1], parts[2]


def create() -> int:
    """A new cuSPARSE handle for the current device."""
    handle = ctypes.c_void_p()
    _call("cusparseCreate", ctypes.byref(handle))
    return address(handle)


def destroy(handle: int) -> None:
    _call("cusparseDestroy", handle)


def set_stream(handle: int, stream: int) -> None:
    _call("cusparseSetStream", handle, stream)


def create_csr(rows: int, cols: int, nnz: int, indptr: int, indices: int, values: int, index_type: int,
               value_type: int) -> int:
    """A CSR descriptor (zero-based; row offsets and column indices of one index type)."""
    desc = ctypes.c_void_p()
    _call("cusparseCreateCsr", ctypes.byref(desc), rows, cols, nnz, indptr, indices, values, int(index_type),
          int(index_type), int(IndexBase.ZERO), int(value_type),
          detail=f"{rows} x {cols}, nnz {nnz}, index type {index_type}, value type {value_type}")
    return address(desc)


def destroy_sp_mat(desc: int) -> None:
    _call("cusparseDestroySpMat", desc)


def csr_set_pointers(desc: int, indptr: int, indices: int, values: int) -> None:
    _call("cusparseCsrSetPointers", desc, indptr, indices, values)


def create_dn_mat(rows: int, cols: int, ld: int, values: int, value_type: int, order: int) -> int:
    desc = ctypes.c_void_p()
    _call("cusparseCreateDnMat", ctypes.byref(desc), rows, cols, ld, values, int(value_type), int(order),
          detail=f"{rows} x {cols}, ld {ld}, value type {value_type}, order {order}")
    return address(desc)


def destroy_dn_mat(desc: int) -> None:
    _call("cusparseDestroyDnMat", desc)


def dn_mat_set_values(desc: int, values: int) -> None:
    _call("cusparseDnMatSetValues", desc, values)


def create_dn_vec(size: int, values: int, value_type: int) -> int:
    desc = ctypes.c_void_p()
    _call("cusparseCreateDnVec", ctypes.byref(desc), size, values, int(value_type))
    return address(desc)


def destroy_dn_vec(desc: int) -> None:
    _call("cusparseDestroyDnVec", desc)


def dn_vec_set_values(desc: int, values: int) -> None:
    _call("cusparseDnVecSetValues", desc, values)


def spmv_buffer_size(handle, op_a, alpha, mat_a, vec_x, beta, vec_y, compute_type, alg) -> int:
    """Workspace bytes of cusparseSpMV (``alpha``/``beta`` are host addresses)."""
    size = ctypes.c_size_t(0)
    _call("cusparseSpMV_bufferSize", handle, int(op_a), alpha, mat_a, vec_x, beta, vec_y, int(compute_type),
          int(alg), ctypes.byref(size))
    return int(size.value)


def spmv(handle, op_a, alpha, mat_a, vec_x, beta, vec_y, compute_type, alg, buffer) -> None:
    _call("cusparseSpMV", handle, int(op_a), alpha, mat_a, vec_x, beta, vec_y, int(compute_type), int(alg), buffer)


def spmv_prepared(handle, op_a, alpha, mat_a, vec_x, beta, vec_y, compute_type, alg, buffer) -> Callable[[], None]:
    """:func:`spmv` with these arguments, made ready to call with none: a plan's hot path (the
    arguments are converted to their C types once, not at every call)."""
    return _prepared("cusparseSpMV", handle, op_a, alpha, mat_a, vec_x, beta, vec_y, compute_type, alg, buffer)


def spmm_buffer_size(handle, op_a, op_b, alpha, mat_a, mat_b, beta, mat_c, compute_type, alg) -> int:
    """Workspace bytes of cusparseSpMM (``alpha``/``beta`` are host addresses)."""
    size = ctypes.c_size_t(0)
    _call("cusparseSpMM_bufferSize", handle, int(op_a), int(op_b), alpha, mat_a, mat_b, beta, mat_c,
          int(compute_type), int(alg), ctypes.byref(size))
    return int(size.value)


def spmm_preprocess(handle, op_a, op_b, alpha, mat_a, mat_b, beta, mat_c, compute_type, alg, buffer) -> None:
    _call("cusparseSpMM_preprocess", handle, int(op_a), int(op_b), alpha, mat_a, mat_b, beta, mat_c,
          int(compute_type), int(alg), buffer)


def spmm(handle, op_a, op_b, alpha, mat_a, mat_b, beta, mat_c, compute_type, alg, buffer) -> None:
    _call("cusparseSpMM", handle, int(op_a), int(op_b), alpha, mat_a, mat_b, beta, mat_c, int(compute_type),
          int(alg), buffer)


def spmm_prepared(handle, op_a, op_b, alpha, mat_a, mat_b, beta, mat_c, compute_type, alg,
                  buffer) -> Callable[[], None]:
    """:func:`spmm` with these arguments, made ready to call with none (as :func:`spmv_prepared`)."""
    return _prepared("cusparseSpMM", handle, op_a, op_b, alpha, mat_a, mat_b, beta, mat_c, compute_type, alg, buffer)


def _prepared(name: str, *args) -> Callable[[], None]:
    # ctypes passes an argument that is already an instance of its declared type without converting
    # it: about half a microsecond less per call of ten arguments than ints.
    function = _lib()[name]
    call = functools.partial(function, *(argtype(arg) for argtype, arg in zip(function.argtypes, args)))

    def run() -> None:
        status = call()
        if status:
            check(status, name)

    return run
