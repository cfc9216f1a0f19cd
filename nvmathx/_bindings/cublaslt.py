"""ctypes bindings of cuBLASLt (libcublasLt): the calls nvmathx.linalg makes, with typed errors.

Every function returns ``cublasStatus_t``; :func:`check` turns a nonzero status into
:class:`CublasLtError` carrying its C name. Handles and descriptors are plain ints (``void*``).
Constants follow cublasLt.h (CUDA 12 and 13 share them).
"""

from __future__ import annotations

import ctypes
import enum

from .._errors import CudaLibraryError
from ._loader import FunctionTable, address, load_library
from ._status import status_functions

__all__ = [
    "CublasLtError",
    "Status",
    "ComputeType",
    "DataType",
    "Operation",
    "Epilogue",
    "MatmulDescAttribute",
    "MatrixLayoutAttribute",
    "PreferenceAttribute",
    "HeuristicResult",
    "HEURISTIC_RESULT_SIZE",
    "ALGO_SIZE",
    "check",
    "get_version",
    "create",
    "destroy",
    "matmul_desc_create",
    "matmul_desc_destroy",
    "matmul_desc_set",
    "matrix_layout_create",
    "matrix_layout_destroy",
    "matrix_layout_set",
    "preference_create",
    "preference_destroy",
    "preference_set",
    "algo_get_heuristic",
    "algo_check",
    "algo_custom_option_max",
    "algo_with_custom_option",
    "matmul",
    "matmul_function",
]


class CublasLtError(CudaLibraryError):
    """A cuBLASLt call returned a nonzero ``cublasStatus_t``."""

    library = "cuBLASLt"
    hint = "Set CUBLASLT_LOG_LEVEL=5 to see cuBLASLt's own explanation"


class Status(enum.IntEnum):
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


class ComputeType(enum.IntEnum):
    """cublasComputeType_t."""

    COMPUTE_16F = 64
    COMPUTE_16F_PEDANTIC = 65
    COMPUTE_32F = 68
    COMPUTE_32F_PEDANTIC = 69
    COMPUTE_64F = 70
    COMPUTE_64F_PEDANTIC = 71
    COMPUTE_32I = 72
    COMPUTE_32F_FAST_16F = 74
    COMPUTE_32F_FAST_16BF = 75
    COMPUTE_32F_FAST_TF32 = 77


class DataType(enum.IntEnum):
    """cudaDataType_t."""

    R_32F = 0
    R_64F = 1
    R_16F = 2
    R_8I = 3
    C_32F = 4
    C_64F = 5
    C_16F = 6
    R_32I = 10
    R_16BF = 14
    C_16BF = 15
    R_8F_E4M3 = 28
    R_8F_E5M2 = 29


DTYPE_NAMES = {
    "float32": DataType.R_32F, "float64": DataType.R_64F, "float16": DataType.R_16F, "bfloat16": DataType.R_16BF,
    "complex64": DataType.C_32F, "complex128": DataType.C_64F, "float8_e4m3fn": DataType.R_8F_E4M3,
    "float8_e5m2": DataType.R_8F_E5M2, "int8": DataType.R_8I, "int32": DataType.R_32I,
}


class Operation(enum.IntEnum):
    N = 0
    T = 1
    C = 2


class Epilogue(enum.IntEnum):
    DEFAULT = 1
    RELU = 2
    RELU_AUX = 130
    BIAS = 4
    RELU_BIAS = 6
    RELU_AUX_BIAS = 134
    DRELU = 136
    DRELU_BGRAD = 152
    GELU = 32
    GELU_AUX = 160
    GELU_BIAS = 36
    GELU_AUX_BIAS = 164
    DGELU = 192
    DGELU_BGRAD = 208
    BGRADA = 256
    BGRADB = 512


