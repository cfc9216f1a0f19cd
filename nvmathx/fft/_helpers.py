"""scipy.fft's helper functions: sample frequencies and zero-frequency shifts."""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType
from typing import Any, overload

import numpy as np

from .._codegen.elementwise import can_copy, copy_nd
from .._core.errors import UnsupportedOperandError
from .._core.streams import resolve_stream
from .._core.tensor import allocate_like, host_array, wrap_operand
from ..typing import AnyArray, ArrayLike, ArrayT, HostArrayLike, NumpyArrayT
from ._arguments import normalize_axes

__all__ = ["fftfreq", "rfftfreq", "fftshift", "ifftshift"]


def _in_namespace(values: np.ndarray, xp, device):
    if xp is None:
        return values
    return xp.asarray(values) if device is None else xp.asarray(values, device=device)


def fftfreq(n: int, d: float = 1.0, *, xp: ModuleType | None = None, device: Any = None) -> AnyArray:
    """Return the sample frequencies of an ``n``-point DFT with sample spacing ``d``.

    Parameters
    ----------
    n : int
        Window length.
    d : float, optional
        Sample spacing (the inverse of the sampling rate).
    xp : module, optional
        The array namespace of the result (``numpy`` by default; e.g. ``cupy`` or ``torch``).
    device : optional
        The device of the result, as ``xp.asarray`` takes it.

    Returns
    -------
    f : array
        ``[0, 1, ..., n/2-1, -n/2, ..., -1] / (d * n)`` for even ``n``.

    Raises
    ------
    ValueError
        For ``n`` < 1 (from numpy).

    See Also
    --------
    rfftfreq, fftshift

    Examples
    --------
    >>> import nvmathx.fft
    >>> nvmathx.fft.fftfreq(4, d=0.5).tolist()
    [0.0, 0.5, -1.0, -0.5]
    """
    return _in_namespace(np.fft.fftfreq(n, d), xp, device)


def rfftfreq(n: int, d: float = 1.0, *, xp: ModuleType | None = None, device: Any = None) -> AnyArray:
    """Return the sample frequencies of :func:`rfft` for an ``n``-point signal.

    Parameters
    ----------
    n : int
        Window length.
    d : float, optional
        Sample spacing.
    xp : module, optional
        The array namespace of the result (``numpy`` by default).
    device : optional
        The device of the result, as ``xp.asarray`` takes it.

    Returns
    -------
    f : array
        ``[0, 1, ..., n//2] / (d * n)``.

    Raises
    ------
    ValueError
        For ``n`` < 1 (from numpy).

    See Also
    --------
    fftfreq, rfft

    Examples
    --------
    >>> import nvmathx.fft
    >>> nvmathx.fft.rfftfreq(4).tolist()
    [0.0, 0.25, 0.5]
    """
    return _in_namespace(np.fft.rfftfreq(n, d), xp, device)


def _shift(x, axes, inverse: bool):
    operand = wrap_operand(x, "x", array_like=True)
    axes = tuple(range(operand.ndim)) if axes is None else normalize_axes(operand.ndim, axes)
    if operand.device_id < 0:
        if not axes:  # a 0-d array: a copy, as on the GPU (numpy.roll cannot take no axis)
            return operand.adapter.from_host(host_array(operand).copy())
        function = np.fft.ifftshift if inverse else np.fft.fftshift
        return operand.adapter.from_host(function(host_array(operand), axes))
    if not can_copy(operand.dtype, operand.dtype):
        raise UnsupportedOperandError("x", f"GPU shifts take float32/64 and complex64/128 arrays (got {operand.dtype})")
    stream = resolve_stream(None, operand.device_id, operand.adapter.current_stream)
    result = allocate_like(operand, operand.shape, operand.dtype, operand.device_id, stream)
    itemsize = operand.dtype.itemsize
    for blocks in np.ndindex(*(2,) * len(axes)):
        shape, source, target = list(operand.shape), 0, 0
        for block, axis in zip(blocks, axes):
            extent = operand.shape[axis]
            cut = extent // 2 if inverse else extent - extent // 2  # where the second block starts
            start, length, moved_to = (0, cut, extent - cut) if block == 0 else (cut, extent - cut, 0)
            shape[axis] = length
            source += start * operand.strides[axis]
            target += moved_to * result.strides[axis]
        copy_nd(operand.ptr + source * itemsize, result.ptr + target * itemsize, shape, operand.strides,
                result.strides, operand.dtype, operand.dtype, 1.0, False, stream, operand.device_id)
    return result.obj


@overload
def fftshift(x: NumpyArrayT, axes: int | Sequence[int] | None = None) -> np.ndarray: ...
@overload
def fftshift(x: HostArrayLike, axes: int | Sequence[int] | None = None) -> np.ndarray: ...
@overload
def fftshift(x: ArrayT, axes: int | Sequence[int] | None = None) -> ArrayT: ...
def fftshift(x: ArrayLike, axes: int | Sequence[int] | None = None) -> AnyArray:
    """Shift the zero-frequency term to the centre of the spectrum.

    Parameters
    ----------
    x : array_like
        The spectrum: numpy (shifted by numpy) or a GPU array (shifted by one strided copy per
        block, without leaving the device).
    axes : int or sequence of int, optional
        The axes to shift (default: all).

    Returns
    -------
    y : array
        A new array of ``x``'s library.

    Raises
    ------
    OptionsError
        For out-of-range or repeated axes.

    See Also
    --------
    ifftshift, fftfreq

    Examples
    --------
    >>> import nvmathx.fft
    >>> nvmathx.fft.fftshift(nvmathx.fft.fftfreq(5)).tolist()
    [-0.4, -0.2, 0.0, 0.2, 0.4]
    """
    return _shift(x, axes, inverse=False)


@overload
def ifftshift(x: NumpyArrayT, axes: int | Sequence[int] | None = None) -> np.ndarray: ...
@overload
def ifftshift(x: HostArrayLike, axes: int | Sequence[int] | None = None) -> np.ndarray: ...
@overload
def ifftshift(x: ArrayT, axes: int | Sequence[int] | None = None) -> ArrayT: ...
def ifftshift(x: ArrayLike, axes: int | Sequence[int] | None = None) -> AnyArray:
    """The inverse of :func:`fftshift` (they differ for odd lengths).

    Parameters
    ----------
    x : array_like
        The shifted spectrum (numpy or a GPU array).
    axes : int or sequence of int, optional
        The axes to shift (default: all).

    Returns
    -------
    y : array
        A new array of ``x``'s library.

    Raises
    ------
    OptionsError
        For out-of-range or repeated axes.

    See Also
    --------
    fftshift

    Examples
    --------
    >>> import nvmathx.fft
    >>> nvmathx.fft.ifftshift(nvmathx.fft.fftshift([0, 1, 2, 3, 4])).tolist()
    [0, 1, 2, 3, 4]
    """
    return _shift(x, axes, inverse=True)
