"""FFTs on cuFFT: a stateful :class:`FFT`, the scipy.fft functions, and a scipy.fft backend.

Host (numpy) operands run on the CPU through scipy.fft; GPU operands (cupy, torch, jax, any DLPack
or CUDA Array Interface array) run on cuFFT, over any axes and strides, with results in the
operand's own library. The function forms cache their cuFFT plans per device in
:data:`plan_cache`.

Precision follows scipy.fft: float32/complex64 compute in single precision and float64/complex128
in double; float16 and bfloat16 are computed in single precision (complex64 results, no
half-precision cuFFT plans); bool and integer operands are converted to float64, as scipy.fft
converts them. Other dtypes (float128, strings, objects) raise
:class:`~nvmathx.UnsupportedOperandError` naming the argument. A GPU R2C transform reads its real
operand directly only from an address aligned to the complex element (a cuFFT rule); a misaligned
view is copied first.

Python functions become cuFFT load and store callbacks (:func:`compile_prolog`,
:func:`compile_epilog`; numba-cuda-mlir or numba-cuda compiles them to LTO-IR, cached on disk) that cuFFT links into its
kernels, so a window, a filter or a scale costs no pass of its own: ``FFT.plan(prolog=, epilog=)`` and
the functions' ``prolog=``/``epilog=`` take them, with a user-data array. ``norm="ortho"`` and
``norm="forward"`` are applied the same way, by a built-in store callback, where cuFFT writes the
result in one pass.

The module is itself a scipy.fft backend::

    import scipy.fft, nvmathx.fft
    with scipy.fft.set_backend(nvmathx.fft):
        y = scipy.fft.fft(cupy_array)
"""

from __future__ import annotations

from .._fftcore.callbacks import (
    CallbackCompileError,
    CallbacksUnavailableError,
    CompiledCallback,
    compile_epilog,
    compile_prolog,
)
from ._backend import __ua_domain__ as __ua_domain__  # scipy.fft.set_backend reads these two
from ._backend import __ua_function__ as __ua_function__
from ._backend import backend
from ._fft import FFT
from ._functions import plan_cache, plan_key
from ._helpers import fftfreq, fftshift, ifftshift, rfftfreq
from ._options import FFTOptions
from ._transforms import *  # noqa: F403  (the transforms: one per row of the table)
from ._transforms import __all__ as _TRANSFORMS

__all__ = [
    "FFT",
    "FFTOptions",
    *_TRANSFORMS,
    "fftfreq", "rfftfreq", "fftshift", "ifftshift",
    "plan_cache",
    "plan_key",
    "backend",
    "compile_prolog",
    "compile_epilog",
    "CompiledCallback",
    "CallbackCompileError",
    "CallbacksUnavailableError",
]
