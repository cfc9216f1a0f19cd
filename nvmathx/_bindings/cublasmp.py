"""ctypes bindings of cuBLASMp 0.7 (libcublasmp): the calls nvmathx.distributed.linalg makes, with
typed errors.

Every function returns ``cublasMpStatus_t``; :func:`check` turns a nonzero status into
:class:`CublasMpError` carrying its C name. Handles, grids and descriptors are plain ints (``void*``);
an NCCL communicator is the raw ``ncclComm_t`` as an int. Constants follow cublasmp.h of 0.7 (0.8
and later renamed ``cublasMpMatmulDescriptorAttributeSet``, dropped ``cublasMpStreamSet`` and need NCCL
>= 2.29.2, so another release is refused when it loads). Where the pair cannot work (cuBLASMp 0.8 and
later with an older NCCL, whose libcublasmp does not even load), the error names both versions and
what to install (:func:`check_versions`), read from the wheel's metadata when the library will not load.

libcublasmp needs libnccl, libnvshmem_host, libcublas and libcublasLt already loaded: its RPATH
finds none of them under a ``pip install --target`` layout, so they are loaded first by nvmathx's own
search. nvmathx runs cuBLASMp's no-overlap algorithms with workspaces from a cuda.core memory
resource, which need no NVSHMEM symmetric heap: ``CUBLASMP_DISABLE_NVSHMEM=1`` is set before the
library loads, unless the variable is already set.
"""

from __future__ import annotations

import ctypes
import enum
import importlib.metadata
import os

from .._errors import CudaLibraryError, LibraryNotFoundError
from ._loader import LIBRARIES, FunctionTable, address, load_library
from ._status import status_functions
from .cublaslt import ComputeType, DataType

__all__ = [
    "CublasMpError",
    "Status",
    "GridLayout",
    "MatmulDescAttribute",
    "AlgoType",
    "Operation",
    "ComputeType",
    "DataType",
    "SUPPORTED_MINOR",
    "MINIMUM_NCCL",
    "minimum_nccl",
    "check",
    "check_versions",
    "check_nccl",
    "decode_version",
    "get_version",
    "version",
    "create",
    "destroy",
    "stream_set",
    "grid_create",
    "grid_destroy",
    "matrix_descriptor_create",
    "matrix_descriptor_destroy",
    "matmul_descriptor_create",
    "matmul_descriptor_destroy",
    "matmul_descriptor_set",
    "matmul_buffer_size",
    "matmul",
    "numroc",
]

SUPPORTED_MINOR = (0, 7)  # the (major, minor) release whose API this module binds
# What each nvidia-cublasmp-cu13 release requires (its wheel's metadata): 0.7 NCCL >= 2.28.3; 0.8, 0.9
# and 0.10 NCCL >= 2.29.2 (their libcublasmp fails to load with an older libnccl).
MINIMUM_NCCL = {(0, 7): (2, 28, 3), (0, 8): (2, 29, 2)}


def minimum_nccl(release: tuple) -> tuple:
    """The oldest NCCL cuBLASMp ``release`` (major, minor, patch) runs with."""
    return MINIMUM_NCCL[(0, 7)] if tuple(release[:2]) <= (0, 7) else MINIMUM_NCCL[(0, 8)]


class CublasMpError(CudaLibraryError):
    """A cuBLASMp call returned a nonzero ``cublasMpStatus_t``."""

    library = "cuBLASMp"
    hint = "Set CUBLASMP_LOG_LEVEL=5 (and CUBLASLT_LOG_LEVEL=5) to see cuBLASMp's own explanation"


class Status(enum.IntEnum):
    SUCCESS = 0
    NOT_INITIALIZED = 1
    ALLOCATION_FAILED = 2
    INVALID_VALUE = 3
    ARCHITECTURE_MISMATCH = 4
    EXECUTION_FAILED = 5
    INTERNAL_ERROR = 6
    NOT_SUPPORTED = 7


class GridLayout(enum.IntEnum):
    """cublasMpGridLayout_t: how ranks fill the process grid (COL_MAJOR: rank = col * nprow + row)."""

    COL_MAJOR = 0
    ROW_MAJOR = 1


