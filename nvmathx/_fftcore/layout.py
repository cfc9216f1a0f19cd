"""How a transform over any axes and strides becomes cuFFT executions: pure functions of shapes.

cuFFT's advanced layout transforms at most three axes per plan, addressed as
``base + b * dist + stride * (((i0 * nembed[1]) + i1) * nembed[2] + i2)``, with one batch
dimension. A transform that does not fit (more axes, axes whose strides do not nest, batch axes
that do not collapse into one, negative or zero strides, padding) is decomposed here into a list
of steps:

- :class:`CopyStep`: a strided copy into a dense buffer (with zero fill when padding);
- :class:`FFTPass`: one cuFFT plan, executed once per outer-loop offset;

applied in order. cuFFT's real transforms also need the real side's pointer aligned to the
complex element (cupy/cupy#9229): an R2C pass never reads, nor a C2R pass writes, at an odd real
offset; such layouts (and a misaligned operand) go through a scratch buffer whose real axis is
innermost and of even extent. Multi-dimensional DFTs are separable, so a C2C transform may run as several
passes over subsets of its axes; R2C runs its real pass first, C2R last. Every step is described
by shapes and element strides only, so this module is tested on a machine without a GPU, including
by executing the steps with numpy (``tests/fft/test_layout.py``).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import NamedTuple

__all__ = [
    "C2C",
    "R2C",
    "C2R",
    "INPUT",
    "OUTPUT",
    "SCRATCH",
    "SCRATCH_REAL",
    "CopyStep",
    "FFTPass",
    "LayoutPlan",
    "dense_strides",
    "result_strides",
    "output_shape",
    "plan_layout",
    "real_input_aligned",
    "non_overlapping",
    "loop_count",
    "callback_passes",
]

C2C, R2C, C2R = "C2C", "R2C", "C2R"
MAX_RANK = 3  # cuFFT plans transform at most three axes

INPUT, OUTPUT, SCRATCH = "input", "output", "scratch"
SCRATCH_REAL = "scratch_real"  # the complex scratch buffer read as reals (in-place C2R writes it)


@dataclass(frozen=True)
class CopyStep:
    """Copy ``shape`` elements from ``source`` to ``target`` (same element type).

    ``zero_fill`` asks for the whole target buffer to be zeroed first (padding). The normalisation
    scale, when there is one, is applied by this copy.
    """

    source: str
    target: str
    shape: tuple
    source_strides: tuple
    target_strides: tuple
    zero_fill: bool


@dataclass(frozen=True)
class FFTPass:
    """One cuFFT plan: ``fft_type`` over ``n`` (logical lengths, real length for R2C/C2R).

    ``direction`` is -1 or +1 when the pass's direction is fixed by the transform (the C2C passes
    that follow an R2C or precede a C2R), or None when it follows the caller's direction. The
    plan runs once per outer-loop offset: ``loop_shape`` with element strides in the source and
    target buffers.
    """

    fft_type: str
    source: str
    target: str
    direction: int | None
    n: tuple
    inembed: tuple
    istride: int
    idist: int
    onembed: tuple
    ostride: int
    odist: int
    batch: int
    loop_shape: tuple = ()
    loop_source_strides: tuple = ()
    loop_target_strides: tuple = ()

    @property
    def in_place(self) -> bool:
        return self.source == self.target

    def loop_offsets(self):
        """(source offset, target offset) in elements, one pair per execution."""
        if not self.loop_shape:
            return [(0, 0)]
        offsets = []
        for index in itertools.product(*(range(extent) for extent in self.loop_shape)):
            offsets.append(
                (
                    sum(i * s for i, s in zip(index, self.loop_source_strides)),
                    sum(i * s for i, s in zip(index, self.loop_target_strides)),
                )
            )
        return offsets


@dataclass(frozen=True)
class LayoutPlan:
    """The steps of one transform and the buffers they use (shapes and element strides)."""

    fft_type: str
    input_shape: tuple
    input_strides: tuple
    output_shape: tuple
    output_strides: tuple
    scratch_shape: tuple | None
    scratch_strides: tuple | None
    scratch_is_complex: bool
    steps: tuple

    @property
    def copies_input(self) -> bool:
        """True when a copy reads the input first (the normalisation scale is then folded into it)."""
        return bool(self.steps) and isinstance(self.steps[0], CopyStep)

    @property
    def simple(self) -> bool:
        """One cuFFT execution from input to output, no copies or loops."""
        return len(self.steps) == 1 and isinstance(self.steps[0], FFTPass) and not self.steps[0].loop_shape


# --------------------------------------------------------------------------------------------------
# Strides of buffers we allocate.


def dense_strides(shape, order) -> tuple:
    """Strides of a dense array of ``shape`` whose axes, outermost to innermost, are ``order``."""
    strides = [0] * len(shape)
    step = 1
    for axis in reversed(order):
        strides[axis] = step
        step *= max(shape[axis], 1)
    return tuple(strides)


def _axis_order(shape, strides) -> list:
    """Axes from outermost to innermost memory order (largest stride first; ties keep axis order)."""
    return sorted(range(len(shape)), key=lambda axis: (-abs(strides[axis]) if shape[axis] > 1 else 0, axis))


def result_strides(result_shape, operand_shape, operand_strides) -> tuple:
    """Dense strides for a result that keeps the operand's axis order (numpy's ``order="K"``),
    so that batch axes that collapse in the operand collapse in the result too."""
    order = _axis_order(operand_shape, operand_strides)
    return dense_strides(result_shape, order)


def _with_lengths(shape, axes, lengths, half_spectrum: bool) -> tuple:
    """``shape`` with ``lengths`` along ``axes``, the last one holding ``n // 2 + 1`` values when it is
    a half spectrum (an R2C result, a C2R input)."""
    result = list(shape)
    for axis, length in zip(axes, lengths):
        result[axis] = length
    if half_spectrum:
        result[axes[-1]] = lengths[-1] // 2 + 1
    return tuple(result)


def output_shape(fft_type, shape, axes, lengths) -> tuple:
    """The result's shape: ``lengths`` (logical transform lengths) along ``axes``; the last axis of an
    R2C result holds ``n // 2 + 1`` values."""
    return _with_lengths(shape, axes, lengths, fft_type == R2C)


