"""ctypes bindings of cuDSS (libcudss), the sparse direct solver: the calls nvmathx.sparse makes,
with typed errors.

Every function returns ``cudssStatus_t``; :func:`check` turns a nonzero status into
:class:`CudssError` carrying its C name. Handles, configs, data objects and matrix objects are plain
ints (``void*``).

Two releases are bound, selected when the library loads (:func:`dialect_for` of the loaded
version): cuDSS 0.8 (``libcudss.so.0``, what nvmath-python 1.0 installs) and 1.0
(``libcudss.so.1``). Their C functions take the same arguments, and their configuration and data
parameters have the same values (1.0 appends new ones). What differs, from the two headers
(``cudss_data_types.h``):

- 0.8 has its own ``cudssDataType_t`` enum; 1.0 takes ``cudaDataType_t`` again and keeps the old
  name as an alias. The real, complex and integer values are ``cudaDataType_t``'s in both; the
  "unset" value is 1024 in 0.8 and 63 in 1.0, and double-double (``CUDSS_R_64F_64F``, renamed
  ``CUDSS_R_64F_MP2``) is 1026 in 0.8 and 62 in 1.0.
- transposed solves (``CUDSS_CONFIG_SOLVE_MODE``) and Bunch-Kaufman pivoting are supported only
  from 1.0 (0.8 declares both and refuses them);
- 1.0 compiles some kernels with NVRTC on first use (``cudssSetJitCacheDir``) and links to
  libnvrtc.

0.7 and older (also ``libcudss.so.0``) number the configuration parameters differently and take
no offset type in ``cudssMatrixCreateCsr``: they are refused when they load, as is a major release
after 1. libcudss links to libcublas (and 1.0 to libnvrtc); under a ``pip install --target`` layout
its RPATH finds neither, so they are loaded first by nvmathx's own search.
"""

from __future__ import annotations

import ctypes
import enum
import glob
import os
from dataclasses import dataclass
from typing import Any

from .._errors import CudaLibraryError, LibraryNotFoundError
from ._loader import LIBRARIES, FunctionTable, address, load_library
from ._status import status_functions

__all__ = [
    "CudssError",
    "Status",
    "ConfigParam",
    "DataParam",
    "Phase",
    "MatrixType",
    "MatrixView",
    "IndexBase",
    "Layout",
    "ReorderingAlg",
    "PivotType",
    "SolveMode",
    "DataType",
    "LibraryProperty",
    "Dialect",
    "SUPPORTED_RELEASES",
    "dialect_for",
    "dialect",
    "check",
    "status_name",
    "version",
    "create",
    "destroy",
    "set_stream",
    "set_jit_cache_dir",
    "THREADING_LAYER_STEM",
    "threading_layer_path",
    "set_threading_layer",
    "config_create",
    "config_destroy",
    "config_set",
    "config_get",
    "data_create",
    "data_destroy",
    "data_get",
    "matrix_create_csr",
    "matrix_create_dn",
    "matrix_set_values",
    "matrix_set_csr_pointers",
    "matrix_destroy",
    "execute",
]


class CudssError(CudaLibraryError):
    """A cuDSS call returned a nonzero ``cudssStatus_t``."""

    library = "cuDSS"
    hint = "Set CUDSS_LOG_LEVEL=5 to see cuDSS's own explanation"


class Status(enum.IntEnum):
    """cudssStatus_t (0.8 and 1.0)."""

    SUCCESS = 0
    NOT_INITIALIZED = 1
    ALLOC_FAILED = 2
    INVALID_VALUE = 3
    NOT_SUPPORTED = 4
    EXECUTION_FAILED = 5
    INTERNAL_ERROR = 6
    IR_FAILED = 7