class MatmulDescAttribute(enum.IntEnum):
    COMPUTE_TYPE = 0
    SCALE_TYPE = 1
    POINTER_MODE = 2
    TRANSA = 3
    TRANSB = 4
    TRANSC = 5
    FILL_MODE = 6
    EPILOGUE = 7
    BIAS_POINTER = 8
    BIAS_BATCH_STRIDE = 10
    EPILOGUE_AUX_POINTER = 11
    EPILOGUE_AUX_LD = 12
    EPILOGUE_AUX_BATCH_STRIDE = 13
    ALPHA_VECTOR_BATCH_STRIDE = 14
    SM_COUNT_TARGET = 15
    A_SCALE_POINTER = 17
    B_SCALE_POINTER = 18
    C_SCALE_POINTER = 19
    D_SCALE_POINTER = 20
    AMAX_D_POINTER = 21
    EPILOGUE_AUX_DATA_TYPE = 22
    EPILOGUE_AUX_SCALE_POINTER = 23
    EPILOGUE_AUX_AMAX_POINTER = 24
    FAST_ACCUM = 25
    BIAS_DATA_TYPE = 26


class MatrixLayoutAttribute(enum.IntEnum):
    TYPE = 0
    ORDER = 1
    ROWS = 2
    COLS = 3
    LD = 4
    BATCH_COUNT = 5
    STRIDED_BATCH_OFFSET = 6


class PreferenceAttribute(enum.IntEnum):
    SEARCH_MODE = 0
    MAX_WORKSPACE_BYTES = 1
    REDUCTION_SCHEME_MASK = 3
    MIN_ALIGNMENT_A_BYTES = 5
    MIN_ALIGNMENT_B_BYTES = 6
    MIN_ALIGNMENT_C_BYTES = 7
    MIN_ALIGNMENT_D_BYTES = 8
    MAX_WAVES_COUNT = 9
    IMPL_MASK = 12


# The C type of every attribute: cuBLASLt checks the size of what it is given.
_DESC_TYPES = {
    MatmulDescAttribute.COMPUTE_TYPE: ctypes.c_int32, MatmulDescAttribute.SCALE_TYPE: ctypes.c_int32,
    MatmulDescAttribute.POINTER_MODE: ctypes.c_int32, MatmulDescAttribute.TRANSA: ctypes.c_int32,
    MatmulDescAttribute.TRANSB: ctypes.c_int32, MatmulDescAttribute.TRANSC: ctypes.c_int32,
    MatmulDescAttribute.FILL_MODE: ctypes.c_int32, MatmulDescAttribute.EPILOGUE: ctypes.c_uint32,
    MatmulDescAttribute.BIAS_POINTER: ctypes.c_void_p, MatmulDescAttribute.BIAS_BATCH_STRIDE: ctypes.c_int64,
    MatmulDescAttribute.EPILOGUE_AUX_POINTER: ctypes.c_void_p, MatmulDescAttribute.EPILOGUE_AUX_LD: ctypes.c_int64,
    MatmulDescAttribute.EPILOGUE_AUX_BATCH_STRIDE: ctypes.c_int64,
    MatmulDescAttribute.ALPHA_VECTOR_BATCH_STRIDE: ctypes.c_int64,
    MatmulDescAttribute.SM_COUNT_TARGET: ctypes.c_int32, MatmulDescAttribute.A_SCALE_POINTER: ctypes.c_void_p,
    MatmulDescAttribute.B_SCALE_POINTER: ctypes.c_void_p, MatmulDescAttribute.C_SCALE_POINTER: ctypes.c_void_p,
    MatmulDescAttribute.D_SCALE_POINTER: ctypes.c_void_p, MatmulDescAttribute.AMAX_D_POINTER: ctypes.c_void_p,
    MatmulDescAttribute.EPILOGUE_AUX_DATA_TYPE: ctypes.c_int32,
    MatmulDescAttribute.EPILOGUE_AUX_SCALE_POINTER: ctypes.c_void_p,
    MatmulDescAttribute.EPILOGUE_AUX_AMAX_POINTER: ctypes.c_void_p, MatmulDescAttribute.FAST_ACCUM: ctypes.c_int8,
    MatmulDescAttribute.BIAS_DATA_TYPE: ctypes.c_int32,
}
_LAYOUT_TYPES = {
    MatrixLayoutAttribute.TYPE: ctypes.c_uint32, MatrixLayoutAttribute.ORDER: ctypes.c_int32,
    MatrixLayoutAttribute.ROWS: ctypes.c_uint64, MatrixLayoutAttribute.COLS: ctypes.c_uint64,
    MatrixLayoutAttribute.LD: ctypes.c_int64, MatrixLayoutAttribute.BATCH_COUNT: ctypes.c_int32,
    MatrixLayoutAttribute.STRIDED_BATCH_OFFSET: ctypes.c_int64,
}
_PREFERENCE_TYPES = {
    PreferenceAttribute.SEARCH_MODE: ctypes.c_uint32, PreferenceAttribute.MAX_WORKSPACE_BYTES: ctypes.c_uint64,
    PreferenceAttribute.REDUCTION_SCHEME_MASK: ctypes.c_uint32,
    PreferenceAttribute.MIN_ALIGNMENT_A_BYTES: ctypes.c_uint32,
    PreferenceAttribute.MIN_ALIGNMENT_B_BYTES: ctypes.c_uint32,
    PreferenceAttribute.MIN_ALIGNMENT_C_BYTES: ctypes.c_uint32,
    PreferenceAttribute.MIN_ALIGNMENT_D_BYTES: ctypes.c_uint32,
    PreferenceAttribute.MAX_WAVES_COUNT: ctypes.c_float, PreferenceAttribute.IMPL_MASK: ctypes.c_uint64,
}