def _needed_input_shape(fft_type, shape, axes, lengths) -> tuple:
    return _with_lengths(shape, axes, lengths, fft_type == C2R)


def _span(shape, strides) -> int:
    return sum((extent - 1) * abs(stride) for extent, stride in zip(shape, strides)) + 1


def _tidy_strides(shape, strides) -> tuple:
    """Give extent-1 axes a positive stride past the data, so they never block an embedding."""
    span = _span(shape, strides)
    return tuple(stride if extent > 1 else span for extent, stride in zip(shape, strides))


# --------------------------------------------------------------------------------------------------
# Embeddings and batches.


def _embedding(order, extents, strides):
    """cuFFT's (nembed, stride) for axes ``order`` (outermost first) of one buffer, or None."""
    unit = strides[order[-1]]
    if unit <= 0:
        return None
    nembed = [extents[order[0]]]
    for outer, inner in zip(order, order[1:]):
        if strides[inner] <= 0:
            return None
        ratio, remainder = divmod(strides[outer], strides[inner])
        if remainder or ratio < extents[inner]:
            return None
        nembed.append(ratio)
    return tuple(nembed), unit


def _pass_order(axes, strides, last):
    """Axes of a pass, outermost first, ``last`` (the real axis of R2C/C2R) forced innermost."""
    rest = sorted((a for a in axes if a != last), key=lambda a: (-strides[a], a))
    if last is not None:
        return rest + [last]
    return sorted(axes, key=lambda a: (-strides[a], a))


