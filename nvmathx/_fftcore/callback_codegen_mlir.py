"""A Python callback lowered to one LTO-IR module with cuFFT's exact C signature (numba-cuda-mlir).

The entry point ``symbol`` is itself a Python function, compiled with the C ABI and that name; it
calls the user's function (a force-inlined device function) and converts between numba's complex
values and what cuFFT's kernels pass and return: CUDA C++'s ``float2``/``double2``, named structs.
An entry that returned numba's own complex type (a literal ``{float, float}``) would link to
cuFFT's declaration only through an indirect call; numba-cuda-mlir's named structs (its
``experimental.struct``) link as the same type, and every call is inlined (checked by linking
against CUDA C++ callers: tests/fft/test_callbacks_link.py).

numba-cuda-mlir links what it compiles even when asked for LTO-IR, so it needs nvJitLink or a
CUDA driver, and asks the driver for the device's architecture. Imported only when a callback is
compiled by numba-cuda-mlir (it imports that compiler).
"""

from __future__ import annotations

import functools

import numpy as np

from .callback_errors import CallbackCompileError, plain_message

__all__ = ["lower"]

_C_STRUCTS = {"complex64": ("float2", "float32"), "complex128": ("double2", "float64")}


@functools.cache
def _c_struct(element: str):
    """numba-cuda-mlir's named struct for CUDA C++'s ``float2``/``double2`` (one per process: the
    compiler keeps a registry of struct names)."""
    from numba_cuda_mlir.cuda.experimental import struct
    from numba_cuda_mlir.numba_cuda import types

    name, real = _C_STRUCTS[element]
    return struct([("x", getattr(types, real)), ("y", getattr(types, real))], name=name)


def lower(role: str, fn, element: str, user_info: str | None, target: str, symbol: str) -> bytes:
    """LTO-IR defining ``symbol``: cuFFT's load (``role="prolog"``) or store callback of ``element``
    values, calling ``fn``. ``target`` is "sm_XY"."""
    try:
        # (from their defining modules: numba_cuda_mlir's stubs for cuda and types list fewer names)
        from numba_cuda_mlir.compiler import compile as compile_device_function
        from numba_cuda_mlir.decorators import mlir_jit
        from numba_cuda_mlir.numba_cuda import types
        from numba_cuda_mlir.numba_cuda.core.errors import NumbaError
        from numba_cuda_mlir.numba_cuda.np.numpy_support import from_dtype
        from numba_cuda_mlir.numba_cuda.types.misc import CPointer
    except ImportError as error:
        raise CallbackCompileError("compiler", f"numba-cuda-mlir does not import here: {error}") from None
    cc = (int(target[3:-1]), int(target[-1]))
    value = from_dtype(np.dtype(element))
    data = CPointer(value)
    info = CPointer(from_dtype(np.dtype(user_info))) if user_info else types.voidptr
    function = getattr(fn, "py_func", fn)
    user = mlir_jit(device=True, forceinline=True)(function)
    entry, signature = _entry(role, element, user, value, data, info, types)
    try:
        ltoir, _ = compile_device_function(entry, signature, device=True, abi="c", output="ltoir", cc=cc,
                                abi_info={"abi_name": symbol}, forceinline=True)
    except NumbaError as error:
        names = "data, offset, user_info, smem" if role == "prolog" else "data, offset, value, user_info, smem"
        raise CallbackCompileError(
            "fn", f"{function.__qualname__} does not compile as a {role} ({names}) of {element} elements "
                  f"under numba-cuda-mlir: {plain_message(str(error))}") from None
    except Exception as error:  # noqa: BLE001 (no driver, no nvJitLink, NVVM refused: several error types)
        raise CallbackCompileError("compiler", f"numba-cuda-mlir could not compile {function.__qualname__} as "
                                               f"{symbol}: {type(error).__name__}: {error}") from None
    return bytes(ltoir)


# cuFFT's offset is unsigned: its sign bit cleared tells the optimiser it is not negative, so the
# user's `offset % n` and `offset // n` (Python's floor semantics on int64) need no sign fix-up
_NON_NEGATIVE = np.int64((1 << 63) - 1)


def _entry(role, element, user, value, data, info, types):
    """The entry function and its C signature, converting complex values to and from the struct."""
    if element not in _C_STRUCTS:  # real elements are passed and returned as the scalars they are
        if role == "prolog":

            def load_real(data, offset, info, smem):
                return user(data, offset & _NON_NEGATIVE, info, smem)

            return load_real, value(data, types.int64, info, types.voidptr)

        def store_real(data, offset, value, info, smem):
            user(data, offset & _NON_NEGATIVE, value, info, smem)

        return store_real, types.void(data, types.int64, value, info, types.voidptr)
    c_struct = _c_struct(element)
    c_type = c_struct._type
    if role == "prolog":

        def load_complex(data, offset, info, smem):
            loaded = user(data, offset & _NON_NEGATIVE, info, smem)
            result = c_struct()
            result.x = loaded.real
            result.y = loaded.imag
            return result

        return load_complex, c_type(data, types.int64, info, types.voidptr)
    complex_type = value

    def store_complex(data, offset, value, info, smem):
        user(data, offset & _NON_NEGATIVE, complex_type(complex(value.x, value.y)), info, smem)

    return store_complex, types.void(data, types.int64, c_type, info, types.voidptr)
