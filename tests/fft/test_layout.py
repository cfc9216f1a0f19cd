"""The layout decomposition, on shapes and strides alone and executed with numpy."""

import itertools

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from nvmathx._fftcore.layout import (
    C2C,
    C2R,
    R2C,
    CopyStep,
    FFTPass,
    dense_strides,
    loop_count,
    non_overlapping,
    output_shape,
    plan_layout,
    result_strides,
)

from ._emulate import element_offset, run_plan


def _strides(view):
    return tuple(s // view.itemsize for s in view.strides)


def _reference(fft_type, x, axes, lengths, direction):
    if fft_type == R2C:
        return np.fft.rfftn(x, s=lengths, axes=axes)
    if fft_type == C2R:
        return np.fft.irfftn(x, s=lengths, axes=axes, norm="forward")
    if direction < 0:
        return np.fft.fftn(x, s=lengths, axes=axes)
    return np.fft.ifftn(x, s=lengths, axes=axes, norm="forward")


def check(fft_type, view, flat, axes, lengths=None, direction=-1, out_strides=None, overwrite=False, inplace=False):
    """Plan ``view`` (a strided view into ``flat``), run the plan with numpy, compare with numpy.fft."""
    if lengths is None:
        lengths = [view.shape[a] for a in axes]
        if fft_type == C2R:
            lengths[-1] = 2 * (view.shape[axes[-1]] - 1)
    lengths = tuple(lengths)
    out_shape = output_shape(fft_type, view.shape, axes, lengths)
    if out_strides is None:
        out_strides = result_strides(out_shape, view.shape, _strides(view))
    reference = _reference(fft_type, view.copy(), axes, lengths, direction)
    plan = plan_layout(fft_type, tuple(axes), lengths, view.shape, _strides(view), out_strides,
                       overwrite_input=overwrite, inplace=inplace)
    for step in plan.steps:
        if isinstance(step, FFTPass):
            assert 1 <= len(step.n) <= 3
            assert step.istride > 0 and step.ostride > 0 and step.idist > 0 and step.odist > 0
            assert_aligned(step)
    if not (overwrite or inplace):
        before = flat.copy()
    result = run_plan(plan, flat, element_offset(view, flat), direction, inplace=inplace)
    assert result.shape == reference.shape
    np.testing.assert_allclose(result, reference, rtol=1e-10, atol=1e-9 * max(1.0, np.abs(reference).max()))
    if not (overwrite or inplace):
        np.testing.assert_array_equal(flat, before)  # the operand is never written
    return plan


def assert_aligned(step):
    """cuFFT's real transforms read (R2C) or write (C2R) reals only at even offsets from an aligned base."""
    if step.fft_type == R2C:
        assert all(s % 2 == 0 for e, s in zip(step.loop_shape, step.loop_source_strides) if e > 1), step
    if step.fft_type == C2R:
        assert all(s % 2 == 0 for e, s in zip(step.loop_shape, step.loop_target_strides) if e > 1), step


def _flat(size, dtype, rng):
    if np.dtype(dtype).kind == "c":
        return rng.standard_normal(size) + 1j * rng.standard_normal(size)
    return rng.standard_normal(size)



# -- plans for common layouts: one pass, no copies ------------------------------------------------


@pytest.mark.parametrize("fft_type", [C2C, R2C])
@pytest.mark.parametrize("shape,axes", [((64,), (0,)), ((8, 32), (1,)), ((8, 32), (0, 1)), ((4, 6, 8), (0, 1, 2)),
                                        ((5, 4, 6, 8), (1, 2, 3))])
def test_contiguous_is_one_pass(fft_type, shape, axes, rng):
    flat = _flat(int(np.prod(shape)), complex if fft_type == C2C else float, rng)
    plan = check(fft_type, flat.reshape(shape), flat, axes)
    assert plan.simple
    assert len(plan.steps) == 1


def test_batched_last_axis_parameters():
    plan = plan_layout(C2C, (1,), (256,), (65536, 256), (256, 1), (256, 1))
    (step,) = plan.steps
    assert (step.n, step.istride, step.idist, step.batch, step.loop_shape) == ((256,), 1, 256, 65536, ())


def test_first_axis_of_c_array_is_strided_batch():
    plan = plan_layout(C2C, (0,), (16,), (16, 32), (32, 1), (32, 1))
    (step,) = plan.steps
    assert (step.n, step.istride, step.idist, step.batch) == ((16,), 32, 1, 32)


def test_middle_axis_loops_over_outer_batch(rng):
    flat = _flat(4 * 5 * 6, complex, rng)
    plan = check(C2C, flat.reshape(4, 5, 6), flat, (1,))
    (step,) = plan.steps
    assert step.batch == 6 and step.loop_shape == (4,)


# -- decompositions -----------------------------------------------------------------------------------


def test_four_axes_take_two_passes(rng):
    flat = _flat(3 * 4 * 5 * 6, complex, rng)
    plan = check(C2C, flat.reshape(3, 4, 5, 6), flat, (0, 1, 2, 3))
    passes = [s for s in plan.steps if isinstance(s, FFTPass)]
    assert [len(p.n) for p in passes] == [3, 1]
    assert passes[0].source == "input" and passes[1].in_place


@pytest.mark.parametrize("fft_type", [C2C, R2C, C2R])
def test_five_axes(fft_type, rng):
    shape = (2, 3, 4, 3, 6)
    flat = _flat(int(np.prod(shape)), float if fft_type == R2C else complex, rng)
    check(fft_type, flat.reshape(shape), flat, (0, 1, 2, 3, 4))


def test_transposed_operand(rng):
    flat = _flat(6 * 8 * 10, complex, rng)
    view = flat.reshape(6, 8, 10).transpose(2, 0, 1)
    plan = check(C2C, view, flat, (0, 1, 2))
    assert plan.simple


def test_rfft_along_strided_axis(rng):
    flat = _flat(16 * 12, float, rng)
    view = flat.reshape(16, 12).T  # the real axis is the outer one in memory
    plan = check(R2C, view, flat, (0, 1))
    assert not any(isinstance(s, CopyStep) for s in plan.steps)


def test_negative_strides_copy_first(rng):
    flat = _flat(10 * 12, complex, rng)
    view = flat.reshape(10, 12)[::-1, ::-2]
    plan = check(C2C, view, flat, (0, 1))
    assert isinstance(plan.steps[0], CopyStep) and plan.steps[0].target == "output"


def test_negative_batch_stride_loops_without_copy(rng):
    flat = _flat(10 * 12, complex, rng)
    view = flat.reshape(10, 12)[::-1]
    plan = check(C2C, view, flat, (1,))
    assert not plan.copies_input
    assert loop_count(plan) == 10


def test_broadcast_operand(rng):
    flat = _flat(8, complex, rng)
    view = np.broadcast_to(flat, (5, 8))
    check(C2C, view, flat, (1,))
    plan = check(C2C, view, flat, (0, 1))
    assert not plan.simple  # a zero stride along a transformed axis cannot be read by one plan


@pytest.mark.parametrize("fft_type", [C2C, R2C, C2R])
def test_padding_and_cropping(fft_type, rng):
    flat = _flat(6 * 9, float if fft_type == R2C else complex, rng)
    view = flat.reshape(6, 9)
    plan = check(fft_type, view, flat, (0, 1), lengths=(8, 7))
    assert plan.steps[0].zero_fill
    check(fft_type, view, flat, (0, 1), lengths=(4, 6))


def test_c2r_copies_unless_overwrite_allowed(rng):
    flat = _flat(8 * 9, complex, rng)
    view = flat.reshape(8, 9)
    plan = check(C2R, view, flat, (0, 1))
    assert plan.copies_input and plan.steps[0].target == "scratch"
    plan = check(C2R, view, flat, (0, 1), overwrite=True)
    assert not plan.copies_input


def test_c2r_odd_length(rng):
    flat = _flat(8 * 5, complex, rng)
    check(C2R, flat.reshape(8, 5), flat, (0, 1), lengths=(8, 9))


def test_inplace(rng):
    flat = _flat(4 * 6 * 8, complex, rng)
    view = flat.reshape(4, 6, 8)[:, ::2]
    plan = check(C2C, view, flat, (1, 2), inplace=True)
    assert all(step.in_place for step in plan.steps)
    with pytest.raises(ValueError):
        plan_layout(C2C, (0,), (8,), (8,), (0,), (1,), inplace=True)


def test_length_one_axes(rng):
    flat = _flat(1 * 5, complex, rng)
    check(C2C, flat.reshape(1, 5), flat, (0,))
    check(C2C, flat.reshape(1, 5), flat, (0, 1))
    flat = _flat(3, float, rng)
    check(R2C, flat.reshape(3, 1), flat, (1,))
    flat = _flat(3, complex, rng)
    check(C2R, flat.reshape(3, 1), flat, (1,), lengths=(1,))


def test_fortran_result_layout(rng):
    flat = _flat(6 * 8, complex, rng)
    view = flat.reshape(6, 8)
    check(C2C, view, flat, (0, 1), out_strides=(1, 6))
    real = flat.real.copy()
    check(R2C, real.reshape(6, 8), real, (0, 1), out_strides=(1, 6))


def test_helpers():
    assert dense_strides((2, 3, 4), (0, 1, 2)) == (12, 4, 1)
    assert dense_strides((2, 3, 4), (2, 1, 0)) == (1, 2, 6)
    assert result_strides((4, 5), (4, 5), (1, 4)) == (1, 4)
    assert output_shape(R2C, (4, 10), (1,), (10,)) == (4, 6)
    assert output_shape(C2R, (4, 6), (1,), (11,)) == (4, 11)
    assert non_overlapping((3, 4), (4, 1))
    assert not non_overlapping((3, 4), (2, 1))
    assert not non_overlapping((3, 4), (0, 1))


# -- exhaustive sweep over small layouts -------------------------------------------------------------


def _layouts():
    for shape in [(4,), (5, 6), (3, 4, 5)]:
        ndim = len(shape)
        for perm in itertools.permutations(range(ndim)):
            for steps in itertools.product((1, 2, -1), repeat=ndim):
                yield shape, perm, steps


@pytest.mark.parametrize("fft_type", [C2C, R2C, C2R])
def test_sweep(fft_type, rng):
    count = 0
    for shape, perm, steps in _layouts():
        big = tuple(e * abs(s) for e, s in zip(shape, steps))
        flat = _flat(int(np.prod(big)), float if fft_type == R2C else complex, rng)
        view = flat.reshape(big)[tuple(slice(None, None, s) for s in steps)].transpose(perm)
        ndim = view.ndim
        for r in range(1, ndim + 1):
            for axes in itertools.combinations(range(ndim), r):
                if fft_type == C2R and view.shape[axes[-1]] < 2:
                    continue
                check(fft_type, view, flat, axes)
                count += 1
    assert count > 100


# -- hypothesis over shapes, strides, axes and lengths ----------------------------------------------


@st.composite
def _problems(draw):
    ndim = draw(st.integers(1, 5))
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=ndim, max_size=ndim)))
    steps = tuple(draw(st.lists(st.sampled_from([1, 2, 3, -1, -2]), min_size=ndim, max_size=ndim)))
    perm = draw(st.permutations(range(ndim)))
    axes = tuple(draw(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True)))
    fft_type = draw(st.sampled_from([C2C, R2C, C2R]))
    lengths = tuple(draw(st.integers(1, 7)) for _ in axes)
    broadcast = draw(st.booleans())
    return shape, steps, perm, axes, fft_type, lengths, broadcast