class ConfigParam(enum.IntEnum):
    """cudssConfigParam_t (the same values in 0.8 and 1.0; 1.0 appends members after ND_UBFACTOR)."""

    REORDERING_ALG = 0
    FACTORIZATION_ALG = 1
    SOLVE_ALG = 2
    MATCHING_ALG = 3
    SOLVE_MODE = 4
    IR_N_STEPS = 5
    IR_TOL = 6
    PIVOT_TYPE = 7
    PIVOT_THRESHOLD = 8
    PIVOT_EPSILON = 9
    MAX_LU_NNZ = 10
    HYBRID_MEMORY_MODE = 11
    HYBRID_DEVICE_MEMORY_LIMIT = 12
    USE_CUDA_REGISTER_MEMORY = 13
    HOST_NTHREADS = 14
    HYBRID_EXECUTE_MODE = 15
    PIVOT_EPSILON_ALG = 16
    ND_NLEVELS = 17
    UBATCH_SIZE = 18
    UBATCH_INDEX = 19
    USE_SUPERPANELS = 20
    DEVICE_COUNT = 21
    DEVICE_INDICES = 22
    SCHUR_MODE = 23
    DETERMINISTIC_MODE = 24
    ND_UBFACTOR = 25


class DataParam(enum.IntEnum):
    """cudssDataParam_t (the members nvmathx reads; the same values in 0.8 and 1.0)."""

    INFO = 0
    LU_NNZ = 1
    NPIVOTS = 2
    INERTIA = 3
    PERM_REORDER_ROW = 4
    PERM_REORDER_COL = 5
    MEMORY_ESTIMATES = 13
    NSUPERPANELS = 17
    IR_N_STEPS = 24


class Phase(enum.IntEnum):
    """cudssPhase_t (bit flags)."""

    REORDERING = 1 << 0
    SYMBOLIC_FACTORIZATION = 1 << 1
    ANALYSIS = (1 << 0) | (1 << 1)
    FACTORIZATION = 1 << 2
    REFACTORIZATION = 1 << 3
    SOLVE = (1 << 4) | (1 << 5) | (1 << 6) | (1 << 7) | (1 << 8) | (1 << 9)


class MatrixType(enum.IntEnum):
    """cudssMatrixType_t."""

    GENERAL = 0
    SYMMETRIC = 1
    HERMITIAN = 2
    SPD = 3
    HPD = 4


class MatrixView(enum.IntEnum):
    """cudssMatrixViewType_t: which triangle of a symmetric or Hermitian matrix cuDSS reads."""

    FULL = 0
    LOWER = 1
    UPPER = 2


class IndexBase(enum.IntEnum):
    ZERO = 0
    ONE = 1


class Layout(enum.IntEnum):
    """cudssLayout_t of a dense matrix."""

    COL_MAJOR = 0
    ROW_MAJOR = 1


class ReorderingAlg(enum.IntEnum):
    """cudssReorderingAlg_t."""

    DEFAULT = 0
    BTF_COLAMD = 1
    COLAMD = 2
    AMD = 3
    NESTED_DISSECTION = 4
    NONE = 5


class PivotType(enum.IntEnum):
    """cudssPivotType_t (BUNCH_KAUFMAN is declared by 0.8 and supported from 1.0)."""

    AUTO = 0
    NONE = 1
    GLOBAL_COL = 2
    GLOBAL_ROW = 3
    DIAGONAL = 4
    LOCAL_BLOCK = 5
    BUNCH_KAUFMAN = 6


class SolveMode(enum.IntEnum):
    """cudssSolveMode_t (1.0; 0.8 accepts only NORMAL)."""

    NORMAL = 0
    TRANSPOSE = 1
    CONJUGATE_TRANSPOSE = 2


class DataType(enum.IntEnum):
    """The ``cudaDataType_t`` values cuDSS takes for values and indices (0.8's ``cudssDataType_t``
    gives these members the same values)."""

    R_32F = 0
    R_64F = 1
    C_32F = 4
    C_64F = 5
    R_32I = 10
    R_64I = 24


class LibraryProperty(enum.IntEnum):
    """libraryPropertyType (library_types.h)."""

    MAJOR_VERSION = 0
    MINOR_VERSION = 1
    PATCH_LEVEL = 2


@dataclass(frozen=True)
class Dialect:
    """What differs between the bound cuDSS releases, for the loaded one."""

    release: tuple  # (major, minor, patch) of the loaded library
    soname: str
    data_type_unset: int
    data_type_r_64f_64f: int
    transposed_solves: bool
    bunch_kaufman: bool
    jit_kernels: bool  # compiles kernels with NVRTC on first use (warm up before timing)