class MatmulDescAttribute(enum.IntEnum):
    """cublasMpMatmulDescriptorAttribute_t (the members nvmathx sets)."""

    TRANSA = 0
    TRANSB = 1
    COMPUTE_TYPE = 2
    ALGO_TYPE = 3
    COMMUNICATION_SM_COUNT = 4
    EPILOGUE = 5
    BIAS_POINTER = 6
    BIAS_BATCH_STRIDE = 7
    BIAS_DATA_TYPE = 8


class AlgoType(enum.IntEnum):
    """cublasMpMatmulAlgoType_t."""

    DEFAULT = 0
    SPLIT_P2P = 1
    SPLIT_MULTICAST = 2
    ATOMIC_P2P = 3
    ATOMIC_MULTICAST = 4
    NO_OVERLAP = 5


class Operation(enum.IntEnum):
    """cublasOperation_t."""

    N = 0
    T = 1
    C = 2


# The C type of every attribute: cuBLASMp checks the size of what it is given.
_DESC_TYPES = {
    MatmulDescAttribute.TRANSA: ctypes.c_int32, MatmulDescAttribute.TRANSB: ctypes.c_int32,
    MatmulDescAttribute.COMPUTE_TYPE: ctypes.c_int32, MatmulDescAttribute.ALGO_TYPE: ctypes.c_int32,
    MatmulDescAttribute.COMMUNICATION_SM_COUNT: ctypes.c_int32, MatmulDescAttribute.EPILOGUE: ctypes.c_int32,
    MatmulDescAttribute.BIAS_POINTER: ctypes.c_void_p, MatmulDescAttribute.BIAS_BATCH_STRIDE: ctypes.c_int64,
    MatmulDescAttribute.BIAS_DATA_TYPE: ctypes.c_int32,
}

_p = ctypes.c_void_p
_pp = ctypes.POINTER(ctypes.c_void_p)
_i64 = ctypes.c_int64
_int = ctypes.c_int
_size = ctypes.c_size_t
_psize = ctypes.POINTER(ctypes.c_size_t)
# handle, desc, m, n, k, alpha, A, ia, ja, descA, B, ib, jb, descB, beta, C, ic, jc, descC, D, id, jd, descD
_MATMUL_ARGS = [_p, _p, _i64, _i64, _i64, _p, _p, _i64, _i64, _p, _p, _i64, _i64, _p, _p, _p, _i64, _i64, _p, _p, _i64,
                _i64, _p]
_SIGNATURES = {
    "cublasMpGetVersion": (_int, [ctypes.POINTER(_int)]),
    "cublasMpCreate": (_int, [_pp, _p]),
    "cublasMpDestroy": (_int, [_p]),
    "cublasMpStreamSet": (_int, [_p, _p]),
    "cublasMpGridCreate": (_int, [_i64, _i64, _int, _p, _pp]),
    "cublasMpGridDestroy": (_int, [_p]),
    "cublasMpMatrixDescriptorCreate": (_int, [_i64, _i64, _i64, _i64, _i64, _i64, _i64, _int, _p, _pp]),
    "cublasMpMatrixDescriptorDestroy": (_int, [_p]),
    "cublasMpMatmulDescriptorCreate": (_int, [_pp, _int]),
    "cublasMpMatmulDescriptorDestroy": (_int, [_p]),
    "cublasMpMatmulDescriptorAttributeSet": (_int, [_p, _int, _p, _size]),
    "cublasMpMatmul_bufferSize": (_int, _MATMUL_ARGS + [_psize, _psize]),
    "cublasMpMatmul": (_int, _MATMUL_ARGS + [_p, _size, _p, _size]),
    "cublasMpNumroc": (_i64, [_i64, _i64, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32]),
}


def decode_version(code: int) -> tuple:
    """(major, minor, patch) of ``cublasMpGetVersion``'s code: ``major * 10000 + minor * 100 + patch``
    from 0.8 (0.10.0 is 1000), ``major * 1000 + minor * 100 + patch`` in 0.7 (700), which read the
    same while the major is 0."""
    return code // 10000, code // 100 % 100, code % 100


def _nccl_version() -> tuple:
    buffer = ctypes.c_int(0)
    load_library("nccl").cdll.ncclGetVersion(ctypes.byref(buffer))
    code = buffer.value
    if code >= 10000:  # NCCL >= 2.9 encodes major * 10000 + minor * 100 + patch
        return code // 10000, code // 100 % 100, code % 100
    return code // 1000, code // 100 % 10, code % 100


