"""A transform over several axes as one pass per axis, for the fused engine: pure functions of shapes.

The fused kernel transforms one axis of rows that fit a thread block. An N-D transform under
``FFTOptions(engine="fused")`` therefore runs one pass per transformed axis (DFTs are separable):
the fused kernel along each axis it fits, cuFFT along the others. The first pass reads the operand
(a load callback attaches to it) and the last writes the result (a store callback and the norm's
factor go to it); the passes between run in place in the result (or a scratch buffer).

- C2C: the innermost axis first, from the operand into the result, then the other axes in place
  in the result (everything in place in the operand when the transform is in place).
- R2C: the real axis first (R2C from the operand into the result), then forward C2C passes in
  place in the result.
- C2R: inverse C2C passes over the other axes, into a complex scratch buffer (in place in the
  operand when it may be overwritten), then the real axis last (C2R into the result).

Layouts that need copies (padding or cropping, a dtype cuFFT does not read) are not split: the
fused engine refuses them, as it refuses them along one axis.
"""

from __future__ import annotations

from dataclasses import dataclass

from .engine import FusedRows, fused_rows
from .layout import (
    C2C,
    C2R,
    INPUT,
    OUTPUT,
    R2C,
    SCRATCH,
    FFTPass,
    LayoutPlan,
    _axis_order,
    _needed_input_shape,
    dense_strides,
    non_overlapping,
    output_shape,
    plan_layout,
)

__all__ = ["AxisPass", "AxisPlan", "axis_passes"]


@dataclass(frozen=True)
class AxisPass:
    """One axis of a split transform: ``layout`` (one FFTPass, from its INPUT to its OUTPUT, or in
    place in its INPUT) run from buffer ``source`` to ``target`` of the whole transform (INPUT,
    OUTPUT or SCRATCH), in ``direction`` (-1 or +1 where the transform fixes it, None for the
    caller's); ``rows`` is :func:`~nvmathx._fftcore.engine.fused_rows`'s answer for it."""

    axis: int
    source: str
    target: str
    direction: int | None
    layout: LayoutPlan
    rows: FusedRows | str

    @property
    def in_place(self) -> bool:
        return self.source == self.target


@dataclass(frozen=True)
class AxisPlan:
    """The passes of a split transform, in order, and the complex scratch buffer (shape and element
    strides) a C2R transform that may not overwrite its operand runs its C2C passes in."""

    fft_type: str
    passes: tuple
    scratch_shape: tuple | None = None
    scratch_strides: tuple | None = None


def _one_pass(layout: LayoutPlan) -> bool:
    return len(layout.steps) == 1 and isinstance(layout.steps[0], FFTPass)


class _Refused(Exception):
    """A pass the split cannot make without copies (its message says why)."""


def _axis_pass(fft_type, axis, length, shape, strides, target_strides, source, target, direction, precision,
               aligned=True) -> AxisPass:
    """One pass over ``axis`` of a buffer of ``shape``/``strides`` into ``target_strides`` (in place when
    ``source == target``). An R2C pass whose rows the fused kernel does not take is planned for
    cuFFT, which reads reals only from an ``aligned`` operand."""
    in_place = source == target
    try:
        layout = plan_layout(fft_type, (axis,), (length,), shape, strides, target_strides, inplace=in_place,
                             overwrite_input=True)
    except ValueError as error:  # an in-place pass over strides that overlap or run backwards
        raise _Refused(f"the pass over axis {axis} cannot run in place ({error})") from None
    rows = fused_rows(layout, precision) if _one_pass(layout) else "copies"
    if fft_type == R2C and not isinstance(rows, FusedRows) and not aligned:
        layout = plan_layout(fft_type, (axis,), (length,), shape, strides, target_strides, overwrite_input=True,
                             input_aligned=False)
    if not _one_pass(layout):
        raise _Refused(f"the pass over axis {axis} needs copies (a layout cuFFT does not read in place)")
    return AxisPass(axis, source, target, direction, layout, rows)