SUPPORTED_RELEASES = ((0, 8), (1,))  # 0.8.x, and every 1.x (1.0's header appends, never renumbers)


def dialect_for(release: tuple) -> Dialect:
    """The :class:`Dialect` of cuDSS ``release`` ``(major, minor, patch)``.

    Raises
    ------
    LibraryNotFoundError
        For a release other than 0.8.x or 1.x, naming it and what to install.
    """
    major, minor = int(release[0]), int(release[1])
    text = ".".join(str(part) for part in release)
    if (major, minor) == (0, 8):
        return Dialect(tuple(release), "libcudss.so.0", 1024, 1026, False, False, False)
    if major == 1:
        return Dialect(tuple(release), "libcudss.so.1", 63, 62, True, True, True)
    spec = LIBRARIES["cudss"]
    raise LibraryNotFoundError("cudss", spec.pip_package, spec.env_var,
                               f"nvmathx binds cuDSS 0.8 and 1.x; the loaded libcudss is {text}")


_p = ctypes.c_void_p
_pp = ctypes.POINTER(ctypes.c_void_p)
_int = ctypes.c_int
_i64 = ctypes.c_int64
_size = ctypes.c_size_t
_psize = ctypes.POINTER(ctypes.c_size_t)
# cudssMatrixCreateCsr: matrix, nrows, ncols, nnz, rowStart, rowEnd, colIndices, values, offsetType, indexType,
# valueType, mtype, mview, indexBase (0.8 and 1.0; enums are C ints)
_SIGNATURES = {
    "cudssGetProperty": (_int, [_int, ctypes.POINTER(_int)]),
    "cudssCreate": (_int, [_pp]),
    "cudssDestroy": (_int, [_p]),
    "cudssSetStream": (_int, [_p, _p]),
    "cudssSetJitCacheDir": (_int, [_p, ctypes.c_char_p], False),  # 1.0 only
    "cudssSetThreadingLayer": (_int, [_p, ctypes.c_char_p]),
    "cudssConfigCreate": (_int, [_pp]),
    "cudssConfigDestroy": (_int, [_p]),
    "cudssConfigSet": (_int, [_p, _int, _p, _size]),
    "cudssConfigGet": (_int, [_p, _int, _p, _size, _psize]),
    "cudssDataCreate": (_int, [_p, _pp]),
    "cudssDataDestroy": (_int, [_p, _p]),
    "cudssDataGet": (_int, [_p, _p, _int, _p, _size, _psize]),
    "cudssMatrixCreateCsr": (_int, [_pp, _i64, _i64, _i64, _p, _p, _p, _p, _int, _int, _int, _int, _int, _int]),
    "cudssMatrixCreateDn": (_int, [_pp, _i64, _i64, _i64, _p, _int, _int]),
    "cudssMatrixSetValues": (_int, [_p, _p]),
    "cudssMatrixSetCsrPointers": (_int, [_p, _p, _p, _p, _p]),
    "cudssMatrixDestroy": (_int, [_p]),
    "cudssExecute": (_int, [_p, _int, _p, _p, _p, _p, _p]),
}

# The C type of every configuration parameter nvmathx sets: cuDSS checks the size it is given.
_CONFIG_TYPES: dict = {
    ConfigParam.REORDERING_ALG: ctypes.c_int32, ConfigParam.FACTORIZATION_ALG: ctypes.c_int32,
    ConfigParam.SOLVE_ALG: ctypes.c_int32, ConfigParam.MATCHING_ALG: ctypes.c_int32,
    ConfigParam.SOLVE_MODE: ctypes.c_int32, ConfigParam.IR_N_STEPS: ctypes.c_int32,
    ConfigParam.IR_TOL: ctypes.c_double, ConfigParam.PIVOT_TYPE: ctypes.c_int32,
    ConfigParam.PIVOT_THRESHOLD: ctypes.c_double, ConfigParam.PIVOT_EPSILON: ctypes.c_double,
    ConfigParam.MAX_LU_NNZ: ctypes.c_int64, ConfigParam.HOST_NTHREADS: ctypes.c_int32,
    ConfigParam.DETERMINISTIC_MODE: ctypes.c_int32,
}
# Scalar data parameters read on the host (INERTIA is two of its type).
_DATA_TYPES: dict = {
    DataParam.INFO: ctypes.c_int32, DataParam.LU_NNZ: ctypes.c_int64, DataParam.NSUPERPANELS: ctypes.c_int32,
    DataParam.IR_N_STEPS: ctypes.c_int32,
}

