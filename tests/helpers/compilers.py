"""The Numba compilers that device-function tests run under, and what each test needs of them.

A kernel body is written once (its ``cuda`` name unbound); :meth:`Compiler.bind` gives it the
compiler's ``cuda`` module, as a kernel author's import line would.
"""

from __future__ import annotations

import functools
import importlib
import types as pytypes
from dataclasses import dataclass

import pytest

from nvmathx._codegen import compilers as _compilers

H100 = (9, 0)


@dataclass(frozen=True)
class Compiler:
    name: str
    cuda: pytypes.ModuleType
    types: pytypes.ModuleType

    def bind(self, function):
        """``function`` with the global ``cuda`` meaning this compiler's module."""
        namespace = dict(function.__globals__, cuda=self.cuda)
        return pytypes.FunctionType(function.__code__, namespace, function.__name__, function.__defaults__,
                                    function.__closure__)

    def generated_calls(self, kernel, signature) -> list[str]:
        """The nvmathx functions that ``kernel`` (bound here) calls, compiled for sm_90 without
        linking: PTX's extern declarations (numba-cuda), the MLIR module's private declarations
        (numba-cuda-mlir, which links already when it makes PTX)."""
        function = self.bind(kernel)
        if self.name == _compilers.NUMBA_CUDA:
            ptx, _ = self.cuda.compile_ptx(function, signature, cc=H100)
            return [line.split()[-1] for line in ptx.splitlines()
                    if line.startswith(".extern .func") and "nvmathx_" in line]
        text = self.cuda.compile_mlir(function, signature, cc=H100)
        return [line.split("@")[1].split("(")[0] for line in text.splitlines()
                if "func.func private @nvmathx_" in line]


def compiled_calls(compiler: Compiler, kernel, signature) -> list[str]:
    """:meth:`Compiler.generated_calls`, skipping where libNVVM is missing (anything else fails)."""
    try:
        return compiler.generated_calls(kernel, signature)
    except Exception as error:
        if "NVVM" in str(error) or "libnvvm" in str(error):
            pytest.skip(f"libNVVM not available: {error}")
        raise


@functools.cache
def load(name: str) -> Compiler | str:
    """The compiler ``name``, or why it cannot be used here."""
    if _compilers.version(name) is None:
        return f"{name} is not installed"
    try:
        if name == _compilers.NUMBA_CUDA:
            cuda = importlib.import_module("numba.cuda")
            types = importlib.import_module("numba.cuda.types")
            importlib.import_module("numba.cuda.cudaimpl")  # where numba-cuda 0.30 meets numpy 2.5 and fails
        else:
            cuda = importlib.import_module("numba_cuda_mlir.cuda")
            types = importlib.import_module("numba_cuda_mlir.numba_cuda.types")
            _compile_without_a_gpu()
    except Exception as error:  # noqa: BLE001 (numba-cuda 0.30 fails to import on numpy 2.5, for one)
        return f"{name} does not import here: {type(error).__name__}: {error}"
    return Compiler(name, cuda, types)


def _compile_without_a_gpu() -> None:
    """numba-cuda-mlir asks the driver for the device's compute capability even when told the
    target; without a driver, tests that only type and lower kernels give it sm_90 instead."""
    import numba_cuda_mlir.tools as tools
    from cuda.pathfinder import DynamicLibNotFoundError, load_nvidia_dynamic_lib

    try:
        load_nvidia_dynamic_lib("cuda")
    except DynamicLibNotFoundError:
        tools._cached_cc = H100


def require(name: str) -> Compiler:
    compiler = load(name)
    if isinstance(compiler, str):
        pytest.skip(compiler)
    return compiler