ALGO_SIZE = 64  # cublasLtMatmulAlgo_t: uint64_t data[8]


class HeuristicResult(ctypes.Structure):
    """cublasLtMatmulHeuristicResult_t (96 bytes)."""

    _fields_ = [
        ("algo", ctypes.c_uint64 * 8),
        ("workspaceSize", ctypes.c_size_t),
        ("state", ctypes.c_int),
        ("wavesCount", ctypes.c_float),
        ("reserved", ctypes.c_int * 4),
    ]


HEURISTIC_RESULT_SIZE = ctypes.sizeof(HeuristicResult)

_p = ctypes.c_void_p
_pp = ctypes.POINTER(ctypes.c_void_p)
_int = ctypes.c_int
_SIGNATURES = {
    "cublasLtGetVersion": (ctypes.c_size_t, []),
    "cublasLtGetStatusName": (ctypes.c_char_p, [_int]),
    "cublasLtCreate": (_int, [_pp]),
    "cublasLtDestroy": (_int, [_p]),
    "cublasLtMatmulDescCreate": (_int, [_pp, _int, _int]),
    "cublasLtMatmulDescDestroy": (_int, [_p]),
    "cublasLtMatmulDescSetAttribute": (_int, [_p, _int, _p, ctypes.c_size_t]),
    "cublasLtMatrixLayoutCreate": (_int, [_pp, _int, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_int64]),
    "cublasLtMatrixLayoutDestroy": (_int, [_p]),
    "cublasLtMatrixLayoutSetAttribute": (_int, [_p, _int, _p, ctypes.c_size_t]),
    "cublasLtMatmulPreferenceCreate": (_int, [_pp]),
    "cublasLtMatmulPreferenceDestroy": (_int, [_p]),
    "cublasLtMatmulPreferenceSetAttribute": (_int, [_p, _int, _p, ctypes.c_size_t]),
    "cublasLtMatmulAlgoGetHeuristic": (_int, [_p, _p, _p, _p, _p, _p, _p, _int, _p, ctypes.POINTER(_int)]),
    "cublasLtMatmulAlgoCheck": (_int, [_p, _p, _p, _p, _p, _p, _p, _p]),
    "cublasLtMatmulAlgoCapGetAttribute": (_int, [_p, _int, _p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t)]),
    "cublasLtMatmulAlgoConfigSetAttribute": (_int, [_p, _int, _p, ctypes.c_size_t]),
    "cublasLtMatmulAlgoConfigGetAttribute": (_int, [_p, _int, _p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t)]),
    # handle, desc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, algo, workspace, size, stream
    "cublasLtMatmul": (_int, [_p, _p, _p, _p, _p, _p, _p, _p, _p, _p, _p, _p, _p, _p, ctypes.c_size_t, _p]),
}