_state: dict = {}


def _property(cdll, which: LibraryProperty) -> int:
    value = ctypes.c_int(0)
    status = cdll.cudssGetProperty(int(which), ctypes.byref(value))
    check(status, "cudssGetProperty")
    return value.value


def _prepare() -> None:
    """Load what libcudss links to, then libcudss, and pick the dialect of the loaded release."""
    for name in ("cublasLt", "cublas"):
        load_library(name)
    try:
        load_library("nvrtc")  # libcudss.so.1 links to it; 0.8 does not need it
    except LibraryNotFoundError:
        pass
    cdll = load_library("cudss").cdll
    cdll.cudssGetProperty.restype = ctypes.c_int
    cdll.cudssGetProperty.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_int)]
    release = tuple(_property(cdll, which) for which in LibraryProperty)
    _state["dialect"] = dialect_for(release)


_lib = FunctionTable("cudss", _SIGNATURES, before_load=_prepare)


status_name, check, _call = status_functions("CUDSS_STATUS_", Status, CudssError, globals())


def dialect() -> Dialect:
    """The :class:`Dialect` of the loaded libcudss (loading it on first use)."""
    _lib()
    return _state["dialect"]


def version() -> tuple:
    """The loaded libcudss's (major, minor, patch)."""
    return dialect().release


def create() -> int:
    """A cuDSS handle on the current device."""
    handle = ctypes.c_void_p()
    _call("cudssCreate", ctypes.byref(handle))
    return address(handle)


def destroy(handle: int) -> None:
    _call("cudssDestroy", handle)


def set_stream(handle: int, stream: int) -> None:
    _call("cudssSetStream", handle, stream)


def set_jit_cache_dir(handle: int, folder: str) -> bool:
    """Point cuDSS 1.x's cache of runtime-compiled kernels at ``folder``; False where the loaded
    release compiles nothing at run time (0.8)."""
    function = _lib().get("cudssSetJitCacheDir")
    if function is None:
        return False
    check(function(handle, folder.encode()), "cudssSetJitCacheDir", folder)
    return True


# The threading layer libcudss ships (GNU OpenMP) for its multi-threaded host work (the reordering)
THREADING_LAYER_STEM = "libcudss_mtlayer_gomp.so"


def threading_layer_path() -> str | None:
    """The threading layer beside the loaded libcudss, or None where it has none (or libcudss was
    found without a path)."""
    folder = os.path.dirname(load_library("cudss").path or "")
    if not folder:
        return None
    candidates = sorted(glob.glob(os.path.join(folder, THREADING_LAYER_STEM + "*")))
    return candidates[-1] if candidates else None


def set_threading_layer(handle: int, library: str | None) -> None:
    """``cudssSetThreadingLayer``: cuDSS's multi-threaded mode through the threading layer
    ``library`` (None: the one named by the ``CUDSS_THREADING_LIB`` environment variable)."""
    _call("cudssSetThreadingLayer", handle, None if library is None else library.encode(), detail=str(library))


def config_create() -> int:
    config = ctypes.c_void_p()
    _call("cudssConfigCreate", ctypes.byref(config))
    return address(config)


def config_destroy(config: int) -> None:
    _call("cudssConfigDestroy", config)


def config_set(config: int, param: ConfigParam, value) -> None:
    """Set one configuration parameter (the C type comes from the parameter)."""
    buffer = _CONFIG_TYPES[param](value)
    _call("cudssConfigSet", config, int(param), ctypes.byref(buffer), ctypes.sizeof(buffer),
          detail=f"{param.name}={value}")


