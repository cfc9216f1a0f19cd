"""One distributed FFT problem, resolved from every rank's local view (pure).

Each rank describes its operand (:func:`describe`, local checks only); the ranks all-gather the
descriptions and each resolves the same global problem from the same list (:func:`resolve`), so
a mismatch raises the same error on every rank.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

import numpy as np

from ..._core.errors import OperandError, OptionsError, UnsupportedLayoutError, UnsupportedOperandError
from .._agree import check_same
from .._distributions import Box, Slab, slab_extents, split_axis
from .._exchange_plan import check_tiling
from ._algorithm import BoxSplit, SlabSplit, decomposition_boxes, output_shape, plan_stages

__all__ = ["Description", "Problem", "describe", "resolve", "normalize_distribution"]

_COMPLEX = ("complex64", "complex128")
_REAL = ("float32", "float64")


@dataclass(frozen=True)
class Description:
    """What one rank says about its operand and arguments (picklable, compared across ranks)."""

    shape: tuple
    dtype: str
    space: str  # "cpu" or "cuda:N"
    distribution: object  # Slab, or (Box, Box)
    axes: tuple  # the transformed axes, non-negative
    fft_type: str
    reshape: bool
    lengths: tuple | None  # C2R: the real result's lengths along the axes (None: from the parity rule)
    options: tuple
    aligned: bool = True  # R2C: the operand's address is aligned to the complex element (cuFFT reads it in place)
    package: str = ""  # the operand's array library (results are made by it)


@dataclass(frozen=True)
class Problem:
    """The global problem and this rank's part of it."""

    global_shape: tuple
    result_shape: tuple
    axes: tuple
    fft_type: str
    dtype: str
    source: SlabSplit | BoxSplit
    result: SlabSplit | BoxSplit  # the decomposition the result is in
    stages: tuple
    rank: int
    world_size: int

    @property
    def input_box(self) -> Box:
        return decomposition_boxes(self.source, self.global_shape, self.world_size)[self.rank]

    @property
    def result_box(self) -> Box:
        return decomposition_boxes(self.result, self.result_shape, self.world_size)[self.rank]

    @property
    def lengths(self) -> tuple:
        """The logical transform lengths (the real side's for R2C / C2R)."""
        shape = self.result_shape if self.fft_type == "C2R" else self.global_shape
        return tuple(shape[axis] for axis in self.axes)


def normalize_distribution(distribution, ndim: int):
    """``Slab.X`` / ``Slab.Y`` (also "X"/"Y"), or a pair of :class:`Box` (input, output)."""
    if isinstance(distribution, Slab):
        return distribution
    if isinstance(distribution, str) and distribution.upper() in ("X", "Y"):
        return Slab(distribution.upper())
    if isinstance(distribution, (tuple, list)) and len(distribution) == 2:
        boxes = tuple(box if isinstance(box, Box) else _box_from_pair(box) for box in distribution)
        for box in boxes:
            if box.ndim != ndim:
                raise OptionsError("distribution", f"a box of the {ndim}-dimensional operand needs {ndim} corners "
                                                   f"(got {box})")
        return boxes
    raise OptionsError("distribution", f"expected Slab.X, Slab.Y or a pair of Boxes (input, output) "
                                       f"(got {distribution!r})")


def _box_from_pair(value):
    try:
        lower, upper = value
    except (TypeError, ValueError):
        raise OptionsError("distribution", f"expected a Box or (lower, upper) (got {value!r})") from None
    return Box(lower, upper)


def _axes(ndim: int, axes) -> tuple:
    if axes is None:
        if ndim not in (2, 3):
            raise OptionsError("axes", f"a {ndim}-dimensional operand needs axes= (the last 2 or 3 axes to transform)")
        return tuple(range(ndim))
    try:
        values = tuple(operator.index(axis) for axis in axes)
    except TypeError:
        raise OptionsError("axes", f"expected a sequence of integers (got {axes!r})") from None
    normalized = tuple(axis % ndim if -ndim <= axis < ndim else None for axis in values)
    if None in normalized or len(values) not in (2, 3) or normalized != tuple(range(ndim - len(values), ndim)):
        raise OptionsError("axes", f"expected the last 2 or 3 axes of the {ndim}-dimensional operand, in order "
                                   f"(got {axes!r})")
    return normalized


def fft_type_of(dtype_name: str, requested) -> str:
    """The transform kind: ``requested``, else C2C for complex and R2C for real operands."""
    if requested is None:
        return "C2C" if dtype_name in _COMPLEX else "R2C"
    return requested


def describe(operand, distribution, axes, fft_type, options, *, lengths=None) -> Description:
    """Check this rank's operand and arguments (locally) and describe them for the other ranks.

    Raises
    ------
    OperandError, UnsupportedOperandError, UnsupportedLayoutError, OptionsError
        Naming the argument.
    """
    if operand.ndim < 2:
        raise OperandError("x", f"expected a 2-D or 3-D global array, or a batch of them (got {operand.ndim}-D)")
    dtype = np.dtype(operand.dtype).name
    kind = fft_type_of(dtype, fft_type)
    wanted = _REAL if kind == "R2C" else _COMPLEX
    if dtype not in wanted:
        raise UnsupportedOperandError("x", f"a distributed {kind} transform takes {' or '.join(wanted)} (got {dtype})")
    if not operand.is_c_contiguous():
        raise UnsupportedLayoutError("x", "the local piece must be C-contiguous", "pass a C-contiguous copy")
    resolved_axes = _axes(operand.ndim, axes)
    resolved = normalize_distribution(distribution, operand.ndim)
    if isinstance(resolved, tuple):
        if resolved[0].shape != tuple(operand.shape):
            raise OperandError("x", f"the local piece has shape {tuple(operand.shape)} but its input box {resolved[0]} "
                                    f"has shape {resolved[0].shape}")
        if not options.reshape:
            raise OptionsError("options.reshape", "box distributions always end in the output box: "
                                                  "reshape=False applies to slabs only")
    if lengths is not None:
        lengths = _lengths(lengths, len(resolved_axes))
    space = "cpu" if operand.device_id < 0 else f"cuda:{operand.device_id}"
    aligned = kind != "R2C" or operand.ptr % (2 * np.dtype(dtype).itemsize) == 0
    return Description(tuple(operand.shape), dtype, space, resolved, resolved_axes, kind, options.reshape,
                       lengths, options.key(), aligned, operand.package)


