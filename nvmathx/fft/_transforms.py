"""nvmathx.fft's transforms: one function per scipy.fft function.

Each is an ordinary function of scipy.fft's signature (plus ``prolog``/``epilog`` where cuFFT
callbacks apply, and ``execution``/``stream`` as :func:`nvmathx.linalg.matmul` takes them) whose
body is one call of :func:`_functions.transform` with its :class:`~nvmathx.fft._functions.Kind`,
a row of the table below, after two typing overloads (numpy in, numpy.ndarray out; any other
array type in, that type out). The :func:`_row` decorator checks the signature against the kind, gives
the function its docstring (:func:`_docs.render`, one template for all) and lists it in
:data:`TRANSFORMS`, from which the scipy backend dispatches; adding a transform is adding a kind,
a function, and its name to ``__all__``.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import TYPE_CHECKING, Callable, TypeVar, overload

from .._fftcore.layout import C2C as _C2C
from .._fftcore.layout import C2R as _C2R
from .._fftcore.layout import R2C as _R2C
from .._fftcore.normalize import Norm
from ._docs import render as _render
from ._functions import Kind
from ._functions import transform as _transform

if TYPE_CHECKING:
    import numpy as np

    from ..typing import AnyArray, ArrayLike, ArrayT, ExecutionLike, HostArrayLike, NumpyArrayT, StreamLike
    from ._fft import FFT, Callback

# Written out, not built from TRANSFORMS, so that type checkers and IDEs see the names through
# nvmathx.fft's star import; a test holds it equal to the table.
__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2", "rfftn", "irfftn",
           "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn"]

_F = TypeVar("_F", bound=Callable)

TRANSFORMS: dict = {}
"""Every public transform, by name, in the order of the rows."""

_FORWARD, _INVERSE = -1, +1

# name, transform type, form (1: ``n``/``axis``; 2: ``s``/``axes`` over the last two; 3: n-D),
# direction, Hermitian
_FFT = Kind("fft", _C2C, 1, _FORWARD)
_IFFT = Kind("ifft", _C2C, 1, _INVERSE)
_FFT2 = Kind("fft2", _C2C, 2, _FORWARD)
_IFFT2 = Kind("ifft2", _C2C, 2, _INVERSE)
_FFTN = Kind("fftn", _C2C, 3, _FORWARD)
_IFFTN = Kind("ifftn", _C2C, 3, _INVERSE)
_RFFT = Kind("rfft", _R2C, 1, _FORWARD)
_IRFFT = Kind("irfft", _C2R, 1, _INVERSE)
_RFFT2 = Kind("rfft2", _R2C, 2, _FORWARD)
_IRFFT2 = Kind("irfft2", _C2R, 2, _INVERSE)
_RFFTN = Kind("rfftn", _R2C, 3, _FORWARD)
_IRFFTN = Kind("irfftn", _C2R, 3, _INVERSE)
_HFFT = Kind("hfft", _C2R, 1, _INVERSE, True)
_IHFFT = Kind("ihfft", _R2C, 1, _FORWARD, True)
_HFFT2 = Kind("hfft2", _C2R, 2, _INVERSE, True)
_IHFFT2 = Kind("ihfft2", _R2C, 2, _FORWARD, True)
_HFFTN = Kind("hfftn", _C2R, 3, _INVERSE, True)
_IHFFTN = Kind("ihfftn", _R2C, 3, _FORWARD, True)

_SCIPY_1D = ("x", "n", "axis", "norm", "overwrite_x", "workers")
_SCIPY_ND = ("x", "s", "axes", "norm", "overwrite_x", "workers")
_CALLBACKS = ("prolog", "epilog")
_SPACE = ("execution", "stream")


def _row(kind: Kind, *, summary: str, returns: str, see_also: str, example: str) -> Callable[[_F], _F]:
    """Check that the decorated function has the signature ``kind`` calls for, give it its docstring
    and list it in :data:`TRANSFORMS`.

    The signature is scipy.fft's (positional ``x, n, axis`` for the 1-D form, ``x, s, axes`` for the
    others, the 2-D form's ``axes`` defaulting to the last two), then keyword-only ``plan``, the
    callbacks (for all but the Hermitian transforms) and ``execution``, ``stream``, each defaulting
    to None.
    """

    def declare(function: _F) -> _F:
        parameters = inspect.signature(function).parameters
        positional = tuple(name for name, p in parameters.items() if p.kind is p.POSITIONAL_OR_KEYWORD)
        keyword = tuple(name for name, p in parameters.items() if p.kind is p.KEYWORD_ONLY)
        callbacks = not kind.conj
        expected = (("plan",) + (_CALLBACKS if callbacks else ()) + _SPACE)
        form = 1 if positional == _SCIPY_1D else 2 if parameters["axes"].default == (-2, -1) else 3
        if (function.__name__ != kind.name or positional not in (_SCIPY_1D, _SCIPY_ND) or keyword != expected
                or form != kind.form or any(parameters[name].default is not None for name in keyword)):
            raise TypeError(f"{function.__name__}: expected scipy.fft's parameters and keyword-only {expected} for "
                            f"{kind} (got {tuple(parameters)})")
        function.__doc__ = _render(kind, callbacks=callbacks, summary=summary, returns=returns, see_also=see_also,
                                   example=example)
        TRANSFORMS[kind.name] = function
        return function

    return declare


@overload
def fft(x: NumpyArrayT, n: int | None = None, axis: int = -1, norm: Norm = None, overwrite_x: bool = False,
        workers: int | None = None, *, plan: FFT | None = None, prolog: Callback = None, epilog: Callback = None,
        execution: ExecutionLike = None, stream: StreamLike = None) -> np.ndarray: ...
@overload
def fft(x: HostArrayLike, n: int | None = None, axis: int = -1, norm: Norm = None, overwrite_x: bool = False,
        workers: int | None = None, *, plan: FFT | None = None, prolog: Callback = None, epilog: Callback = None,
        execution: ExecutionLike = None, stream: StreamLike = None) -> np.ndarray: ...
@overload
def fft(x: ArrayT, n: int | None = None, axis: int = -1, norm: Norm = None, overwrite_x: bool = False,
        workers: int | None = None, *, plan: FFT | None = None, prolog: Callback = None, epilog: Callback = None,
        execution: ExecutionLike = None, stream: StreamLike = None) -> ArrayT: ...
@_row(_FFT, summary="Compute the 1-D discrete Fourier transform.",
      returns="The complex transform along ``axis``.", see_also="ifft, fftn, rfft",
      example=">>> x = np.exp(2j * np.pi * np.arange(8) / 8)\n"
              ">>> np.allclose(nvmathx.fft.fft(x), np.fft.fft(x))\nTrue")
def fft(
    x: ArrayLike, n: int | None = None, axis: int = -1, norm: Norm = None,
    overwrite_x: bool = False, workers: int | None = None,
    *, plan: FFT | None = None, prolog: Callback = None, epilog: Callback = None,
    execution: ExecutionLike = None, stream: StreamLike = None,
) -> AnyArray:
    return _transform(_FFT, x, n, axis, norm, overwrite_x, workers, plan, prolog, epilog, execution, stream)


@overload
def ifft(x: NumpyArrayT, n: int | None = None, axis: int = -1, norm: Norm = None, overwrite_x: bool = False,
         workers: int | None = None, *, plan: FFT | None = None, prolog: Callback = None, epilog: Callback = None,
         execution: ExecutionLike = None, stream: StreamLike = None) -> np.ndarray: ...
@overload
def ifft(x: HostArrayLike, n: int | None = None, axis: int = -1, norm: Norm = None, overwrite_x: bool = False,
         workers: int | None = None, *, plan: FFT | None = None, prolog: Callback = None, epilog: Callback = None,
         execution: ExecutionLike = None, stream: StreamLike = None) -> np.ndarray: ...
@overload
def ifft(x: ArrayT, n: int | None = None, axis: int = -1, norm: Norm = None, overwrite_x: bool = False,
         workers: int | None = None, *, plan: FFT | None = None, prolog: Callback = None, epilog: Callback = None,
         execution: ExecutionLike = None, stream: StreamLike = None) -> ArrayT: ...
@_row(_IFFT, summary="Compute the 1-D inverse discrete Fourier transform.",
      returns="The complex inverse transform along ``axis``.", see_also="fft, ifftn, irfft",
      example=">>> x = np.arange(8.0) + 1j\n"
              ">>> np.allclose(nvmathx.fft.ifft(nvmathx.fft.fft(x)), x)\nTrue")
def ifft(
    x: ArrayLike, n: int | None = None, axis: int = -1, norm: Norm = None,
    overwrite_x: bool = False, workers: int | None = None,
    *, plan: FFT | None = None, prolog: Callback = None, epilog: Callback = None,
    execution: ExecutionLike = None, stream: StreamLike = None,
) -> AnyArray:
    return _transform(_IFFT, x, n, axis, norm, overwrite_x, workers, plan, prolog, epilog, execution, stream)


@overload
def fft2(x: NumpyArrayT, s: Sequence[int] | None = None, axes: Sequence[int] | None = (-2, -1), norm: Norm = None,
         overwrite_x: bool = False, workers: int | None = None, *, plan: FFT | None = None, prolog: Callback = None,
         epilog: Callback = None, execution: ExecutionLike = None, stream: StreamLike = None) -> np.ndarray: ...
@overload
def fft2(x: HostArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = (-2, -1), norm: Norm = None,
         overwrite_x: bool = False, workers: int | None = None, *, plan: FFT | None = None, prolog: Callback = None,
         epilog: Callback = None, execution: ExecutionLike = None, stream: StreamLike = None) -> np.ndarray: ...
@overload
def fft2(x: ArrayT, s: Sequence[int] | None = None, axes: Sequence[int] | None = (-2, -1), norm: Norm = None,
         overwrite_x: bool = False, workers: int | None = None, *, plan: FFT | None = None, prolog: Callback = None,
         epilog: Callback = None, execution: ExecutionLike = None, stream: StreamLike = None) -> ArrayT: ...
@_row(_FFT2, summary="Compute the 2-D discrete Fourier transform.",
      returns="The complex transform over ``axes``.", see_also="ifft2, fftn",
      example=">>> x = np.arange(12.0).reshape(3, 4)\n"
              ">>> np.allclose(nvmathx.fft.fft2(x), np.fft.fft2(x))\nTrue")
def fft2(
    x: ArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = (-2, -1), norm: Norm = None,
    overwrite_x: bool = False, workers: int | None = None,
    *, plan: FFT | None = None, prolog: Callback = None, epilog: Callback = None,
    execution: ExecutionLike = None, stream: StreamLike = None,
) -> AnyArray:
    return _transform(_FFT2, x, s, axes, norm, overwrite_x, workers, plan, prolog, epilog, execution, stream)


@overload
def ifft2(x: NumpyArrayT, s: Sequence[int] | None = None, axes: Sequence[int] | None = (-2, -1), norm: Norm = None,
          overwrite_x: bool = False, workers: int | None = None, *, plan: FFT | None = None, prolog: Callback = None,
          epilog: Callback = None, execution: ExecutionLike = None, stream: StreamLike = None) -> np.ndarray: ...
@overload
def ifft2(x: HostArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = (-2, -1), norm: Norm = None,
          overwrite_x: bool = False, workers: int | None = None, *, plan: FFT | None = None, prolog: Callback = None,
          epilog: Callback = None, execution: ExecutionLike = None, stream: StreamLike = None) -> np.ndarray: ...
@overload
def ifft2(x: ArrayT, s: Sequence[int] | None = None, axes: Sequence[int] | None = (-2, -1), norm: Norm = None,
          overwrite_x: bool = False, workers: int | None = None, *, plan: FFT | None = None, prolog: Callback = None,
          epilog: Callback = None, execution: ExecutionLike = None, stream: StreamLike = None) -> ArrayT: ...
@_row(_IFFT2, summary="Compute the 2-D inverse discrete Fourier transform.",
      returns="The complex inverse transform over ``axes``.", see_also="fft2, ifftn",
      example=">>> x = np.arange(12.0).reshape(3, 4)\n"
              ">>> np.allclose(nvmathx.fft.ifft2(x), np.fft.ifft2(x))\nTrue")
def ifft2(
    x: ArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = (-2, -1), norm: Norm = None,
    overwrite_x: bool = False, workers: int | None = None,
    *, plan: FFT | None = None, prolog: Callback = None, epilog: Callback = None,
    execution: ExecutionLike = None, stream: StreamLike = None,
) -> AnyArray:
    return _transform(_IFFT2, x, s, axes, norm, overwrite_x, workers, plan, prolog, epilog, execution, stream)


@overload
def fftn(x: NumpyArrayT, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: Norm = None,
         overwrite_x: bool = False, workers: int | None = None, *, plan: FFT | None = None, prolog: Callback = None,
         epilog: Callback = None, execution: ExecutionLike = None, stream: StreamLike = None) -> np.ndarray: ...
@overload
def fftn(x: HostArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: Norm = None,
         overwrite_x: bool = False, workers: int | None = None, *, plan: FFT | None = None, prolog: Callback = None,
         epilog: Callback = None, execution: ExecutionLike = None, stream: StreamLike = None) -> np.ndarray: ...
@overload
def fftn(x: ArrayT, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: Norm = None,
         overwrite_x: bool = False, workers: int | None = None, *, plan: FFT | None = None, prolog: Callback = None,
         epilog: Callback = None, execution: ExecutionLike = None, stream: StreamLike = None) -> ArrayT: ...
@_row(_FFTN, summary="Compute the N-D discrete Fourier transform.",
      returns="The complex transform over ``axes``.", see_also="ifftn, fft2, rfftn",
      example=">>> x = np.arange(24.0).reshape(2, 3, 4)\n"
              ">>> np.allclose(nvmathx.fft.fftn(x), np.fft.fftn(x))\nTrue")
def fftn(
    x: ArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: Norm = None,
    overwrite_x: bool = False, workers: int | None = None,
    *, plan: FFT | None = None, prolog: Callback = None, epilog: Callback = None,
    execution: ExecutionLike = None, stream: StreamLike = None,
) -> AnyArray:
    return _transform(_FFTN, x, s, axes, norm, overwrite_x, workers, plan, prolog, epilog, execution, stream)


@overload
def ifftn(x: NumpyArrayT, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: Norm = None,
          overwrite_x: bool = False, workers: int | None = None, *, plan: FFT | None = None, prolog: Callback = None,
          epilog: Callback = None, execution: ExecutionLike = None, stream: StreamLike = None) -> np.ndarray: ...
@overload
def ifftn(x: HostArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: Norm = None,
          overwrite_x: bool = False, workers: int | None = None, *, plan: FFT | None = None, prolog: Callback = None,
          epilog: Callback = None, execution: ExecutionLike = None, stream: StreamLike = None) -> np.ndarray: ...
@overload
def ifftn(x: ArrayT, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: Norm = None,
          overwrite_x: bool = False, workers: int | None = None, *, plan: FFT | None = None, prolog: Callback = None,
          epilog: Callback = None, execution: ExecutionLike = None, stream: StreamLike = None) -> ArrayT: ...
@_row(_IFFTN, summary="Compute the N-D inverse discrete Fourier transform.",
      returns="The complex inverse transform over ``axes``.", see_also="fftn, ifft2, irfftn",
      example=">>> x = np.arange(24.0).reshape(2, 3, 4)\n"
              ">>> np.allclose(nvmathx.fft.ifftn(x), np.fft.ifftn(x))\nTrue")
def ifftn(
    x: ArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: Norm = None,
    overwrite_x: bool = False, workers: int | None = None,
    *, plan: FFT | None = None, prolog: Callback = None, epilog: Callback = None,
    execution: ExecutionLike = None, stream: StreamLike = None,
) -> AnyArray:
    return _transform(_IFFTN, x, s, axes, norm, overwrite_x, workers, plan, prolog, epilog, execution, stream)


@overload
def rfft(x: NumpyArrayT, n: int | None = None, axis: int = -1, norm: Norm = None, overwrite_x: bool = False,
         workers: int | None = None, *, plan: FFT | None = None, prolog: Callback = None, epilog: Callback = None,
         execution: ExecutionLike = None, stream: StreamLike = None) -> np.ndarray: ...
@overload
def rfft(x: HostArrayLike, n: int | None = None, axis: int = -1, norm: Norm = None, overwrite_x: bool = False,
         workers: int | None = None, *, plan: FFT | None = None, prolog: Callback = None, epilog: Callback = None,
         execution: ExecutionLike = None, stream: StreamLike = None) -> np.ndarray: ...
@overload
def rfft(x: ArrayT, n: int | None = None, axis: int = -1, norm: Norm = None, overwrite_x: bool = False,
         workers: int | None = None, *, plan: FFT | None = None, prolog: Callback = None, epilog: Callback = None,
         execution: ExecutionLike = None, stream: StreamLike = None) -> ArrayT: ...
@_row(_RFFT, summary="Compute the 1-D discrete Fourier transform of a real operand.",
      returns="The ``n // 2 + 1`` non-negative frequency terms along ``axis``.", see_also="irfft, fft, rfftn",
      example=">>> x = np.arange(8.0)\n"
              ">>> np.allclose(nvmathx.fft.rfft(x), np.fft.rfft(x))\nTrue")
def rfft(
    x: ArrayLike, n: int | None = None, axis: int = -1, norm: Norm = None,
    overwrite_x: bool = False, workers: int | None = None,
    *, plan: FFT | None = None, prolog: Callback = None, epilog: Callback = None,
    execution: ExecutionLike = None, stream: StreamLike = None,
) -> AnyArray:
    return _transform(_RFFT, x, n, axis, norm, overwrite_x, workers, plan, prolog, epilog, execution, stream)


@overload
def irfft(x: NumpyArrayT, n: int | None = None, axis: int = -1, norm: Norm = None, overwrite_x: bool = False,
          workers: int | None = None, *, plan: FFT | None = None, prolog: Callback = None, epilog: Callback = None,
          execution: ExecutionLike = None, stream: StreamLike = None) -> np.ndarray: ...
@overload
def irfft(x: HostArrayLike, n: int | None = None, axis: int = -1, norm: Norm = None, overwrite_x: bool = False,
          workers: int | None = None, *, plan: FFT | None = None, prolog: Callback = None, epilog: Callback = None,
          execution: ExecutionLike = None, stream: StreamLike = None) -> np.ndarray: ...
@overload
def irfft(x: ArrayT, n: int | None = None, axis: int = -1, norm: Norm = None, overwrite_x: bool = False,
          workers: int | None = None, *, plan: FFT | None = None, prolog: Callback = None, epilog: Callback = None,
          execution: ExecutionLike = None, stream: StreamLike = None) -> ArrayT: ...
@_row(_IRFFT, summary="Compute the inverse of :func:`rfft`: a real result from non-negative frequency terms.",
      returns="The real inverse transform along ``axis``.", see_also="rfft, ifft, irfftn",
      example=">>> x = np.arange(8.0)\n"
              ">>> np.allclose(nvmathx.fft.irfft(nvmathx.fft.rfft(x)), x)\nTrue")
def irfft(
    x: ArrayLike, n: int | None = None, axis: int = -1, norm: Norm = None,
    overwrite_x: bool = False, workers: int | None = None,
    *, plan: FFT | None = None, prolog: Callback = None, epilog: Callback = None,
    execution: ExecutionLike = None, stream: StreamLike = None,
) -> AnyArray:
    return _transform(_IRFFT, x, n, axis, norm, overwrite_x, workers, plan, prolog, epilog, execution, stream)


@overload
def rfft2(x: NumpyArrayT, s: Sequence[int] | None = None, axes: Sequence[int] | None = (-2, -1), norm: Norm = None,
          overwrite_x: bool = False, workers: int | None = None, *, plan: FFT | None = None, prolog: Callback = None,
          epilog: Callback = None, execution: ExecutionLike = None, stream: StreamLike = None) -> np.ndarray: ...
@overload
def rfft2(x: HostArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = (-2, -1), norm: Norm = None,
          overwrite_x: bool = False, workers: int | None = None, *, plan: FFT | None = None, prolog: Callback = None,
          epilog: Callback = None, execution: ExecutionLike = None, stream: StreamLike = None) -> np.ndarray: ...
@overload
def rfft2(x: ArrayT, s: Sequence[int] | None = None, axes: Sequence[int] | None = (-2, -1), norm: Norm = None,
          overwrite_x: bool = False, workers: int | None = None, *, plan: FFT | None = None, prolog: Callback = None,
          epilog: Callback = None, execution: ExecutionLike = None, stream: StreamLike = None) -> ArrayT: ...
@_row(_RFFT2, summary="Compute the 2-D discrete Fourier transform of a real operand.",
      returns="The transform over ``axes``; the last holds ``s[-1] // 2 + 1`` terms.", see_also="irfft2, rfftn",
      example=">>> x = np.arange(12.0).reshape(3, 4)\n"
              ">>> np.allclose(nvmathx.fft.rfft2(x), np.fft.rfft2(x))\nTrue")
def rfft2(
    x: ArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = (-2, -1), norm: Norm = None,
    overwrite_x: bool = False, workers: int | None = None,
    *, plan: FFT | None = None, prolog: Callback = None, epilog: Callback = None,
    execution: ExecutionLike = None, stream: StreamLike = None,
) -> AnyArray:
    return _transform(_RFFT2, x, s, axes, norm, overwrite_x, workers, plan, prolog, epilog, execution, stream)


@overload
def irfft2(x: NumpyArrayT, s: Sequence[int] | None = None, axes: Sequence[int] | None = (-2, -1), norm: Norm = None,
           overwrite_x: bool = False, workers: int | None = None, *, plan: FFT | None = None, prolog: Callback = None,
           epilog: Callback = None, execution: ExecutionLike = None, stream: StreamLike = None) -> np.ndarray: ...
@overload
def irfft2(x: HostArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = (-2, -1), norm: Norm = None,
           overwrite_x: bool = False, workers: int | None = None, *, plan: FFT | None = None, prolog: Callback = None,
           epilog: Callback = None, execution: ExecutionLike = None, stream: StreamLike = None) -> np.ndarray: ...
@overload
def irfft2(x: ArrayT, s: Sequence[int] | None = None, axes: Sequence[int] | None = (-2, -1), norm: Norm = None,
           overwrite_x: bool = False, workers: int | None = None, *, plan: FFT | None = None, prolog: Callback = None,
           epilog: Callback = None, execution: ExecutionLike = None, stream: StreamLike = None) -> ArrayT: ...
@_row(_IRFFT2, summary="Compute the inverse of :func:`rfft2`.",
      returns="The real inverse transform over ``axes``.", see_also="rfft2, irfftn",
      example=">>> x = np.arange(12.0).reshape(3, 4)\n"
              ">>> np.allclose(nvmathx.fft.irfft2(nvmathx.fft.rfft2(x)), x)\nTrue")
def irfft2(
    x: ArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = (-2, -1), norm: Norm = None,
    overwrite_x: bool = False, workers: int | None = None,
    *, plan: FFT | None = None, prolog: Callback = None, epilog: Callback = None,
    execution: ExecutionLike = None, stream: StreamLike = None,
) -> AnyArray:
    return _transform(_IRFFT2, x, s, axes, norm, overwrite_x, workers, plan, prolog, epilog, execution, stream)


@overload
def rfftn(x: NumpyArrayT, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: Norm = None,
          overwrite_x: bool = False, workers: int | None = None, *, plan: FFT | None = None, prolog: Callback = None,
          epilog: Callback = None, execution: ExecutionLike = None, stream: StreamLike = None) -> np.ndarray: ...
@overload
def rfftn(x: HostArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: Norm = None,
          overwrite_x: bool = False, workers: int | None = None, *, plan: FFT | None = None, prolog: Callback = None,
          epilog: Callback = None, execution: ExecutionLike = None, stream: StreamLike = None) -> np.ndarray: ...
@overload
def rfftn(x: ArrayT, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: Norm = None,
          overwrite_x: bool = False, workers: int | None = None, *, plan: FFT | None = None, prolog: Callback = None,
          epilog: Callback = None, execution: ExecutionLike = None, stream: StreamLike = None) -> ArrayT: ...
@_row(_RFFTN, summary="Compute the N-D discrete Fourier transform of a real operand.",
      returns="The transform over ``axes``; the last holds ``s[-1] // 2 + 1`` terms.", see_also="irfftn, fftn, rfft",
      example=">>> x = np.arange(24.0).reshape(2, 3, 4)\n"
              ">>> np.allclose(nvmathx.fft.rfftn(x), np.fft.rfftn(x))\nTrue")
def rfftn(
    x: ArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: Norm = None,
    overwrite_x: bool = False, workers: int | None = None,
    *, plan: FFT | None = None, prolog: Callback = None, epilog: Callback = None,
    execution: ExecutionLike = None, stream: StreamLike = None,
) -> AnyArray:
    return _transform(_RFFTN, x, s, axes, norm, overwrite_x, workers, plan, prolog, epilog, execution, stream)


@overload
def irfftn(x: NumpyArrayT, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: Norm = None,
           overwrite_x: bool = False, workers: int | None = None, *, plan: FFT | None = None, prolog: Callback = None,
           epilog: Callback = None, execution: ExecutionLike = None, stream: StreamLike = None) -> np.ndarray: ...
@overload
def irfftn(x: HostArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: Norm = None,
           overwrite_x: bool = False, workers: int | None = None, *, plan: FFT | None = None, prolog: Callback = None,
           epilog: Callback = None, execution: ExecutionLike = None, stream: StreamLike = None) -> np.ndarray: ...
@overload
def irfftn(x: ArrayT, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: Norm = None,
           overwrite_x: bool = False, workers: int | None = None, *, plan: FFT | None = None, prolog: Callback = None,
           epilog: Callback = None, execution: ExecutionLike = None, stream: StreamLike = None) -> ArrayT: ...
@_row(_IRFFTN, summary="Compute the inverse of :func:`rfftn`.",
      returns="The real inverse transform over ``axes``.", see_also="rfftn, ifftn, irfft",
      example=">>> x = np.arange(24.0).reshape(2, 3, 4)\n"
              ">>> np.allclose(nvmathx.fft.irfftn(nvmathx.fft.rfftn(x), x.shape), x)\nTrue")
def irfftn(
    x: ArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: Norm = None,
    overwrite_x: bool = False, workers: int | None = None,
    *, plan: FFT | None = None, prolog: Callback = None, epilog: Callback = None,
    execution: ExecutionLike = None, stream: StreamLike = None,
) -> AnyArray:
    return _transform(_IRFFTN, x, s, axes, norm, overwrite_x, workers, plan, prolog, epilog, execution, stream)


@overload
def hfft(x: NumpyArrayT, n: int | None = None, axis: int = -1, norm: Norm = None, overwrite_x: bool = False,
         workers: int | None = None, *, plan: FFT | None = None, execution: ExecutionLike = None,
         stream: StreamLike = None) -> np.ndarray: ...
@overload
def hfft(x: HostArrayLike, n: int | None = None, axis: int = -1, norm: Norm = None, overwrite_x: bool = False,
         workers: int | None = None, *, plan: FFT | None = None, execution: ExecutionLike = None,
         stream: StreamLike = None) -> np.ndarray: ...
@overload
def hfft(x: ArrayT, n: int | None = None, axis: int = -1, norm: Norm = None, overwrite_x: bool = False,
         workers: int | None = None, *, plan: FFT | None = None, execution: ExecutionLike = None,
         stream: StreamLike = None) -> ArrayT: ...
@_row(_HFFT, summary="Compute the FFT of a signal with Hermitian symmetry: a real spectrum.",
      returns="The real transform along ``axis``.", see_also="ihfft, irfft",
      example=">>> x = np.array([1.0, 2 - 1j, 3 + 0j])\n"
              ">>> np.allclose(nvmathx.fft.hfft(x), np.fft.hfft(x))\nTrue")
def hfft(
    x: ArrayLike, n: int | None = None, axis: int = -1, norm: Norm = None,
    overwrite_x: bool = False, workers: int | None = None,
    *, plan: FFT | None = None, execution: ExecutionLike = None, stream: StreamLike = None,
) -> AnyArray:
    return _transform(_HFFT, x, n, axis, norm, overwrite_x, workers, plan, None, None, execution, stream)


@overload
def ihfft(x: NumpyArrayT, n: int | None = None, axis: int = -1, norm: Norm = None, overwrite_x: bool = False,
          workers: int | None = None, *, plan: FFT | None = None, execution: ExecutionLike = None,
          stream: StreamLike = None) -> np.ndarray: ...
@overload
def ihfft(x: HostArrayLike, n: int | None = None, axis: int = -1, norm: Norm = None, overwrite_x: bool = False,
          workers: int | None = None, *, plan: FFT | None = None, execution: ExecutionLike = None,
          stream: StreamLike = None) -> np.ndarray: ...
@overload
def ihfft(x: ArrayT, n: int | None = None, axis: int = -1, norm: Norm = None, overwrite_x: bool = False,
          workers: int | None = None, *, plan: FFT | None = None, execution: ExecutionLike = None,
          stream: StreamLike = None) -> ArrayT: ...
@_row(_IHFFT, summary="Compute the inverse FFT of a real signal with a Hermitian spectrum.",
      returns="The ``n // 2 + 1`` non-negative frequency terms along ``axis``.", see_also="hfft, rfft",
      example=">>> x = np.arange(6.0)\n"
              ">>> np.allclose(nvmathx.fft.ihfft(x), np.fft.ihfft(x))\nTrue")
def ihfft(
    x: ArrayLike, n: int | None = None, axis: int = -1, norm: Norm = None,
    overwrite_x: bool = False, workers: int | None = None,
    *, plan: FFT | None = None, execution: ExecutionLike = None, stream: StreamLike = None,
) -> AnyArray:
    return _transform(_IHFFT, x, n, axis, norm, overwrite_x, workers, plan, None, None, execution, stream)


@overload
def hfft2(x: NumpyArrayT, s: Sequence[int] | None = None, axes: Sequence[int] | None = (-2, -1), norm: Norm = None,
          overwrite_x: bool = False, workers: int | None = None, *, plan: FFT | None = None,
          execution: ExecutionLike = None, stream: StreamLike = None) -> np.ndarray: ...
@overload
def hfft2(x: HostArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = (-2, -1), norm: Norm = None,
          overwrite_x: bool = False, workers: int | None = None, *, plan: FFT | None = None,
          execution: ExecutionLike = None, stream: StreamLike = None) -> np.ndarray: ...
@overload
def hfft2(x: ArrayT, s: Sequence[int] | None = None, axes: Sequence[int] | None = (-2, -1), norm: Norm = None,
          overwrite_x: bool = False, workers: int | None = None, *, plan: FFT | None = None,
          execution: ExecutionLike = None, stream: StreamLike = None) -> ArrayT: ...
@_row(_HFFT2, summary="Compute the 2-D FFT of a Hermitian-symmetric signal: a real spectrum.",
      returns="The real transform over ``axes``.", see_also="ihfft2, hfftn, irfft2",
      example=">>> import scipy.fft\n>>> x = np.arange(12.0).reshape(3, 4) + 1j\n"
              ">>> np.allclose(nvmathx.fft.hfft2(x), scipy.fft.hfft2(x))\nTrue")
def hfft2(
    x: ArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = (-2, -1), norm: Norm = None,
    overwrite_x: bool = False, workers: int | None = None,
    *, plan: FFT | None = None, execution: ExecutionLike = None, stream: StreamLike = None,
) -> AnyArray:
    return _transform(_HFFT2, x, s, axes, norm, overwrite_x, workers, plan, None, None, execution, stream)


@overload
def ihfft2(x: NumpyArrayT, s: Sequence[int] | None = None, axes: Sequence[int] | None = (-2, -1), norm: Norm = None,
           overwrite_x: bool = False, workers: int | None = None, *, plan: FFT | None = None,
           execution: ExecutionLike = None, stream: StreamLike = None) -> np.ndarray: ...
@overload
def ihfft2(x: HostArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = (-2, -1), norm: Norm = None,
           overwrite_x: bool = False, workers: int | None = None, *, plan: FFT | None = None,
           execution: ExecutionLike = None, stream: StreamLike = None) -> np.ndarray: ...
@overload
def ihfft2(x: ArrayT, s: Sequence[int] | None = None, axes: Sequence[int] | None = (-2, -1), norm: Norm = None,
           overwrite_x: bool = False, workers: int | None = None, *, plan: FFT | None = None,
           execution: ExecutionLike = None, stream: StreamLike = None) -> ArrayT: ...
@_row(_IHFFT2, summary="Compute the 2-D inverse FFT of a real signal with a Hermitian spectrum.",
      returns="The transform over ``axes``; the last holds ``s[-1] // 2 + 1`` terms.", see_also="hfft2, ihfftn, rfft2",
      example=">>> import scipy.fft\n>>> x = np.arange(12.0).reshape(3, 4)\n"
              ">>> np.allclose(nvmathx.fft.ihfft2(x), scipy.fft.ihfft2(x))\nTrue")
def ihfft2(
    x: ArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = (-2, -1), norm: Norm = None,
    overwrite_x: bool = False, workers: int | None = None,
    *, plan: FFT | None = None, execution: ExecutionLike = None, stream: StreamLike = None,
) -> AnyArray:
    return _transform(_IHFFT2, x, s, axes, norm, overwrite_x, workers, plan, None, None, execution, stream)


@overload
def hfftn(x: NumpyArrayT, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: Norm = None,
          overwrite_x: bool = False, workers: int | None = None, *, plan: FFT | None = None,
          execution: ExecutionLike = None, stream: StreamLike = None) -> np.ndarray: ...
@overload
def hfftn(x: HostArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: Norm = None,
          overwrite_x: bool = False, workers: int | None = None, *, plan: FFT | None = None,
          execution: ExecutionLike = None, stream: StreamLike = None) -> np.ndarray: ...
@overload
def hfftn(x: ArrayT, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: Norm = None,
          overwrite_x: bool = False, workers: int | None = None, *, plan: FFT | None = None,
          execution: ExecutionLike = None, stream: StreamLike = None) -> ArrayT: ...
@_row(_HFFTN, summary="Compute the N-D FFT of a Hermitian-symmetric signal: a real spectrum.",
      returns="The real transform over ``axes``.", see_also="ihfftn, hfft2, irfftn",
      example=">>> import scipy.fft\n>>> x = np.arange(24.0).reshape(2, 3, 4) + 1j\n"
              ">>> np.allclose(nvmathx.fft.hfftn(x), scipy.fft.hfftn(x))\nTrue")
def hfftn(
    x: ArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: Norm = None,
    overwrite_x: bool = False, workers: int | None = None,
    *, plan: FFT | None = None, execution: ExecutionLike = None, stream: StreamLike = None,
) -> AnyArray:
    return _transform(_HFFTN, x, s, axes, norm, overwrite_x, workers, plan, None, None, execution, stream)


@overload
def ihfftn(x: NumpyArrayT, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: Norm = None,
           overwrite_x: bool = False, workers: int | None = None, *, plan: FFT | None = None,
           execution: ExecutionLike = None, stream: StreamLike = None) -> np.ndarray: ...
@overload
def ihfftn(x: HostArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: Norm = None,
           overwrite_x: bool = False, workers: int | None = None, *, plan: FFT | None = None,
           execution: ExecutionLike = None, stream: StreamLike = None) -> np.ndarray: ...
@overload
def ihfftn(x: ArrayT, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: Norm = None,
           overwrite_x: bool = False, workers: int | None = None, *, plan: FFT | None = None,
           execution: ExecutionLike = None, stream: StreamLike = None) -> ArrayT: ...
@_row(_IHFFTN, summary="Compute the N-D inverse FFT of a real signal with a Hermitian spectrum.",
      returns="The transform over ``axes``; the last holds ``s[-1] // 2 + 1`` terms.", see_also="hfftn, ihfft2, rfftn",
      example=">>> import scipy.fft\n>>> x = np.arange(24.0).reshape(2, 3, 4)\n"
              ">>> np.allclose(nvmathx.fft.ihfftn(x), scipy.fft.ihfftn(x))\nTrue")
def ihfftn(
    x: ArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: Norm = None,
    overwrite_x: bool = False, workers: int | None = None,
    *, plan: FFT | None = None, execution: ExecutionLike = None, stream: StreamLike = None,
) -> AnyArray:
    return _transform(_IHFFTN, x, s, axes, norm, overwrite_x, workers, plan, None, None, execution, stream)