def config_get(config: int, param: ConfigParam):
    """Read one configuration parameter."""
    buffer = _CONFIG_TYPES[param]()
    written = ctypes.c_size_t(0)
    _call("cudssConfigGet", config, int(param), ctypes.byref(buffer), ctypes.sizeof(buffer), ctypes.byref(written),
          detail=param.name)
    return buffer.value


def data_create(handle: int) -> int:
    data = ctypes.c_void_p()
    _call("cudssDataCreate", handle, ctypes.byref(data))
    return address(data)


def data_destroy(handle: int, data: int) -> None:
    _call("cudssDataDestroy", handle, data)


def data_get(handle: int, data: int, param: DataParam, index_bytes: int = 4):
    """Read a data parameter on the host: an int for INFO, LU_NNZ, NSUPERPANELS and IR_N_STEPS,
    ``(positive, negative)`` for INERTIA and an int for NPIVOTS (both of the matrix's index type,
    ``index_bytes`` wide), and for MEMORY_ESTIMATES the 16 int64 of cuDSS's estimates (device
    permanent, device peak, host permanent, host peak, hybrid minimum, hybrid maximum, reserved)."""
    index_type = ctypes.c_int32 if index_bytes == 4 else ctypes.c_int64
    buffer: Any
    if param in _DATA_TYPES:
        buffer = _DATA_TYPES[param]()
    elif param is DataParam.INERTIA:
        buffer = (index_type * 2)()
    elif param is DataParam.NPIVOTS:
        buffer = index_type()
    elif param is DataParam.MEMORY_ESTIMATES:
        buffer = (ctypes.c_int64 * 16)()
    else:
        raise ValueError(f"param: {param!r} is not read on the host by nvmathx")
    written = ctypes.c_size_t(0)
    _call("cudssDataGet", handle, data, int(param), ctypes.byref(buffer), ctypes.sizeof(buffer), ctypes.byref(written),
          detail=param.name)
    return buffer.value if hasattr(buffer, "value") else tuple(buffer)


def matrix_create_csr(rows: int, columns: int, nnz: int, row_offsets: int, column_indices: int, values: int,
                      index_type: DataType, value_type: DataType, matrix_type: MatrixType, view: MatrixView) -> int:
    """A CSR matrix object over device arrays (zero-based; offsets and indices of ``index_type``)."""
    matrix = ctypes.c_void_p()
    _call("cudssMatrixCreateCsr", ctypes.byref(matrix), rows, columns, nnz, row_offsets, None, column_indices, values,
          int(index_type), int(index_type), int(value_type), int(matrix_type), int(view), int(IndexBase.ZERO),
          detail=f"{rows} x {columns}, nnz {nnz}, {DataType(value_type).name} values, "
                 f"{DataType(index_type).name} indices, {MatrixType(matrix_type).name} {MatrixView(view).name}")
    return address(matrix)


def matrix_create_dn(rows: int, columns: int, ld: int, values: int, value_type: DataType,
                     layout: Layout = Layout.COL_MAJOR) -> int:
    """A dense matrix object (right-hand sides or solutions) over a device array."""
    matrix = ctypes.c_void_p()
    _call("cudssMatrixCreateDn", ctypes.byref(matrix), rows, columns, ld, values, int(value_type), int(layout),
          detail=f"{rows} x {columns}, ld {ld}, {DataType(value_type).name}, {Layout(layout).name}")
    return address(matrix)


def matrix_set_values(matrix: int, values: int) -> None:
    _call("cudssMatrixSetValues", matrix, values)


def matrix_set_csr_pointers(matrix: int, row_offsets: int, column_indices: int, values: int) -> None:
    _call("cudssMatrixSetCsrPointers", matrix, row_offsets, None, column_indices, values)


def matrix_destroy(matrix: int) -> None:
    _call("cudssMatrixDestroy", matrix)


def execute(handle: int, phase: Phase, config: int, data: int, matrix: int, solution: int, rhs: int) -> None:
    """One ``cudssExecute`` phase, ordered on the handle's stream."""
    _call("cudssExecute", handle, int(phase), config, data, matrix, solution, rhs, detail=Phase(phase).name)
