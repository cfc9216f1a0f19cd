"""The engine choice (cuFFT or the fused cuFFTDx kernel): pure functions of the planned layout."""

import numpy as np
import pytest

import nvmathx.fft as nfft
from helpers.requirements import needs_mathdx
from nvmathx._core.errors import OptionsError
from nvmathx._fftcore.engine import (
    ENGINES,
    MAX_FUSED_SIZE,
    MEASURED_FASTER,
    FusedRows,
    choose_engine,
    faster_families,
    fused_considered,
    fused_rows,
)
from nvmathx._fftcore.layout import C2C, C2R, R2C, plan_layout
from nvmathx.fft._fused import FusedPlan, launch_offsets


def _contiguous(shape):
    return tuple(int(s) for s in np.array(np.empty(shape, np.int8).strides))


def test_rows_along_the_last_axis():
    layout = plan_layout(C2C, (1,), (1024,), (300, 1024), (1024, 1), (1024, 1))
    assert fused_rows(layout, "float32") == FusedRows(C2C, 1024, 300, "float32", 1024, 1, 1024, 1)


def test_rows_along_a_strided_axis():
    # axis 0 of a C-ordered (256, 7) operand: each row is a column, element stride 7, row stride 1
    layout = plan_layout(C2C, (0,), (256,), (256, 7), (7, 1), (7, 1))
    assert fused_rows(layout, "float64") == FusedRows(C2C, 256, 7, "float64", 1, 7, 1, 7)


def test_real_transforms_count_reals_on_the_real_side():
    r2c = plan_layout(R2C, (1,), (64,), (4, 64), (64, 1), (33, 1))
    assert fused_rows(r2c, "float32") == FusedRows(R2C, 64, 4, "float32", 64, 1, 33, 1)
    # planned as the fused engine plans it: its kernel does not write the operand
    c2r = plan_layout(C2R, (1,), (64,), (4, 33), (33, 1), (64, 1), overwrite_input=True)
    assert fused_rows(c2r, "float64") == FusedRows(C2R, 64, 4, "float64", 33, 1, 64, 1)


def test_rows_in_place_read_and_write_the_same_layout():
    layout = plan_layout(C2C, (1,), (64,), (10, 64), (64, 1), (64, 1), inplace=True)
    rows = fused_rows(layout, "float32")
    assert isinstance(rows, FusedRows)
    assert (rows.in_row_stride, rows.in_element_stride) == (rows.out_row_stride, rows.out_element_stride) == (64, 1)


@pytest.mark.parametrize(
    "arguments, kwargs, reason",
    [
        ((C2R, (1,), (64,), (4, 33), (33, 1), (64, 1)), {}, "copies"),  # cuFFT's C2R may not overwrite x
        ((C2C, (0, 1), (16, 16), (16, 16), (16, 1), (16, 1)), {}, "one axis per launch"),
        ((C2C, (1,), (64,), (4, 64), (64, 1), (64, 1)), {"copy_input": True}, "copies"),
        ((C2C, (1,), (128,), (4, 64), (64, 1), (128, 1)), {}, "copies"),  # zero padding
        ((C2C, (1,), (1 << 16,), (2, 1 << 16), (1 << 16, 1), (1 << 16, 1)), {}, "does not fit one thread block"),
    ],
)
def test_transforms_the_fused_kernel_cannot_run_say_why(arguments, kwargs, reason):
    layout = plan_layout(*arguments, **kwargs)
    answer = fused_rows(layout, "float32")
    assert isinstance(answer, str) and reason in answer


def test_a_batch_without_one_row_stride_is_fused_in_one_launch_per_outer_index():
    # axis 1 of a (3, 64, 5) operand: the batch (3 x 5) has two strides that do not collapse
    shape = (3, 64, 5)
    strides = _contiguous(shape)
    layout = plan_layout(C2C, (1,), (64,), shape, strides, strides)
    assert layout.steps[0].loop_shape == (3,)  # cuFFT runs it as 3 executions of 5 rows
    rows = fused_rows(layout, "float32")
    assert isinstance(rows, FusedRows)
    assert (rows.rows, rows.in_row_stride, rows.in_element_stride) == (5, 1, 5)
    assert rows.loop_offsets == ((0, 0), (320, 320), (640, 640))
    assert launch_offsets(rows, 8, 8) == ((0, 0), (2560, 2560), (5120, 5120))
    single = fused_rows(plan_layout(C2C, (1,), (64,), (3, 64), (64, 1), (64, 1)), "float32")
    assert single.loop_offsets == () and launch_offsets(single, 8, 8) == ((0, 0),)


