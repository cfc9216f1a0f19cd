"""nvmathx: GPU math for Python on cuBLASLt, cuFFT and libmathdx.

Subpackages
-----------
linalg
    ``Matmul`` (stateful) and ``matmul`` (function) on cuBLASLt, with fused epilogs.
fft
    ``FFT`` (stateful) and the scipy.fft functions on cuFFT.
device_api
    FFT and GEMM functions for ``numba.cuda.jit`` kernels, generated with libmathdx.
distributed
    FFT, reshape and matmul of arrays spread over many GPUs and processes (NCCL, cuBLASMp).

``import nvmathx`` loads no CUDA library and imports no optional array library; subpackages load on
first attribute access and C libraries on first use.
"""

from __future__ import annotations

import importlib

from ._core.errors import (
    CudaLibraryError,
    DeviceUnavailableError,
    InvalidStateError,
    LibraryNotFoundError,
    NvmathxError,
    OperandError,
    OptionsError,
    UnsupportedLayoutError,
    UnsupportedOperandError,
)
from ._core.execution import ExecutionCPU, ExecutionCUDA
from ._version import __version__

_SUBPACKAGES = ("linalg", "fft", "device_api", "distributed", "typing")

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
    *_SUBPACKAGES,
]


def __getattr__(name):
    if name in _SUBPACKAGES:
        module = importlib.import_module(f"{__name__}.{name}")
        globals()[name] = module
        return module
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_SUBPACKAGES))
