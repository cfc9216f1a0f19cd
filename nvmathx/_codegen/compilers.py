"""The two Numba compilers that kernels (and fft's Python callbacks) are compiled by.

numba-cuda-mlir (``from numba_cuda_mlir import cuda``) is the one NVIDIA recommends; numba-cuda
(``from numba import cuda``) is in maintenance mode. This module finds them and says which one a
module belongs to, importing neither.
"""

from __future__ import annotations

import functools
import importlib.metadata
from typing import Any

NUMBA_CUDA_MLIR = "numba-cuda-mlir"
NUMBA_CUDA = "numba-cuda"
COMPILERS = (NUMBA_CUDA_MLIR, NUMBA_CUDA)

_PACKAGES = {NUMBA_CUDA_MLIR: "numba_cuda_mlir", NUMBA_CUDA: "numba"}


@functools.cache
def version(compiler: str) -> str | None:
    """The installed version of ``compiler`` (a distribution name in :data:`COMPILERS`), or None."""
    try:
        return importlib.metadata.version(compiler)
    except importlib.metadata.PackageNotFoundError:
        return None


def installed() -> tuple[str, ...]:
    """The compilers installed here, the recommended one first (found without importing them)."""
    return tuple(compiler for compiler in COMPILERS if version(compiler) is not None)


def report() -> list[str]:
    """One line per compiler for ``python -m nvmathx``: its version, or that it is missing."""
    found = installed()
    lines = []
    for compiler in COMPILERS:
        if compiler in found:
            note = "  (recommended)" if compiler == NUMBA_CUDA_MLIR else "  (maintenance mode)"
            lines.append(f"{compiler:<16} {version(compiler)}{note}")
        else:
            lines.append(f"{compiler:<16} not installed: pip install {compiler}")
    return lines


def compiler_of_module(module_name: str) -> str | None:
    """The compiler whose code ``module_name`` is, or None (``numba_cuda_mlir`` vendors a copy of
    numba-cuda under ``numba_cuda_mlir.numba_cuda``: the outer package decides)."""
    package = module_name.partition(".")[0]
    for compiler, top in _PACKAGES.items():
        if package == top:
            return compiler
    return None


def default_compiler() -> str:
    """The compiler used where no kernel decides: numba-cuda-mlir when installed, else numba-cuda."""
    found = installed()
    if not found:
        raise ImportError(
            "the device functions need a Numba compiler: pip install 'nvmathx[device]' "
            "(numba-cuda-mlir), or numba-cuda"
        )
    return found[0]


def kernel_constant(value: Any) -> tuple[str, Any] | None:
    """How a host trait appears inside kernels: ``("int", v)``, ``("ints", tuple)``, ``("dtype",
    numpy dtype)`` (a number class such as ``fft.value_type``), or None (not available there)."""
    import numpy as np

    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, np.integer)):
        return ("int", int(value))
    if isinstance(value, tuple) and value and all(isinstance(v, (int, np.integer)) for v in value):
        return ("ints", tuple(int(v) for v in value))
    if isinstance(value, type) and issubclass(value, np.number):
        return ("dtype", np.dtype(value))
    return None