@pytest.mark.parametrize("role", ["prolog", "epilog"])
def test_callbacks_on_a_batch_launched_in_a_loop_are_refused(role):
    """As cuFFT's engine refuses them: every launch would count offsets from its own first row."""
    shape = (3, 64, 5)
    rows = fused_rows(plan_layout(C2C, (1,), (64,), shape, _contiguous(shape), _contiguous(shape)), "float32")
    with pytest.raises(OptionsError, match=f"{role}.*3 launches"):
        FusedPlan(rows, 0, **{role: object()})


@pytest.mark.parametrize("precision", ["float32", "float64"])
def test_largest_length_per_precision(precision):
    largest = MAX_FUSED_SIZE[precision]
    fits = plan_layout(C2C, (0,), (largest,), (largest,), (1,), (1,))
    too_long = plan_layout(C2C, (0,), (2 * largest,), (2 * largest,), (1,), (1,))
    assert isinstance(fused_rows(fits, precision), FusedRows)
    assert isinstance(fused_rows(too_long, precision), str)


_ROWS = FusedRows(C2C, 1024, 8, "float32", 1024, 1, 1024, 1)
_C2R_ROWS = FusedRows(C2R, 64, 8, "float32", 33, 1, 64, 1)
_FASTER = {"faster": True}  # MEASURED_FASTER lists the transform for this GPU's family


@pytest.mark.parametrize("rows, hints, kernel, engine, reason, looked_up", [
    (_ROWS, {}, "absent", "cufft", "a plain transform", False),
    (_ROWS, {}, "cached", "cufft", "a plain transform", False),  # no measured table yet
    (_ROWS, {"callbacks": True}, "absent", "fused", "callbacks run inside the fused kernel", True),
    (_ROWS, {"callbacks": True}, "cached", "fused", "callbacks", True),
    (_ROWS, {"scaled": True}, "cached", "fused", "scale is applied in the fused kernel's store", True),
    (_ROWS, {"scaled": True}, "absent", "cufft", "not in the disk cache", True),  # never waits on generation
    (_ROWS, {"callbacks": True}, "libmathdx is not available", "cufft", "libmathdx is not available", True),
    (_ROWS, {"scaled": True}, "a length of 1024 needs 99 bytes", "cufft", "needs 99 bytes", True),
    (_C2R_ROWS, {"callbacks": True, "conjugated": True}, "absent", "cufft", "does not conjugate a C2R operand",
     False),
    (_C2R_ROWS, {"callbacks": True}, "absent", "fused", "callbacks", True),
    (_C2R_ROWS, _FASTER, "cached", "fused", "measured faster than cuFFT", True),
    (_C2R_ROWS, _FASTER, "absent", "cufft", "not in the disk cache", True),  # never waits on generation
    (_C2R_ROWS, {**_FASTER, "conjugated": True}, "cached", "cufft", "does not conjugate", False),
    (_C2R_ROWS, {**_FASTER, "scaled": True}, "cached", "fused", "scale is applied", True),
    ("it transforms one axis per launch", {"callbacks": True}, "absent", "cufft", "one axis per launch", False),
])
def test_auto_takes_the_fused_kernel_for_callbacks_and_cached_scales(rows, hints, kernel, engine, reason,
                                                                    looked_up):
    chosen, why = choose_engine("auto", rows, kernel=kernel, **hints)
    assert chosen == engine and reason in why and "options.engine='auto'" in why
    # the kernel's state is looked up (on disk, through libmathdx) only where it can change the answer
    assert fused_considered("auto", rows, **hints) == looked_up
    assert not fused_considered("cufft", rows, **hints) and not fused_considered("fused", rows, **hints)


