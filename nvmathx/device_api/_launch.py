"""Launch helpers for kernels that use more dynamic shared memory than the default 48 KiB."""

from __future__ import annotations

from typing import Any

from .._core.errors import OptionsError

__all__ = ["set_max_dynamic_shared_memory"]


def set_max_dynamic_shared_memory(kernel: Any, nbytes: int) -> None:
    """Let every compiled overload of the Numba ``kernel`` (numba-cuda-mlir's or numba-cuda's) use
    ``nbytes`` of dynamic shared memory.

    CUDA limits dynamic shared memory to 48 KiB unless a kernel opts in; large FFTs and GEMMs
    need more (``fft.shared_memory_size``). Compile the kernel first (call it once, or
    ``cuda.jit(signature)``), then call this before launching with ``nbytes``.

    Raises
    ------
    OptionsError
        When ``kernel`` has no compiled overload yet.
    """
    from cuda.bindings import driver

    overloads = list(getattr(kernel, "overloads", {}).values())
    if not overloads:
        raise OptionsError("kernel", "compile the kernel first (give cuda.jit a signature, or launch it once)")
    attribute = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    for compiled in overloads:
        function = compiled._codelibrary.get_cufunc()
        if hasattr(function, "device"):  # numba-cuda: a library kernel (CUkernel), set per device
            (status,) = driver.cuKernelSetAttribute(attribute, int(nbytes), function.handle, function.device.id)
        else:  # numba-cuda-mlir: a module's function (CUfunction)
            (status,) = driver.cuFuncSetAttribute(function.handle, attribute, int(nbytes))
        if status != driver.CUresult.CUDA_SUCCESS:
            raise OptionsError("nbytes", f"cuKernelSetAttribute refused {nbytes} bytes ({status.name})")