@settings(max_examples=150, deadline=None)
@given(_problems())
@example(((2, 2, 1), (1, 1, 1), [0, 1, 2], (0, 2, 1), "R2C", (2, 1, 2), True))  # zero stride inside an embedding
def test_hypothesis(problem):
    shape, steps, perm, axes, fft_type, lengths, broadcast = problem
    rng = np.random.default_rng(0)
    big = tuple(e * abs(s) for e, s in zip(shape, steps))
    flat = _flat(int(np.prod(big)), float if fft_type == R2C else complex, rng)
    view = flat.reshape(big)[tuple(slice(None, None, s) for s in steps)].transpose(perm)
    if broadcast:
        view = np.broadcast_to(view[:1], view.shape)
    check(fft_type, view, flat, axes, lengths=lengths)


@pytest.mark.parametrize("fft_type", [R2C, C2R])
def test_one_point_real_axis(fft_type, rng):
    flat = _flat(4 * 3, float if fft_type == R2C else complex, rng)
    view = flat.reshape(4, 3)
    plan = check(fft_type, view, flat, (0, 1), lengths=(4, 1))
    assert all(step.fft_type == C2C for step in plan.steps if isinstance(step, FFTPass))
    check(fft_type, view, flat, (1,), lengths=(1,))


def test_copy_input_forces_a_first_copy(rng):
    flat = _flat(8 * 8, complex, rng)
    plan = check(C2C, flat.reshape(8, 8), flat, (0, 1))
    assert not plan.copies_input
    plan = plan_layout(C2C, (0, 1), (8, 8), (8, 8), (8, 1), (8, 1), copy_input=True)
    assert plan.copies_input and not plan.steps[0].zero_fill