def test_the_measured_table_lists_clear_wins_by_gpu_family():
    c2r_4096 = FusedRows(C2R, 4096, 16384, "float32", 2049, 1, 4096, 1)
    assert 9 in faster_families(c2r_4096)
    assert faster_families(_ROWS) == frozenset() and faster_families("a reason") == frozenset()
    for (fft_type, size, precision), families in MEASURED_FASTER.items():
        assert fft_type in (C2C, R2C, C2R) and 2 <= size <= MAX_FUSED_SIZE[precision] and families


def test_choice_table():
    rows = FusedRows(C2C, 1024, 8, "float32", 1024, 1, 1024, 1)
    assert choose_engine("cufft", rows)[0] == "cufft"
    assert choose_engine("fused", rows)[0] == "fused"
    assert choose_engine("auto", rows)[0] == "cufft"  # no measured table yet
    assert choose_engine("auto", "this layout needs copies")[0] == "cufft"
    with pytest.raises(OptionsError, match="options.engine.*needs copies"):
        choose_engine("fused", "this layout needs copies")
    with pytest.raises(OptionsError, match="options.engine"):
        choose_engine("fastest", rows)


def test_options_take_every_engine_and_the_cpu_reports_scipy(rng):
    for engine in ENGINES:
        assert nfft.FFTOptions(engine=engine).engine == engine
    x = rng.standard_normal(16) + 1j * rng.standard_normal(16)
    fft = nfft.FFT(x, options={"engine": "cufft"})
    assert fft.engine is None
    fft.plan()
    assert fft.engine == "scipy"
    np.testing.assert_allclose(fft.execute(), np.fft.fft(x), rtol=1e-12, atol=1e-12)


@needs_mathdx
def test_fused_descriptor_fits_the_blocks_shared_memory_or_is_refused():
    from nvmathx.fft._fused import _descriptor

    fits = _descriptor(FusedRows(C2C, 1000, 10, "float32", 1000, 1, 1000, 1), "forward", (9, 0))
    assert fits.size == 1000 and fits.shared_memory_size <= 48 * 1024
    large = _descriptor(FusedRows(C2C, 8192, 10, "float32", 8192, 1, 8192, 1), "forward", (9, 0))
    assert large.shared_memory_size <= 227 * 1024
    from nvmathx._bindings import mathdx

    if mathdx.version()[:2] < (0, 4):  # libmathdx 0.4's cuFFTDx picks a layout that fits in 33 KiB
        assert large.shared_memory_size > 48 * 1024  # launched after opting in
    # even real lengths fold two reals into each complex value: a transform of half the length
    real = _descriptor(FusedRows(R2C, 4096, 10, "float32", 4096, 1, 2049, 1), None, (9, 0))
    assert (real.fft_type, real.real_mode, real.input_length, real.output_length) == ("r2c", "folded", 2048, 2049)
    odd = _descriptor(FusedRows(C2R, 15, 10, "float64", 8, 1, 15, 1), None, (9, 0))
    assert (odd.fft_type, odd.real_mode, odd.input_length, odd.output_length) == ("c2r", "normal", 8, 15)
    # cuFFTDx folds most even lengths, not all of them
    unfolded = _descriptor(FusedRows(R2C, 100, 10, "float64", 100, 1, 51, 1), None, (9, 0))
    assert (unfolded.real_mode, unfolded.input_length) == ("normal", 100)
    with pytest.raises(OptionsError, match="options.engine.*no cuFFTDx implementation on sm_75"):
        _descriptor(FusedRows(C2C, 32768, 10, "float32", 32768, 1, 32768, 1), "forward", (7, 5))