def axis_passes(fft_type, axes, lengths, input_shape, input_strides, out_strides, precision, *, inplace=False,
                overwrite=False, input_aligned=True) -> AxisPlan | str:
    """The transform split into one pass per axis (see the module's description), or why it cannot
    be (a sentence).

    Parameters are :func:`~nvmathx._fftcore.layout.plan_layout`'s (``out_strides``: the result's,
    ignored in place; ``overwrite``: C2R may use its operand as scratch); ``precision`` is
    ``"float32"`` or ``"float64"`` (what the fused kernel computes in).
    """
    shape, axes, lengths = tuple(input_shape), tuple(axes), tuple(lengths)
    if tuple(_needed_input_shape(fft_type, shape, axes, lengths)) != shape:
        return "the operand is padded or cropped along a transformed axis (a copy first)"
    if fft_type != C2C and lengths[-1] == 1:
        return "a one-point real axis runs through copies"
    by_axis = dict(zip(axes, lengths))
    out_shape = output_shape(fft_type, shape, axes, lengths)
    try:
        if fft_type == C2C:
            if not any(by_axis[a] > 1 for a in axes):
                return "no transformed axis is longer than one point (the transform is a copy)"
            return _split_c2c([a for a in axes if by_axis[a] > 1], by_axis, shape, tuple(input_strides),
                              tuple(out_strides), precision, inplace)
        if fft_type == R2C:
            last = axes[-1]
            first = _axis_pass(R2C, last, by_axis[last], shape, input_strides, out_strides, INPUT, OUTPUT, -1,
                               precision, input_aligned)
            rest = _in_place_passes([a for a in axes[:-1] if by_axis[a] > 1], by_axis, out_shape, out_strides,
                                    OUTPUT, -1, precision)
            return AxisPlan(R2C, (first, *rest))
        return _split_c2r(axes, by_axis, shape, tuple(input_strides), out_shape, tuple(out_strides), precision,
                          overwrite)
    except _Refused as refused:
        return str(refused)


def _order(axes, shape, strides) -> list:
    """``axes`` innermost first in a buffer of ``shape``/``strides``."""
    memory_order = _axis_order(shape, strides)
    return sorted(axes, key=lambda axis: -memory_order.index(axis))


def _in_place_passes(axes, by_axis, shape, strides, buffer, direction, precision) -> list:
    return [_axis_pass(C2C, axis, by_axis[axis], shape, strides, strides, buffer, buffer, direction, precision)
            for axis in _order(axes, shape, strides)]


def _split_c2c(axes, by_axis, shape, in_strides, out_strides, precision, inplace) -> AxisPlan:
    if inplace:
        if not non_overlapping(shape, in_strides):
            raise _Refused("an in-place transform needs strides that do not overlap")
        return AxisPlan(C2C, tuple(_in_place_passes(axes, by_axis, shape, in_strides, INPUT, None, precision)))
    first, *rest = _order(axes, shape, out_strides)
    head = _axis_pass(C2C, first, by_axis[first], shape, in_strides, out_strides, INPUT, OUTPUT, None, precision)
    return AxisPlan(C2C, (head, *_in_place_passes(rest, by_axis, shape, out_strides, OUTPUT, None, precision)))


def _split_c2r(axes, by_axis, shape, in_strides, out_shape, out_strides, precision, overwrite) -> AxisPlan:
    last = axes[-1]
    leading = [a for a in axes[:-1] if by_axis[a] > 1]
    scratch_shape = scratch_strides = None
    if not leading:
        source = INPUT
        passes = []
    elif overwrite and non_overlapping(shape, in_strides):  # the inverse C2C passes in the operand itself
        source = INPUT
        passes = _in_place_passes(leading, by_axis, shape, in_strides, INPUT, +1, precision)
    else:
        source, scratch_shape = SCRATCH, shape
        scratch_strides = dense_strides(shape, _axis_order(shape, in_strides))
        first, *rest = _order(leading, shape, scratch_strides)
        passes = [_axis_pass(C2C, first, by_axis[first], shape, in_strides, scratch_strides, INPUT, SCRATCH, +1,
                             precision)]
        passes += _in_place_passes(rest, by_axis, shape, scratch_strides, SCRATCH, +1, precision)
    strides = in_strides if source == INPUT else scratch_strides
    passes.append(_axis_pass(C2R, last, by_axis[last], shape, strides, out_strides, source, OUTPUT, +1, precision))
    return AxisPlan(C2R, tuple(passes), scratch_shape, scratch_strides)