def _pick_pass(candidates, last, src, tgt):
    """The largest subset of ``candidates`` (at most three axes, containing ``last`` when given)
    that embeds in both buffers; ``src`` and ``tgt`` are (extents, strides) pairs.

    Returns the ordered axes and both embeddings, or None when not even one axis embeds.
    """
    pool = [a for a in candidates if a != last]
    pool.sort(key=lambda a: (tgt[1][a], a))  # prefer inner axes: better memory access
    for size in range(min(MAX_RANK, len(candidates)), 0, -1):
        extra = size - (last is not None)
        for subset in itertools.combinations(pool, extra):
            axes = list(subset) + ([last] if last is not None else [])
            order = _pass_order(axes, tgt[1], last)
            src_embedding = _embedding(order, *src)
            tgt_embedding = _embedding(order, *tgt)
            if src_embedding is not None and tgt_embedding is not None:
                return order, src_embedding, tgt_embedding
    return None


def _batch_and_loops(axes, extents, src_strides, tgt_strides):
    """Split the non-transformed axes into cuFFT's single batch dimension and outer loops.

    Axes merge into one group when they nest in both buffers; the largest group with positive
    strides becomes the batch, every other group an outer loop.
    """
    groups = []  # each: [extent, src stride, tgt stride] of a collapsed run of axes
    long_axes = (a for a in axes if extents[a] > 1)
    for axis in sorted(long_axes, key=lambda a: (abs(tgt_strides[a]), abs(src_strides[a]), a)):
        if groups:
            extent, src, tgt = groups[-1]
            if src_strides[axis] == src * extent and tgt_strides[axis] == tgt * extent:
                groups[-1][0] *= extents[axis]
                continue
        groups.append([extents[axis], src_strides[axis], tgt_strides[axis]])
    batchable = [g for g in groups if g[1] > 0 and g[2] > 0]
    if not batchable:
        return (1, 1, 1), groups
    batch = max(batchable, key=lambda g: g[0])
    groups.remove(batch)
    return tuple(batch), groups


def _make_pass(fft_type, direction, order, source, target, src, tgt, src_embed, tgt_embed, lengths):
    (extents, src_strides), (tgt_extents, tgt_strides) = src, tgt
    batch_axes = [a for a in range(len(extents)) if a not in order]
    (batch, idist, odist), loops = _batch_and_loops(batch_axes, extents, src_strides, tgt_strides)
    if batch == 1:
        idist = _span([extents[a] for a in order], [src_strides[a] for a in order])
        odist = _span([tgt_extents[a] for a in order], [tgt_strides[a] for a in order])
    return FFTPass(
        fft_type, source, target, direction, tuple(lengths[a] for a in order),
        src_embed[0], src_embed[1], idist, tgt_embed[0], tgt_embed[1], odist, batch,
        tuple(g[0] for g in loops), tuple(g[1] for g in loops), tuple(g[2] for g in loops),
    )


def _c2c_passes(axes, direction, buffer, extents, strides, lengths, first_source=None, first_strides=None):
    """C2C passes over ``axes`` into ``buffer`` (in place after the first, which may read another
    buffer ``first_source``)."""
    passes = []
    remaining = list(axes)
    source, src_strides = (first_source, first_strides) if first_source is not None else (buffer, strides)
    while remaining:
        picked = _pick_pass(remaining, None, (extents, src_strides), (extents, strides))
        if picked is None:
            return None
        order, src_embed, tgt_embed = picked
        passes.append(_make_pass(C2C, direction, order, source, buffer, (extents, src_strides),
                                 (extents, strides), src_embed, tgt_embed, lengths))
        remaining = [a for a in remaining if a not in order]
        source, src_strides = buffer, strides
    return passes


# --------------------------------------------------------------------------------------------------
# The planner.


def real_input_aligned(fft_type, pointer: int, itemsize: int) -> bool:
    """Whether cuFFT can read an operand at ``pointer`` directly: its R2C reads reals only from an
    address aligned to the complex element (twice the real size); other types are always fine."""
    return fft_type != R2C or pointer % (2 * itemsize) == 0