_lib = FunctionTable("cublasLt", _SIGNATURES)


status_name, check, _call = status_functions("CUBLAS_STATUS_", Status, CublasLtError, globals(),
                                             library_name="cublasLtGetStatusName")


def get_version() -> int:
    """cublasLtGetVersion(): e.g. 130100 for cuBLASLt 13.1.0."""
    return int(_lib()["cublasLtGetVersion"]())


def create() -> int:
    """A new cuBLASLt handle for the current device."""
    handle = ctypes.c_void_p()
    _call("cublasLtCreate", ctypes.byref(handle))
    return address(handle)


def destroy(handle: int) -> None:
    _call("cublasLtDestroy", handle)


def matmul_desc_create(compute_type: int, scale_type: int) -> int:
    desc = ctypes.c_void_p()
    _call("cublasLtMatmulDescCreate", ctypes.byref(desc), int(compute_type), int(scale_type))
    return address(desc)


def matmul_desc_destroy(desc: int) -> None:
    _call("cublasLtMatmulDescDestroy", desc)


def _set(function: str, table: dict, obj: int, attribute, value) -> None:
    buffer = table[attribute](value)
    _call(function, obj, int(attribute), ctypes.byref(buffer), ctypes.sizeof(buffer),
          detail=f"attribute {attribute.name}={value}")


def matmul_desc_set(desc: int, attribute: MatmulDescAttribute, value) -> None:
    """Set one matmul descriptor attribute (the C type comes from the attribute)."""
    _set("cublasLtMatmulDescSetAttribute", _DESC_TYPES, desc, attribute, value)


def matrix_layout_create(data_type: int, rows: int, cols: int, ld: int) -> int:
    layout = ctypes.c_void_p()
    _call("cublasLtMatrixLayoutCreate", ctypes.byref(layout), int(data_type), rows, cols, ld,
          detail=f"type {data_type}, {rows} x {cols}, ld {ld}")
    return address(layout)


def matrix_layout_destroy(layout: int) -> None:
    _call("cublasLtMatrixLayoutDestroy", layout)


def matrix_layout_set(layout: int, attribute: MatrixLayoutAttribute, value) -> None:
    _set("cublasLtMatrixLayoutSetAttribute", _LAYOUT_TYPES, layout, attribute, value)


def preference_create() -> int:
    preference = ctypes.c_void_p()
    _call("cublasLtMatmulPreferenceCreate", ctypes.byref(preference))
    return address(preference)


def preference_destroy(preference: int) -> None:
    _call("cublasLtMatmulPreferenceDestroy", preference)


def preference_set(preference: int, attribute: PreferenceAttribute, value) -> None:
    _set("cublasLtMatmulPreferenceSetAttribute", _PREFERENCE_TYPES, preference, attribute, value)


def algo_get_heuristic(handle, desc, a, b, c, d, preference, requested: int) -> list:
    """Up to ``requested`` HeuristicResult structures (only those whose state is SUCCESS)."""
    results = (HeuristicResult * requested)()
    returned = ctypes.c_int(0)
    _call("cublasLtMatmulAlgoGetHeuristic", handle, desc, a, b, c, d, preference, requested, results,
          ctypes.byref(returned))
    return [results[i] for i in range(returned.value) if results[i].state == 0]


def _algo_buffer(algo: bytes):
    """A cublasLtMatmulAlgo_t in host memory holding a copy of ``algo``."""
    return ctypes.create_string_buffer(bytes(algo), ALGO_SIZE)


