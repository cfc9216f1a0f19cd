"""scipy.fft's ``n``/``s`` and ``axis``/``axes`` arguments, normalised and checked (pure)."""

from __future__ import annotations

from .._core.errors import OptionsError
from .._core.options import as_index

__all__ = ["normalize_axes", "shape_and_axes", "one_axis"]


def _as_int(value, argument):
    number = as_index(value)  # bools, Python's or numpy's, are refused: True is no length or axis
    if number is None:
        raise OptionsError(argument, f"expected an integer (got {type(value).__name__})")
    return number


def _int_tuple(value, argument):
    if isinstance(value, (str, bytes)):
        raise OptionsError(argument, f"expected a sequence of integers (got {value!r})")
    try:
        return tuple(_as_int(item, argument) for item in value)
    except TypeError:
        return (_as_int(value, argument),)


def normalize_axes(ndim: int, axes, argument: str = "axes", *, allow_empty: bool = False) -> tuple:
    """Non-negative, distinct axes of an ``ndim``-dimensional operand (integers of any kind that
    ``operator.index`` takes, numpy's included, except bools).

    Raises
    ------
    OptionsError
        For repeated or out-of-range axes, or none unless ``allow_empty`` (the message names
        ``argument``).
    """
    axes = _int_tuple(axes, argument)
    if not axes and not allow_empty:
        raise OptionsError(argument, "expected at least one axis (got an empty sequence)")
    result = []
    for axis in axes:
        if not -ndim <= axis < ndim:
            raise OptionsError(argument, f"axis {axis} is out of range for an operand with {ndim} dimension(s)")
        result.append(axis % ndim)
    if len(set(result)) != len(result):
        raise OptionsError(argument, f"axes must be distinct (got {axes})")
    return tuple(result)


def shape_and_axes(shape, s, axes, *, s_argument: str = "s", axes_argument: str = "axes",
                   allow_empty: bool = False) -> tuple:
    """(lengths, axes) for an n-dimensional transform, as scipy.fft resolves them.

    ``axes=None`` means every axis, or the last ``len(s)`` axes when ``s`` is given; ``s=None`` keeps
    the operand's extents, and an entry of -1 in ``s`` keeps that one extent. No axis at all
    (``axes=[]``, ``s=[]`` without axes, or a 0-d operand without either) gives ``((), ())`` where
    ``allow_empty``, else an OptionsError naming ``axes`` (``x`` for the 0-d operand).
    """
    ndim = len(shape)
    if axes is None:
        if s is None:
            if ndim == 0 and not allow_empty:
                raise OptionsError("x", "expected an array with at least one dimension (got a 0-d array)")
            axes = tuple(range(ndim))  # (none for a 0-d array, as numpy.fft and scipy.fft take it)
        else:
            s = _int_tuple(s, s_argument)
            if len(s) > ndim:
                raise OptionsError(s_argument, f"has {len(s)} entries but the operand has {ndim} dimension(s)")
            axes = tuple(range(ndim - len(s), ndim))
    axes = normalize_axes(ndim, axes, axes_argument, allow_empty=allow_empty)
    if s is None:
        return tuple(shape[axis] for axis in axes), axes
    s = _int_tuple(s, s_argument)
    if len(s) != len(axes):
        raise OptionsError(s_argument, f"has {len(s)} entries but {len(axes)} axes are transformed")
    lengths = []
    for length, axis in zip(s, axes):
        if length == -1:
            length = shape[axis]
        if length < 1:
            raise OptionsError(s_argument, f"transform lengths must be >= 1 (got {length})")
        lengths.append(length)
    return tuple(lengths), axes


def one_axis(shape, n, axis) -> tuple:
    """(lengths, axes) of a one-dimensional transform (``n``, ``axis`` as scipy.fft takes them)."""
    ndim = len(shape)
    if ndim == 0:
        raise OptionsError("x", "expected an array with at least one dimension (got a 0-d array)")
    (axis,) = normalize_axes(ndim, (_as_int(axis, "axis"),), "axis")
    if n is None:
        return (shape[axis],), (axis,)
    n = _as_int(n, "n")
    if n < 1:
        raise OptionsError("n", f"the transform length must be >= 1 (got {n})")
    return (n,), (axis,)