def plan_layout(fft_type, axes, lengths, input_shape, input_strides, out_strides, *, inplace=False,
                overwrite_input=False, copy_input=False, input_aligned=True) -> LayoutPlan:
    """Decompose a transform into cuFFT passes and copies.

    Parameters
    ----------
    fft_type : {"C2C", "R2C", "C2R"}
    axes : tuple of int
        Transformed axes (non-negative, distinct); the last is the real axis of R2C/C2R.
    lengths : tuple of int
        Logical transform length along each of ``axes`` (the real length for R2C/C2R).
    input_shape, input_strides : tuple of int
        The operand (strides in elements; any sign). Along ``axes`` it may be shorter than needed
        (zero padding) or longer (cropping).
    out_strides : tuple of int
        Strides of the result, of shape :func:`output_shape` (ignored when ``inplace``).
    inplace : bool
        C2C only: the result overwrites the operand.
    overwrite_input : bool
        C2R only: the operand may be used as scratch (cuFFT's C2R overwrites its input).
    copy_input : bool
        Read the operand with a copy first whatever its layout (the copy converts its dtype).
    input_aligned : bool
        R2C: whether the operand's pointer is aligned to the complex element (cuFFT reads a real
        operand directly only then).

    Returns
    -------
    LayoutPlan
    """
    ndim = len(input_shape)
    needed = _needed_input_shape(fft_type, input_shape, axes, lengths)
    out_shape = output_shape(fft_type, input_shape, axes, lengths)
    lengths_by_axis = [1] * ndim
    for axis, length in zip(axes, lengths):
        lengths_by_axis[axis] = length
    if fft_type == C2C:
        # Length-1 axes transform as the identity: drop them.
        axes = tuple(a for a in axes if lengths_by_axis[a] > 1)
    padded = any(have < need for have, need in zip(input_shape, needed))
    region = tuple(min(have, need) for have, need in zip(input_shape, needed))
    in_strides = _tidy_strides(region, input_strides)
    if inplace:
        return _plan_inplace(axes, lengths_by_axis, needed, region, in_strides, input_strides, padded)
    out_strides = _tidy_strides(out_shape, out_strides)
    order = _axis_order(out_shape, out_strides)
    planner = {C2C: _plan_c2c, R2C: _plan_r2c, C2R: _plan_c2r}[fft_type]
    if fft_type != C2C and lengths_by_axis[axes[-1]] == 1:
        # A one-point real axis: R2C is a C2C of the widened operand, C2R the real part of a C2C.
        axes = tuple(a for a in axes[:-1] if lengths_by_axis[a] > 1)
        planner = _plan_r2c_one if fft_type == R2C else _plan_c2r_one
    must_copy = padded or copy_input or (fft_type == R2C and not input_aligned)
    steps, scratch = planner(_Problem(axes, lengths_by_axis, needed, region, in_strides, out_shape, out_strides, order,
                                      padded, must_copy, overwrite_input))
    scratch_shape, scratch_strides = scratch if scratch else (None, None)
    return LayoutPlan(fft_type, region, tuple(input_strides), out_shape, out_strides, scratch_shape,
                      scratch_strides, fft_type != R2C, tuple(steps))


def _copy(source, target, region, in_strides, target_strides, padded):
    return CopyStep(source, target, region, in_strides, target_strides, padded)


class _Problem(NamedTuple):
    """One out-of-place transform as the planners below see it (strides tidied, lengths by axis)."""

    axes: tuple  # transformed axes, the real one last
    lengths: list  # transform length along every axis (1 where not transformed)
    needed: tuple  # the input extents the transform reads
    region: tuple  # the part of the operand that holds them (smaller where zero padded)
    in_strides: tuple
    out_shape: tuple
    out_strides: tuple
    order: list  # the result's axes, outermost first
    padded: bool  # the operand is shorter than needed along some axis
    must_copy: bool  # read the operand through a copy whatever its layout
    overwrite: bool  # C2R: the operand may be overwritten


def _copy_input(problem: _Problem, target, target_strides):
    return _copy(INPUT, target, problem.region, problem.in_strides, target_strides, problem.padded)