@needs_mathdx
def test_kernel_state_reads_the_disk_cache_the_plan_fills(monkeypatch, tmp_path):
    # no GPU needed: the descriptors, the cache keys and the link into sm_90 cubins all run here
    import types

    from nvmathx._codegen import fused_fft
    from nvmathx._core import device
    from nvmathx._core.errors import CudaLibraryError
    from nvmathx.device_api import set_cache_dir
    from nvmathx.fft import _fused

    monkeypatch.setattr(device, "ensure_device", lambda device_id: types.SimpleNamespace(compute_capability=(9, 0)))
    set_cache_dir(tmp_path)
    try:
        rows = FusedRows(C2C, 256, 10, "float32", 256, 1, 256, 1)
        assert _fused.kernel_state(rows, 0) == "absent"
        def build(direction):  # as the plan builds it
            fft = _fused._descriptor(rows, direction, (9, 0))
            fused_fft.fused_kernel(fft, **_fused._kernel_options(rows, fft, (9, 0)))

        build("forward")
        assert _fused.kernel_state(rows, 0) == "absent"  # a C2C plan needs both directions
        fused_fft.fused_kernel(_fused._descriptor(rows, "inverse", (9, 0)))
        assert _fused.kernel_state(rows, 0) == "absent"  # compiled for other rows (element strides)
        build("inverse")
        assert _fused.kernel_state(rows, 0) == "cached"
        real = FusedRows(R2C, 256, 10, "float32", 256, 1, 129, 1)
        assert _fused.kernel_state(real, 0) == "absent"  # each transform has its own kernel
        monkeypatch.setattr(device, "ensure_device", lambda device_id: types.SimpleNamespace(compute_capability=(7, 0)))
        too_big = FusedRows(C2C, 32768, 10, "float32", 32768, 1, 32768, 1)
        assert "options.engine" in _fused.kernel_state(too_big, 0)  # not on sm_70: a reason, not an error

        def refused(*args, **kwargs):
            raise CudaLibraryError(7, "COMMONDX_INVALID_VALUE", "cufftdxGetTraitInt64")

        monkeypatch.setattr(_fused, "_block_fft", refused)
        assert "could not describe" in _fused.kernel_state(rows, 0)
    finally:
        set_cache_dir(None)


@needs_mathdx
def test_measured_knobs_replace_the_suggestion_on_their_gpu_family():
    from nvmathx.fft._fused import _descriptor

    rows = FusedRows(C2C, 1024, 16384, "float32", 1024, 1, 1024, 1)
    hopper = _descriptor(rows, "forward", (9, 0))
    assert (hopper.elements_per_thread, hopper.ffts_per_block) == (16, 1)
    ampere = _descriptor(rows, "forward", (8, 0))
    assert (ampere.elements_per_thread, ampere.ffts_per_block) != (16, 1)


@needs_mathdx
@pytest.mark.parametrize("in_element_stride, out_element_stride", [(1, 1), (3, 1), (1, 5), (2, 2)])
def test_the_kernel_compiles_in_the_unit_element_strides_of_its_rows(in_element_stride, out_element_stride):
    from nvmathx.fft._fused import _descriptor, _kernel_options

    rows = FusedRows(C2C, 1024, 64, "float32", 1024 * in_element_stride, in_element_stride,
                     1024 * out_element_stride, out_element_stride)
    options = _kernel_options(rows, _descriptor(rows, "forward", (9, 0)), (9, 0))
    assert options["unit_strides"] == (in_element_stride == 1, out_element_stride == 1)
    assert options["dense_rows"] == options["unit_strides"]  # rows 1024 elements apart: dense where unit


@needs_mathdx
@pytest.mark.parametrize("fft_type, in_row_stride, out_row_stride, dense", [
    ("C2C", 1024, 1024, (True, True)), ("C2C", 1100, 1024, (False, True)), ("R2C", 4096, 2049, (True, True)),
    ("R2C", 4098, 2049, (False, True)), ("C2R", 2049, 4096, (True, True)), ("C2R", 2049, 4100, (True, False))])
def test_the_kernel_compiles_in_dense_row_strides(fft_type, in_row_stride, out_row_stride, dense):
    from nvmathx.fft._fused import _descriptor, _kernel_options

    size = 1024 if fft_type == "C2C" else 4096
    rows = FusedRows(fft_type, size, 64, "float32", in_row_stride, 1, out_row_stride, 1)
    fft = _descriptor(rows, "forward" if fft_type == "C2C" else None, (9, 0))
    assert _kernel_options(rows, fft, (9, 0))["dense_rows"] == dense