def _text(version: tuple) -> str:
    return ".".join(map(str, version))


def check_nccl(release: tuple, nccl_version: tuple) -> None:
    """Refuse an NCCL older than cuBLASMp ``release`` needs.

    Raises
    ------
    LibraryNotFoundError
        Naming both versions and what to install: a newer NCCL, or (for cuBLASMp 0.8 and later,
        which nvmathx does not bind) the cuBLASMp 0.7 that runs with this one.
    """
    needed = minimum_nccl(release)
    if tuple(nccl_version) >= needed:
        return
    advice = f"pip install 'nvidia-nccl-cu13>={_text(needed)}'"
    if tuple(release[:2]) != SUPPORTED_MINOR:
        ours = _text(SUPPORTED_MINOR)
        advice = (f"pip install 'nvidia-cublasmp-cu13=={ours}.*' (the release nvmathx binds, which runs with NCCL "
                  f">= {_text(MINIMUM_NCCL[SUPPORTED_MINOR])})")
    raise LibraryNotFoundError("nccl", f"nvidia-nccl-cu13>={_text(needed)}", LIBRARIES["nccl"].env_var,
                               f"cuBLASMp {_text(release)} needs NCCL >= {_text(needed)}; the loaded libnccl is "
                               f"{_text(nccl_version)}: {advice}")


def check_versions(cublasmp_code: int, nccl_version: tuple) -> None:
    """Refuse an NCCL older than the loaded cuBLASMp needs (:func:`check_nccl`), then a cuBLASMp
    release other than the one bound here.

    Raises
    ------
    LibraryNotFoundError
        Naming both versions and what to install.
    """
    found = decode_version(cublasmp_code)
    text = _text(found)
    check_nccl(found, nccl_version)
    if found[:2] != SUPPORTED_MINOR:
        wanted = ".".join(map(str, SUPPORTED_MINOR))
        raise LibraryNotFoundError("cublasmp", LIBRARIES["cublasmp"].pip_package, LIBRARIES["cublasmp"].env_var,
                                   f"nvmathx binds cuBLASMp {wanted}'s API; the loaded libcublasmp is {text} "
                                   f"(cublasMpGetVersion() = {cublasmp_code}): pip install "
                                   f"'nvidia-cublasmp-cu13=={wanted}.*'")


def _installed_release() -> tuple | None:
    """The installed nvidia-cublasmp wheel's (major, minor, patch), or None (no wheel, a system copy)."""
    for distribution in ("nvidia-cublasmp-cu13", "nvidia-cublasmp-cu12"):
        try:
            return tuple(int(part) for part in importlib.metadata.version(distribution).split(".")[:3])
        except (importlib.metadata.PackageNotFoundError, ValueError):
            continue
    return None


def _prepare() -> None:
    """Load what libcublasmp links to, then libcublasmp, and check the two versions."""
    os.environ.setdefault("CUBLASMP_DISABLE_NVSHMEM", "1")
    for name in ("nccl", "nvshmem_host", "cublasLt", "cublas"):
        load_library(name)
    nccl_version = _nccl_version()
    try:
        library = load_library("cublasmp")
    except LibraryNotFoundError as error:
        # cuBLASMp 0.8+ does not load with NCCL < 2.29.2: say so, from the wheel's version, if that is why
        release = _installed_release()
        if release is not None:
            try:
                check_nccl(release, nccl_version)
            except LibraryNotFoundError as pair:
                raise pair from error
        raise
    code = ctypes.c_int(0)
    check(library.cdll.cublasMpGetVersion(ctypes.byref(code)), "cublasMpGetVersion")
    check_versions(code.value, nccl_version)


_lib = FunctionTable("cublasmp", _SIGNATURES, before_load=_prepare)


status_name, check, _call = status_functions("CUBLASMP_STATUS_", Status, CublasMpError, globals())


def get_version() -> int:
    """cublasMpGetVersion(): ``major * 1000 + minor * 100 + patch`` (700 for 0.7.0)."""
    code = ctypes.c_int(0)
    _call("cublasMpGetVersion", ctypes.byref(code))
    return code.value


def version() -> tuple:
    """The loaded libcublasmp's (major, minor, patch)."""
    return decode_version(get_version())