def _plan_c2c(problem: _Problem):
    axes, lengths, out_shape, out_strides = problem.axes, problem.lengths, problem.out_shape, problem.out_strides
    if not axes:
        return [_copy_input(problem, OUTPUT, out_strides)], None
    if not problem.must_copy:
        passes = _c2c_passes(axes, None, OUTPUT, out_shape, out_strides, lengths, INPUT, problem.in_strides)
        if passes is not None:
            return passes, None
    # Padding, or strides cuFFT cannot read: copy into the result, then transform in place.
    steps = [_copy_input(problem, OUTPUT, out_strides)]
    return steps + _c2c_passes(axes, None, OUTPUT, out_shape, out_strides, lengths), None


def _even_real_offsets(step: FFTPass, strides) -> bool:
    """Whether every loop offset of ``step`` on its real side (``strides``) keeps cuFFT's alignment."""
    return all(stride % 2 == 0 for extent, stride in zip(step.loop_shape, strides) if extent > 1)


def _real_innermost_strides(shape, order, last, pad=True) -> tuple:
    """Dense strides in ``order`` with axis ``last`` moved innermost (and padded to an even extent):
    every other axis then has an even stride, so loop offsets stay aligned."""
    extents = list(shape)
    if pad:
        extents[last] += extents[last] % 2
    strides = dense_strides(extents, [a for a in order if a != last] + [last])
    return strides


def _plan_r2c(problem: _Problem):
    axes, lengths, needed, out_shape, out_strides = (problem.axes, problem.lengths, problem.needed,
                                                     problem.out_shape, problem.out_strides)
    last = axes[-1]
    steps, source, src = [], INPUT, (needed, problem.in_strides)
    picked = None if problem.must_copy else _pick_pass(axes, last, src, (out_shape, out_strides))
    if picked is not None:
        first = _make_pass(R2C, -1, picked[0], INPUT, OUTPUT, src, (out_shape, out_strides), picked[1], picked[2],
                           lengths)
        if not _even_real_offsets(first, first.loop_source_strides):
            picked = None
    scratch = None
    if picked is None:  # copy the real operand into an aligned scratch buffer first
        scratch = (needed, _real_innermost_strides(needed, problem.order, last))
        steps.append(_copy_input(problem, SCRATCH, scratch[1]))
        source, src = SCRATCH, scratch
        picked = _pick_pass(axes, last, src, (out_shape, out_strides))
    order_, src_embed, tgt_embed = picked
    steps.append(_make_pass(R2C, -1, order_, source, OUTPUT, src, (out_shape, out_strides), src_embed,
                            tgt_embed, lengths))
    rest = [a for a in axes if a not in order_]
    steps += _c2c_passes(rest, -1, OUTPUT, out_shape, out_strides, lengths)
    return steps, scratch


def _plan_c2r(problem: _Problem):
    axes, lengths, needed, out_shape, out_strides = (problem.axes, problem.lengths, problem.needed,
                                                     problem.out_shape, problem.out_strides)
    last = axes[-1]
    steps, scratch = [], None
    source, src = INPUT, (needed, problem.in_strides)
    if problem.must_copy or not problem.overwrite or not _c2r_fits(axes, last, src, (out_shape, out_strides)):
        scratch = (needed, dense_strides(needed, problem.order))
        steps.append(_copy_input(problem, SCRATCH, scratch[1]))
        source, src = SCRATCH, scratch
    order_, src_embed, tgt_embed = _pick_pass(axes, last, src, (out_shape, out_strides))
    final = _make_pass(C2R, +1, order_, source, OUTPUT, src, (out_shape, out_strides), src_embed, tgt_embed, lengths)
    if not _even_real_offsets(final, final.loop_target_strides):
        return _plan_c2r_aligned(problem)
    rest = [a for a in axes if a not in order_]
    steps += _c2c_passes(rest, +1, source, src[0], src[1], lengths)
    steps.append(final)
    return steps, scratch


