"""nvmathx: GPU math for Python on cuBLASLt, cuFFT and libmathdx.

Subpackages
-----------
linalg
    ``Matmul`` (stateful) and ``matmul`` (function) on cuBLASLt, with fused epilogs.
fft
    ``FFT`` (stateful) and the scipy.fft functions on cuFFT.
sparse
    Sparse @ dense (``Matmul``, ``matmul``) on cuSPARSE and the sparse direct solver on cuDSS, for
    CSR matrices of scipy.sparse, cupyx.scipy.sparse and torch.
device_api
    FFT and GEMM functions for ``numba.cuda.jit`` kernels, generated with libmathdx.
distributed
    FFT, reshape and matmul of arrays spread over many GPUs and processes (NCCL, cuBLASMp).

The code cache
--------------
Generated device code (``device_api`` functions, compiled ``fft`` callbacks and scale kernels) and
linked kernel images are cached on disk, in one folder for the whole library:
:func:`cache_dir`, :func:`set_cache_dir`, :func:`cache_info` (a :class:`CacheInfo`) and
:func:`clear_cache` manage it. They are the functions of the same names in ``nvmathx.device_api``.
The plan caches of the function forms are another thing: in memory, one per area
(``nvmathx.linalg.plan_cache``, ``nvmathx.fft.plan_cache``), each with its own ``clear()``.

``import nvmathx`` loads no CUDA library and imports no optional array library; subpackages load on
first attribute access and C libraries on first use.
"""

from __future__ import annotations

import importlib

from ._core.errors import (
    CommunicationError,
    CudaLibraryError,
    DeviceUnavailableError,
    InvalidStateError,
    LibraryNotFoundError,
    NvmathxError,
    OperandError,
    OptionsError,
    SingularMatrixError,
    UnsupportedLayoutError,
    UnsupportedOperandError,
)
from ._core.execution import ExecutionCPU, ExecutionCUDA
from ._version import __version__

_SUBPACKAGES = ("linalg", "fft", "sparse", "device_api", "distributed", "typing", "autotune_cache")
# The on-disk code cache serves every area; its functions load with the first use.
_CODE_CACHE = ("CacheInfo", "cache_dir", "cache_info", "clear_cache", "set_cache_dir")

__all__ = [
    "__version__",
    "ExecutionCUDA",
    "ExecutionCPU",
    "NvmathxError",
    "LibraryNotFoundError",
    "CudaLibraryError",
    "OperandError",
    "UnsupportedOperandError",
    "UnsupportedLayoutError",
    "OptionsError",
    "InvalidStateError",
    "DeviceUnavailableError",
    "SingularMatrixError",
    "CommunicationError",
    *_CODE_CACHE,
    *_SUBPACKAGES,
]


def __getattr__(name):
    if name in _SUBPACKAGES:
        module = importlib.import_module(f"{__name__}.{name}")
        globals()[name] = module
        return module
    if name in _CODE_CACHE:
        value = getattr(importlib.import_module(f"{__name__}._codegen.cache"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_SUBPACKAGES) | set(_CODE_CACHE))