def algo_check(handle, desc, a, b, c, d, algo: bytes) -> HeuristicResult:
    """Check that an algorithm runs this problem; the result carries its workspace size."""
    buffer = _algo_buffer(algo)
    result = HeuristicResult()
    _call("cublasLtMatmulAlgoCheck", handle, desc, a, b, c, d, buffer, ctypes.byref(result))
    return result


# cublasLtMatmulAlgoCapAttributes_t / cublasLtMatmulAlgoConfigAttributes_t members used here
_CAP_CUSTOM_OPTION_MAX = 7  # int32_t: custom options run from 0 to this, inclusive
_CONFIG_CUSTOM_OPTION = 5  # uint32_t


# cublasLtMatmulAlgoConfigAttributes_t, in order from 0: ID (int32), TILE_ID, SPLITK_NUM, REDUCTION_SCHEME,
# CTA_SWIZZLING, CUSTOM_OPTION, STAGES_ID (uint32), INNER_SHAPE_ID, CLUSTER_SHAPE_ID (uint16)
ALGO_CONFIG_NAMES = ("id", "tile", "splitk", "reduction", "swizzle", "custom_option", "stages", "inner_shape",
                     "cluster_shape")
_CONFIG_TYPES = (ctypes.c_int32,) + (ctypes.c_uint32,) * 6 + (ctypes.c_uint16,) * 2


def algo_config(algo: bytes) -> tuple:
    """The configuration of an algorithm (:data:`ALGO_CONFIG_NAMES`, read with
    cublasLtMatmulAlgoConfigGetAttribute): what makes two algorithms the same kernel, whatever
    else the opaque bytes hold. An attribute this cuBLASLt does not know reads as -1."""
    buffer = _algo_buffer(algo)
    config = []
    for attribute, ctype in enumerate(_CONFIG_TYPES):
        value, written = ctype(0), ctypes.c_size_t(0)
        status = _lib()["cublasLtMatmulAlgoConfigGetAttribute"](buffer, attribute, ctypes.byref(value),
                                                                 ctypes.sizeof(value), ctypes.byref(written))
        config.append(int(value.value) if status == 0 else -1)
    return tuple(config)


def algo_custom_option_max(algo: bytes) -> int:
    """CUBLASLT_ALGO_CAP_CUSTOM_OPTION_MAX of an algorithm: it accepts custom options 0 to this."""
    buffer = _algo_buffer(algo)
    value, written = ctypes.c_int32(0), ctypes.c_size_t(0)
    _call("cublasLtMatmulAlgoCapGetAttribute", buffer, _CAP_CUSTOM_OPTION_MAX, ctypes.byref(value),
          ctypes.sizeof(value), ctypes.byref(written))
    return int(value.value)


def algo_with_custom_option(algo: bytes, option: int) -> bytes:
    """A copy of an algorithm with CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION set to ``option``."""
    buffer = _algo_buffer(algo)
    value = ctypes.c_uint32(option)
    _call("cublasLtMatmulAlgoConfigSetAttribute", buffer, _CONFIG_CUSTOM_OPTION, ctypes.byref(value),
          ctypes.sizeof(value), detail=f"custom option {option}")
    return buffer.raw[:ALGO_SIZE]


def matmul(handle, desc, alpha, a, a_desc, b, b_desc, beta, c, c_desc, d, d_desc, algo, workspace, workspace_size,
           stream) -> None:
    """cublasLtMatmul with plain ints for pointers (``alpha``/``beta``/``algo`` are host addresses)."""
    _call("cublasLtMatmul", handle, desc, alpha, a, a_desc, b, b_desc, beta, c, c_desc, d, d_desc, algo, workspace,
          workspace_size, stream)


def matmul_function():
    """cublasLtMatmul without argument conversion, for callers that pass ctypes objects only
    (``c_void_p`` pointers, ``c_size_t`` workspace size) prepared once, and check the returned
    status themselves with :func:`check`. Skipping ctypes' per-argument conversion saves about
    half a microsecond per call."""
    _lib()
    function = load_library("cublasLt").cdll["cublasLtMatmul"]  # a new function object, not the shared one
    function.restype = ctypes.c_int
    return function