def _plan_c2r_aligned(problem: _Problem):
    """C2R whose result loops would land at odd real offsets: run it in place in a scratch buffer
    (complex, real axis innermost; read as reals its other strides double, so stay even), then copy
    the real values out."""
    axes, lengths, needed, out_shape, out_strides = (problem.axes, problem.lengths, problem.needed,
                                                     problem.out_shape, problem.out_strides)
    last = axes[-1]
    complex_strides = _real_innermost_strides(needed, problem.order, last, pad=False)
    real_strides = tuple(1 if axis == last else 2 * stride for axis, stride in enumerate(complex_strides))
    scratch = (needed, complex_strides)
    steps = [_copy_input(problem, SCRATCH, complex_strides)]
    src, tgt = (needed, complex_strides), (out_shape, real_strides)
    order_, src_embed, tgt_embed = _pick_pass(axes, last, src, tgt)
    rest = [a for a in axes if a not in order_]
    steps += _c2c_passes(rest, +1, SCRATCH, needed, complex_strides, lengths)
    steps.append(_make_pass(C2R, +1, order_, SCRATCH, SCRATCH_REAL, src, tgt, src_embed, tgt_embed, lengths))
    steps.append(_copy(SCRATCH_REAL, OUTPUT, out_shape, real_strides, out_strides, False))
    return steps, scratch


def _plan_r2c_one(problem: _Problem):
    return _plan_c2c(problem._replace(must_copy=True))


def _plan_c2r_one(problem: _Problem):
    needed = problem.needed
    scratch = (needed, dense_strides(needed, problem.order))
    steps = [_copy_input(problem, SCRATCH, scratch[1])]
    steps += _c2c_passes(problem.axes, +1, SCRATCH, needed, scratch[1], problem.lengths)
    steps.append(_copy(SCRATCH, OUTPUT, problem.out_shape, scratch[1], problem.out_strides, False))
    return steps, scratch


def _c2r_fits(axes, last, src, tgt) -> bool:
    """Whether C2R can run in the operand itself (cuFFT writes into it): positive strides, no two
    elements sharing memory, and a final pass that embeds."""
    extents, strides = src
    return non_overlapping(extents, strides) and _pick_pass(axes, last, src, tgt) is not None


def non_overlapping(shape, strides) -> bool:
    """True when every stride of an axis longer than 1 is positive and no two elements share memory
    (sufficient test: the axes nest when sorted by stride)."""
    reach = 1
    for extent, stride in sorted(((e, s) for e, s in zip(shape, strides) if e > 1), key=lambda pair: pair[1]):
        if stride < reach:
            return False
        reach = stride * extent
    return True


def _plan_inplace(axes, lengths, needed, region, in_strides, raw_strides, padded):
    shape = tuple(region)
    if padded or any(n != have for n, have in zip(needed, region)):
        raise ValueError("an in-place transform keeps the operand's shape")
    if not axes:
        steps = ()
    else:
        passes = _c2c_passes(axes, None, INPUT, shape, in_strides, lengths)
        if passes is None or not non_overlapping(shape, raw_strides):
            raise ValueError("an in-place transform needs positive strides along the transformed axes")
        steps = tuple(passes)
    return LayoutPlan(C2C, shape, tuple(raw_strides), shape, tuple(raw_strides), None, None, True, steps)


def loop_count(plan: LayoutPlan) -> int:
    """How many cuFFT executions the plan makes."""
    return sum(math.prod(step.loop_shape) for step in plan.steps if isinstance(step, FFTPass))


def callback_passes(plan: LayoutPlan, inplace: bool = False) -> tuple:
    """(index of the step that can take a load callback, of the step that can take a store callback),
    None where no step can.

    A load callback sees the operand's own elements only when the first step is a cuFFT pass reading
    the operand in one execution (no outer loop: every execution would restart the offsets); a store
    callback sees the result's elements only when the last step is a pass writing the result so.
    Layouts that copy the operand first (padding, dtype conversion, misalignment) or the result last
    have no such step; one pass may take both.
    """
    result = INPUT if inplace else OUTPUT
    steps = plan.steps
    load = store = None
    if steps and isinstance(steps[0], FFTPass) and steps[0].source == INPUT and not steps[0].loop_shape:
        load = 0
    if steps and isinstance(steps[-1], FFTPass) and steps[-1].target == result and not steps[-1].loop_shape:
        store = len(steps) - 1
    return load, store