def _lengths(s, count: int) -> tuple:
    try:
        values = tuple(operator.index(value) for value in s)
    except TypeError:
        raise OptionsError("s", f"expected a sequence of integers (got {s!r})") from None
    if len(values) != count:
        raise OptionsError("s", f"expected one length per transformed axis ({count}) (got {values})")
    if values[-1] < 1:
        raise OptionsError("s", f"the real length of the last axis must be >= 1 (got {values[-1]})")
    return values


def resolve(descriptions, rank: int, *, last_axis_parity: str = "even") -> Problem:
    """The global problem every rank computes from the all-gathered descriptions (same list, same
    result or the same error on every rank)."""
    first = descriptions[0]
    world_size = len(descriptions)
    check_same([d.dtype for d in descriptions], "x", "dtype")
    check_same([d.space for d in descriptions], "x", "execution space (CPU array on some ranks, GPU on others)")
    check_same([len(d.shape) for d in descriptions], "x", "number of dimensions")
    check_same([d.axes for d in descriptions], "axes", "transformed axes")
    check_same([_kind(d.distribution) for d in descriptions], "distribution", "distribution")
    check_same([d.reshape for d in descriptions], "reshape", "reshape choice", error=OptionsError)
    check_same([d.options for d in descriptions], "options", "options")
    check_same([d.lengths for d in descriptions], "s", "output lengths")
    axes, kind = first.axes, first.fft_type
    if isinstance(first.distribution, Slab):
        global_shape = _slab_global_shape([d.shape for d in descriptions], split_axis(first.distribution, axes))
        source: SlabSplit | BoxSplit = SlabSplit(split_axis(first.distribution, axes))
        target = None
    else:
        inputs = [d.distribution[0] for d in descriptions]
        global_shape = check_tiling(inputs, "distribution")
        source = BoxSplit(tuple(inputs))
    last_length = None if first.lengths is None else first.lengths[-1]
    if first.lengths is not None:
        others = tuple(global_shape[axis] for axis in axes[:-1])
        if tuple(first.lengths[:-1]) != others:
            raise OptionsError("s", f"only the last length may differ from the operand's extents {others} "
                                    f"(got {first.lengths})")
    if kind == "C2R" and last_length is None:
        m = global_shape[axes[-1]]
        last_length = 2 * m - 1 if last_axis_parity == "odd" else 2 * (m - 1)
        if last_length < 1:
            raise OperandError("x", f"a C2R transform needs at least 2 points along the last axis (got {m})")
    result_shape = output_shape(global_shape, axes, kind, last_length)
    if isinstance(source, BoxSplit):
        outputs = [d.distribution[1] for d in descriptions]
        check_tiling(outputs, "distribution", result_shape)
        target = BoxSplit(tuple(outputs))
    _check_slabs_fit(global_shape, result_shape, axes, kind, world_size)
    stages, result = plan_stages(global_shape, axes, kind, source, reshape=first.reshape, target=target,
                                 last_length=last_length)
    return Problem(global_shape, result_shape, axes, kind, first.dtype, source, result, stages, rank, world_size)


def _kind(distribution):
    return distribution if isinstance(distribution, Slab) else "boxes"


def _slab_global_shape(shapes, axis: int) -> tuple:
    others = {tuple(extent for i, extent in enumerate(shape) if i != axis) for shape in shapes}
    if len(others) != 1:
        raise OperandError("x", f"the local pieces of a slab distribution must agree on every axis but {axis} "
                                f"(got {[tuple(s) for s in shapes]})")
    total = sum(shape[axis] for shape in shapes)
    expected = slab_extents(total, len(shapes))
    for rank, (shape, (start, stop)) in enumerate(zip(shapes, expected)):
        if shape[axis] != stop - start:
            raise OperandError("x", f"rank {rank} holds {shape[axis]} planes along axis {axis}, but the slab "
                                    f"distribution of {total} planes over {len(shapes)} ranks gives it {stop - start} "
                                    "(the first n % P ranks hold one plane more)")
    global_shape = list(shapes[0])
    global_shape[axis] = total
    return tuple(global_shape)


def _check_slabs_fit(global_shape, result_shape, axes, kind, world_size) -> None:
    """Every slab the algorithm passes through gives every rank at least one plane."""
    for shape in (global_shape, result_shape):
        for axis in axes[:2]:
            if shape[axis] < world_size:
                raise OperandError("x", f"axis {axis} of the global shape {shape} has fewer planes ({shape[axis]}) "
                                        f"than there are ranks ({world_size}): the slab transposes need at least one "
                                        "plane per rank")