def test_r2c_loops_never_read_at_odd_real_offsets(rng):
    # The first GPU run's falsifying case: rfftn over axis 0 of a (2, 2, 2) view transposed (0, 2, 1),
    # into a C-ordered result (as cupy allocates): batch axes that do not nest loop at odd offsets.
    flat = _flat(8, np.float64, rng)
    view = flat.reshape(2, 2, 2).transpose(0, 2, 1)
    plan = check(R2C, view, flat, (0,), out_strides=(4, 2, 1))
    assert isinstance(plan.steps[0], CopyStep) and plan.steps[0].target == "scratch"
    # An odd real length between batch axes: the batch loop of a direct pass would step 15 reals.
    flat = _flat(45, np.float64, rng)
    plan = check(R2C, flat.reshape(3, 5, 3), flat, (1,))
    assert isinstance(plan.steps[0], CopyStep)


def test_r2c_misaligned_operand_copies_first():
    plan = plan_layout(R2C, (1,), (8,), (4, 8), (8, 1), (5, 1), input_aligned=False)
    assert isinstance(plan.steps[0], CopyStep) and plan.steps[0].source == "input"
    assert plan_layout(R2C, (1,), (8,), (4, 8), (8, 1), (5, 1)).simple


def test_c2r_with_odd_output_loops_runs_in_place_in_scratch(rng):
    flat = _flat(27, np.complex128, rng)
    plan = check(C2R, flat.reshape(3, 3, 3), flat, (1,), lengths=(5,))
    kinds = [(type(step).__name__, step.source, step.target) for step in plan.steps]
    assert ("FFTPass", "scratch", "scratch_real") in kinds and kinds[-1] == ("CopyStep", "scratch_real", "output")
