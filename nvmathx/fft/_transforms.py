"""The table of nvmathx.fft's transforms: one row per public scipy.fft function.

A row is a decorated signature: the decorator says what the function computes (transform type,
direction, Hermitian or not) and holds its docstring text; the signature (scipy.fft's, plus
``prolog``/``epilog`` where cuFFT callbacks apply) is the function's. :func:`_functions.define`
turns it into the public function, :func:`_docs.render` into its ``__doc__``. ``nvmathx.fft``'s
``__all__`` and the scipy backend's dispatch are built from this module, so adding a transform is
adding a row (and its name to ``__all__``) here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Callable, TypeVar

from .._fftcore.layout import C2C as _C2C
from .._fftcore.layout import C2R as _C2R
from .._fftcore.layout import R2C as _R2C
from .._fftcore.normalize import Norm
from ._docs import render as _render
from ._functions import define as _define

if TYPE_CHECKING:
    from ..typing import ArrayLike
    from ._fft import FFT, Callback

# Written out, not built from TRANSFORMS, so that type checkers and IDEs see the names through
# nvmathx.fft's star import; a test holds it equal to the table.
__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2", "rfftn", "irfftn",
           "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn"]

_F = TypeVar("_F", bound=Callable)

TRANSFORMS: dict = {}
"""Every public transform, by name, in the order of the rows."""


def _row(fft_type: str, direction: int, *, hermitian: bool = False, summary: str, returns: str, see_also: str,
         example: str) -> Callable[[_F], _F]:
    """Make the decorated signature a public transform and list it in :data:`TRANSFORMS`."""

    def declare(stub: _F) -> _F:
        function, kind = _define(stub, fft_type, direction, hermitian)
        function.__doc__ = _render(kind, callbacks="prolog" in (stub.__kwdefaults__ or {}), summary=summary,
                                   returns=returns, see_also=see_also, example=example)
        TRANSFORMS[kind.name] = function
        return function

    return declare


_FORWARD, _INVERSE = -1, +1


@_row(_C2C, _FORWARD, summary="Compute the 1-D discrete Fourier transform.",
      returns="The complex transform along ``axis``.", see_also="ifft, fftn, rfft",
      example=">>> x = np.exp(2j * np.pi * np.arange(8) / 8)\n"
              ">>> np.allclose(nvmathx.fft.fft(x), np.fft.fft(x))\nTrue")
def fft(
    x: ArrayLike, n: int | None = None, axis: int = -1, norm: Norm = None,
    overwrite_x: bool = False, workers: int | None = None,
    *, plan: FFT | None = None, prolog: Callback = None, epilog: Callback = None,
) -> ArrayLike: ...


@_row(_C2C, _INVERSE, summary="Compute the 1-D inverse discrete Fourier transform.",
      returns="The complex inverse transform along ``axis``.", see_also="fft, ifftn, irfft",
      example=">>> x = np.arange(8.0) + 1j\n"
              ">>> np.allclose(nvmathx.fft.ifft(nvmathx.fft.fft(x)), x)\nTrue")
def ifft(
    x: ArrayLike, n: int | None = None, axis: int = -1, norm: Norm = None,
    overwrite_x: bool = False, workers: int | None = None,
    *, plan: FFT | None = None, prolog: Callback = None, epilog: Callback = None,
) -> ArrayLike: ...


@_row(_C2C, _FORWARD, summary="Compute the 2-D discrete Fourier transform.",
      returns="The complex transform over ``axes``.", see_also="ifft2, fftn",
      example=">>> x = np.arange(12.0).reshape(3, 4)\n"
              ">>> np.allclose(nvmathx.fft.fft2(x), np.fft.fft2(x))\nTrue")
def fft2(
    x: ArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = (-2, -1), norm: Norm = None,
    overwrite_x: bool = False, workers: int | None = None,
    *, plan: FFT | None = None, prolog: Callback = None, epilog: Callback = None,
) -> ArrayLike: ...


@_row(_C2C, _INVERSE, summary="Compute the 2-D inverse discrete Fourier transform.",
      returns="The complex inverse transform over ``axes``.", see_also="fft2, ifftn",
      example=">>> x = np.arange(12.0).reshape(3, 4)\n"
              ">>> np.allclose(nvmathx.fft.ifft2(x), np.fft.ifft2(x))\nTrue")
def ifft2(
    x: ArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = (-2, -1), norm: Norm = None,
    overwrite_x: bool = False, workers: int | None = None,
    *, plan: FFT | None = None, prolog: Callback = None, epilog: Callback = None,
) -> ArrayLike: ...


@_row(_C2C, _FORWARD, summary="Compute the N-D discrete Fourier transform.",
      returns="The complex transform over ``axes``.", see_also="ifftn, fft2, rfftn",
      example=">>> x = np.arange(24.0).reshape(2, 3, 4)\n"
              ">>> np.allclose(nvmathx.fft.fftn(x), np.fft.fftn(x))\nTrue")
def fftn(
    x: ArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: Norm = None,
    overwrite_x: bool = False, workers: int | None = None,
    *, plan: FFT | None = None, prolog: Callback = None, epilog: Callback = None,
) -> ArrayLike: ...


@_row(_C2C, _INVERSE, summary="Compute the N-D inverse discrete Fourier transform.",
      returns="The complex inverse transform over ``axes``.", see_also="fftn, ifft2, irfftn",
      example=">>> x = np.arange(24.0).reshape(2, 3, 4)\n"
              ">>> np.allclose(nvmathx.fft.ifftn(x), np.fft.ifftn(x))\nTrue")
def ifftn(
    x: ArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: Norm = None,
    overwrite_x: bool = False, workers: int | None = None,
    *, plan: FFT | None = None, prolog: Callback = None, epilog: Callback = None,
) -> ArrayLike: ...


@_row(_R2C, _FORWARD, summary="Compute the 1-D discrete Fourier transform of a real operand.",
      returns="The ``n // 2 + 1`` non-negative frequency terms along ``axis``.", see_also="irfft, fft, rfftn",
      example=">>> x = np.arange(8.0)\n"
              ">>> np.allclose(nvmathx.fft.rfft(x), np.fft.rfft(x))\nTrue")
def rfft(
    x: ArrayLike, n: int | None = None, axis: int = -1, norm: Norm = None,
    overwrite_x: bool = False, workers: int | None = None,
    *, plan: FFT | None = None, prolog: Callback = None, epilog: Callback = None,
) -> ArrayLike: ...


@_row(_C2R, _INVERSE, summary="Compute the inverse of :func:`rfft`: a real result from non-negative frequency terms.",
      returns="The real inverse transform along ``axis``.", see_also="rfft, ifft, irfftn",
      example=">>> x = np.arange(8.0)\n"
              ">>> np.allclose(nvmathx.fft.irfft(nvmathx.fft.rfft(x)), x)\nTrue")
def irfft(
    x: ArrayLike, n: int | None = None, axis: int = -1, norm: Norm = None,
    overwrite_x: bool = False, workers: int | None = None,
    *, plan: FFT | None = None, prolog: Callback = None, epilog: Callback = None,
) -> ArrayLike: ...


@_row(_R2C, _FORWARD, summary="Compute the 2-D discrete Fourier transform of a real operand.",
      returns="The transform over ``axes``; the last holds ``s[-1] // 2 + 1`` terms.", see_also="irfft2, rfftn",
      example=">>> x = np.arange(12.0).reshape(3, 4)\n"
              ">>> np.allclose(nvmathx.fft.rfft2(x), np.fft.rfft2(x))\nTrue")
def rfft2(
    x: ArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = (-2, -1), norm: Norm = None,
    overwrite_x: bool = False, workers: int | None = None,
    *, plan: FFT | None = None, prolog: Callback = None, epilog: Callback = None,
) -> ArrayLike: ...


@_row(_C2R, _INVERSE, summary="Compute the inverse of :func:`rfft2`.",
      returns="The real inverse transform over ``axes``.", see_also="rfft2, irfftn",
      example=">>> x = np.arange(12.0).reshape(3, 4)\n"
              ">>> np.allclose(nvmathx.fft.irfft2(nvmathx.fft.rfft2(x)), x)\nTrue")
def irfft2(
    x: ArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = (-2, -1), norm: Norm = None,
    overwrite_x: bool = False, workers: int | None = None,
    *, plan: FFT | None = None, prolog: Callback = None, epilog: Callback = None,
) -> ArrayLike: ...


@_row(_R2C, _FORWARD, summary="Compute the N-D discrete Fourier transform of a real operand.",
      returns="The transform over ``axes``; the last holds ``s[-1] // 2 + 1`` terms.", see_also="irfftn, fftn, rfft",
      example=">>> x = np.arange(24.0).reshape(2, 3, 4)\n"
              ">>> np.allclose(nvmathx.fft.rfftn(x), np.fft.rfftn(x))\nTrue")
def rfftn(
    x: ArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: Norm = None,
    overwrite_x: bool = False, workers: int | None = None,
    *, plan: FFT | None = None, prolog: Callback = None, epilog: Callback = None,
) -> ArrayLike: ...


@_row(_C2R, _INVERSE, summary="Compute the inverse of :func:`rfftn`.",
      returns="The real inverse transform over ``axes``.", see_also="rfftn, ifftn, irfft",
      example=">>> x = np.arange(24.0).reshape(2, 3, 4)\n"
              ">>> np.allclose(nvmathx.fft.irfftn(nvmathx.fft.rfftn(x), x.shape), x)\nTrue")
def irfftn(
    x: ArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: Norm = None,
    overwrite_x: bool = False, workers: int | None = None,
    *, plan: FFT | None = None, prolog: Callback = None, epilog: Callback = None,
) -> ArrayLike: ...


@_row(_C2R, _INVERSE, hermitian=True, summary="Compute the FFT of a signal with Hermitian symmetry: a real spectrum.",
      returns="The real transform along ``axis``.", see_also="ihfft, irfft",
      example=">>> x = np.array([1.0, 2 - 1j, 3 + 0j])\n"
              ">>> np.allclose(nvmathx.fft.hfft(x), np.fft.hfft(x))\nTrue")
def hfft(
    x: ArrayLike, n: int | None = None, axis: int = -1, norm: Norm = None,
    overwrite_x: bool = False, workers: int | None = None,
    *, plan: FFT | None = None,
) -> ArrayLike: ...


@_row(_R2C, _FORWARD, hermitian=True, summary="Compute the inverse FFT of a real signal with a Hermitian spectrum.",
      returns="The ``n // 2 + 1`` non-negative frequency terms along ``axis``.", see_also="hfft, rfft",
      example=">>> x = np.arange(6.0)\n"
              ">>> np.allclose(nvmathx.fft.ihfft(x), np.fft.ihfft(x))\nTrue")
def ihfft(
    x: ArrayLike, n: int | None = None, axis: int = -1, norm: Norm = None,
    overwrite_x: bool = False, workers: int | None = None,
    *, plan: FFT | None = None,
) -> ArrayLike: ...


@_row(_C2R, _INVERSE, hermitian=True,
      summary="Compute the 2-D FFT of a Hermitian-symmetric signal: a real spectrum.",
      returns="The real transform over ``axes``.", see_also="ihfft2, hfftn, irfft2",
      example=">>> import scipy.fft\n>>> x = np.arange(12.0).reshape(3, 4) + 1j\n"
              ">>> np.allclose(nvmathx.fft.hfft2(x), scipy.fft.hfft2(x))\nTrue")
def hfft2(
    x: ArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = (-2, -1), norm: Norm = None,
    overwrite_x: bool = False, workers: int | None = None,
    *, plan: FFT | None = None,
) -> ArrayLike: ...


@_row(_R2C, _FORWARD, hermitian=True,
      summary="Compute the 2-D inverse FFT of a real signal with a Hermitian spectrum.",
      returns="The transform over ``axes``; the last holds ``s[-1] // 2 + 1`` terms.", see_also="hfft2, ihfftn, rfft2",
      example=">>> import scipy.fft\n>>> x = np.arange(12.0).reshape(3, 4)\n"
              ">>> np.allclose(nvmathx.fft.ihfft2(x), scipy.fft.ihfft2(x))\nTrue")
def ihfft2(
    x: ArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = (-2, -1), norm: Norm = None,
    overwrite_x: bool = False, workers: int | None = None,
    *, plan: FFT | None = None,
) -> ArrayLike: ...


@_row(_C2R, _INVERSE, hermitian=True,
      summary="Compute the N-D FFT of a Hermitian-symmetric signal: a real spectrum.",
      returns="The real transform over ``axes``.", see_also="ihfftn, hfft2, irfftn",
      example=">>> import scipy.fft\n>>> x = np.arange(24.0).reshape(2, 3, 4) + 1j\n"
              ">>> np.allclose(nvmathx.fft.hfftn(x), scipy.fft.hfftn(x))\nTrue")
def hfftn(
    x: ArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: Norm = None,
    overwrite_x: bool = False, workers: int | None = None,
    *, plan: FFT | None = None,
) -> ArrayLike: ...


@_row(_R2C, _FORWARD, hermitian=True,
      summary="Compute the N-D inverse FFT of a real signal with a Hermitian spectrum.",
      returns="The transform over ``axes``; the last holds ``s[-1] // 2 + 1`` terms.", see_also="hfftn, ihfft2, rfftn",
      example=">>> import scipy.fft\n>>> x = np.arange(24.0).reshape(2, 3, 4)\n"
              ">>> np.allclose(nvmathx.fft.ihfftn(x), scipy.fft.ihfftn(x))\nTrue")
def ihfftn(
    x: ArrayLike, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: Norm = None,
    overwrite_x: bool = False, workers: int | None = None,
    *, plan: FFT | None = None,
) -> ArrayLike: ...