def create(stream: int) -> int:
    """A cuBLASMp handle on the current device, first ordered on ``stream`` (a raw handle)."""
    handle = ctypes.c_void_p()
    _call("cublasMpCreate", ctypes.byref(handle), stream)
    return address(handle)


def destroy(handle: int) -> None:
    _call("cublasMpDestroy", handle)


def stream_set(handle: int, stream: int) -> None:
    _call("cublasMpStreamSet", handle, stream)


def grid_create(nprow: int, npcol: int, layout: GridLayout, nccl_comm: int) -> int:
    """A process grid over the communicator's ranks (collective: every rank creates it)."""
    grid = ctypes.c_void_p()
    _call("cublasMpGridCreate", nprow, npcol, int(layout), nccl_comm, ctypes.byref(grid),
          detail=f"{nprow} x {npcol} grid, {GridLayout(layout).name}")
    return address(grid)


def grid_destroy(grid: int) -> None:
    """Release a grid (collective)."""
    _call("cublasMpGridDestroy", grid)


def matrix_descriptor_create(m: int, n: int, mb: int, nb: int, rsrc: int, csrc: int, lld: int, data_type: int,
                             grid: int) -> int:
    """A descriptor of a global ``m x n`` column-major matrix in ``mb x nb`` blocks over ``grid``."""
    desc = ctypes.c_void_p()
    _call("cublasMpMatrixDescriptorCreate", m, n, mb, nb, rsrc, csrc, lld, int(data_type), grid, ctypes.byref(desc),
          detail=f"{m} x {n} in {mb} x {nb} blocks, source ({rsrc}, {csrc}), lld {lld}, type {int(data_type)}")
    return address(desc)


def matrix_descriptor_destroy(desc: int) -> None:
    _call("cublasMpMatrixDescriptorDestroy", desc)


def matmul_descriptor_create(compute_type: int) -> int:
    desc = ctypes.c_void_p()
    _call("cublasMpMatmulDescriptorCreate", ctypes.byref(desc), int(compute_type))
    return address(desc)


def matmul_descriptor_destroy(desc: int) -> None:
    _call("cublasMpMatmulDescriptorDestroy", desc)


def matmul_descriptor_set(desc: int, attribute: MatmulDescAttribute, value) -> None:
    """Set one matmul descriptor attribute (the C type comes from the attribute)."""
    buffer = _DESC_TYPES[attribute](value)
    _call("cublasMpMatmulDescriptorAttributeSet", desc, int(attribute), ctypes.byref(buffer), ctypes.sizeof(buffer),
          detail=f"attribute {attribute.name}={value}")


def matmul_buffer_size(handle, desc, m, n, k, alpha, a, a_desc, b, b_desc, beta, c, c_desc, d, d_desc) -> tuple:
    """(device bytes, host bytes) of workspace ``cublasMpMatmul`` needs for this problem
    (``alpha``/``beta`` are host addresses; sub-matrices start at 1, 1)."""
    device, host = ctypes.c_size_t(0), ctypes.c_size_t(0)
    _call("cublasMpMatmul_bufferSize", handle, desc, m, n, k, alpha, a, 1, 1, a_desc, b, 1, 1, b_desc, beta, c, 1, 1,
          c_desc, d, 1, 1, d_desc, ctypes.byref(device), ctypes.byref(host))
    return device.value, host.value


def matmul(handle, desc, m, n, k, alpha, a, a_desc, b, b_desc, beta, c, c_desc, d, d_desc, device_work,
           device_bytes, host_work, host_bytes) -> None:
    """``D = alpha op(A) op(B) + beta C`` over the whole distributed matrices (stream-ordered on
    the handle's stream; collective)."""
    _call("cublasMpMatmul", handle, desc, m, n, k, alpha, a, 1, 1, a_desc, b, 1, 1, b_desc, beta, c, 1, 1, c_desc, d,
          1, 1, d_desc, device_work, device_bytes, host_work, host_bytes)


def numroc(n: int, nb: int, iproc: int, isrcproc: int, nprocs: int) -> int:
    """cublasMpNumroc: how many of ``n`` rows (or columns) in blocks of ``nb`` process ``iproc`` holds."""
    return int(_lib()["cublasMpNumroc"](n, nb, iproc, isrcproc, nprocs))
