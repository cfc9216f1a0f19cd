"""``FFTOptions(engine="fused")`` over several axes: one pass per axis, the fused kernel along each
axis it fits and cuFFT along the others. The split itself (pure) and its execution through the GPU
code path on the host stand-in (``_fake_device.py``: the fused plan and cuFFT are numpy there),
against numpy in float64. The fused kernel itself runs in tests/device_api/test_fused_fft_host.py
and, split by axis, in tests/fft/test_fused_engine_gpu.py."""

import numpy as np
import pytest

import nvmathx.fft as nfft
from nvmathx._core.errors import OptionsError
from nvmathx._fftcore import callbacks as _callbacks
from nvmathx._fftcore import engine as _engine
from nvmathx._fftcore.axis_passes import axis_passes
from nvmathx._fftcore.engine import FusedRows
from nvmathx._fftcore.layout import C2C, C2R, INPUT, OUTPUT, R2C, SCRATCH, dense_strides

from ._fake_device import FakeFusedPlan, to_device, to_host


def _c_strides(shape):
    return dense_strides(shape, list(range(len(shape))))


# -- the split (pure) ---------------------------------------------------------------------------------


def test_a_2d_c2c_transform_runs_its_rows_first_then_its_columns_in_place():
    shape = (48, 64)
    split = axis_passes(C2C, (0, 1), shape, shape, (64, 1), (64, 1), "float64")
    assert [(p.axis, p.source, p.target, p.direction) for p in split.passes] == [(1, INPUT, OUTPUT, None),
                                                                                 (0, OUTPUT, OUTPUT, None)]
    rows, columns = (p.rows for p in split.passes)
    assert (rows.size, rows.rows, rows.in_row_stride, rows.in_element_stride) == (64, 48, 64, 1)
    assert (columns.size, columns.rows, columns.in_row_stride, columns.in_element_stride) == (48, 64, 1, 64)
    assert split.scratch_shape is None


def test_a_real_transform_runs_its_real_axis_first_and_its_inverse_last():
    shape = (12, 16, 32)
    r2c = axis_passes(R2C, (0, 1, 2), (12, 16, 32), shape, _c_strides(shape), _c_strides((12, 16, 17)), "float32")
    assert [(p.axis, p.layout.fft_type, p.direction) for p in r2c.passes] == [(2, R2C, -1), (1, C2C, -1),
                                                                              (0, C2C, -1)]
    assert [p.in_place for p in r2c.passes] == [False, True, True]
    half = (12, 16, 17)
    c2r = axis_passes(C2R, (0, 1, 2), (12, 16, 32), half, _c_strides(half), _c_strides(shape), "float32")
    assert [(p.axis, p.source, p.target, p.direction) for p in c2r.passes] == [
        (1, INPUT, SCRATCH, 1), (0, SCRATCH, SCRATCH, 1), (2, SCRATCH, OUTPUT, 1)]
    assert (c2r.scratch_shape, c2r.scratch_strides) == (half, _c_strides(half))  # the operand is not written
    mine = axis_passes(C2R, (0, 1, 2), (12, 16, 32), half, _c_strides(half), _c_strides(shape), "float32",
                       overwrite=True)
    assert [(p.axis, p.source, p.target) for p in mine.passes] == [(1, INPUT, INPUT), (0, INPUT, INPUT),
                                                                   (2, INPUT, OUTPUT)]
    assert mine.scratch_shape is None


def test_the_middle_axis_of_a_3d_operand_runs_one_launch_per_outer_index():
    shape = (3, 20, 16)
    split = axis_passes(C2C, (0, 1, 2), shape, shape, _c_strides(shape), _c_strides(shape), "float64")
    middle = next(p for p in split.passes if p.axis == 1)
    assert isinstance(middle.rows, FusedRows) and len(middle.rows.loop_offsets) == 3
    assert [p.axis for p in split.passes] == [2, 1, 0]


def test_an_axis_too_long_for_a_block_is_left_to_cufft():
    split = axis_passes(C2C, (0, 1), (4, 40000), (4, 40000), (40000, 1), (40000, 1), "float32")
    assert isinstance(split.passes[0].rows, str) and "does not fit one thread block" in split.passes[0].rows
    assert isinstance(split.passes[1].rows, FusedRows)


@pytest.mark.parametrize("fft_type, lengths, shape, why", [
    (C2C, (32, 40), (32, 32), "padded or cropped"),
    (C2C, (16, 16), (32, 32), "padded or cropped"),
    (R2C, (8, 1), (8, 1), "one-point real axis"),
    (C2C, (1, 1), (1, 1), "no transformed axis"),
])
def test_layouts_that_need_copies_are_not_split(fft_type, lengths, shape, why):
    out = tuple(lengths[:-1]) + ((lengths[-1] // 2 + 1,) if fft_type == R2C else (lengths[-1],))
    split = axis_passes(fft_type, (0, 1), lengths, shape, _c_strides(shape), _c_strides(out), "float64")
    assert isinstance(split, str) and why in split


def test_an_in_place_split_over_overlapping_strides_is_refused():
    split = axis_passes(C2C, (0, 1), (4, 4), (4, 4), (1, 1), (4, 1), "float64", inplace=True)
    assert isinstance(split, str) and "overlap" in split


# -- execution on the host stand-in ----------------------------------------------------------------


@pytest.fixture
def fake(fake_with):
    return fake_with("absent")  # engine="fused" builds what it needs


def _signal(rng, shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def _close(got, expected):
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10 * np.abs(expected).max())


def _fused(x, **options):
    fft = nfft.FFT(x, axes=options.pop("axes", None), options={"engine": "fused", **options})
    fft.plan()
    return fft


@pytest.mark.parametrize("shape", [(6, 8), (5, 6, 8), (3, 1, 4, 8)])
def test_c2c_over_every_axis_matches_numpy_both_ways(fake, rng, shape):
    x = _signal(rng, shape)
    with _fused(to_device(x)) as fft:
        assert fft.engine == "fused" and "one pass per axis" in fft._transform.engine_reason
        _close(to_host(fft.execute("forward")), np.fft.fftn(x))
        _close(to_host(fft.execute("inverse")), np.fft.ifftn(x) * x.size)
    assert len(FakeFusedPlan.made) == sum(extent > 1 for extent in shape)


def test_c2c_over_some_axes_of_a_transposed_view_and_in_place(fake, rng):
    x = _signal(rng, (6, 7, 8)).transpose(2, 0, 1)  # strides that are not C order
    with _fused(to_device(x), axes=[0, 2]) as fft:
        _close(to_host(fft.execute()), np.fft.fftn(x, axes=(0, 2)))
    device = to_device(x)
    with _fused(device, axes=[0, 1, 2], inplace=True) as fft:
        assert to_host(fft.execute()) is not None
    _close(to_host(device), np.fft.fftn(x))


def test_real_transforms_match_numpy_and_keep_the_operand_unless_told(fake, rng):
    x = rng.standard_normal((6, 5, 16))
    with _fused(to_device(x)) as fft:
        assert fft.engine == "fused"
        _close(to_host(fft.execute()), np.fft.rfftn(x))
    half = np.fft.rfftn(x)
    device = to_device(half)
    with nfft.FFT(device, axes=[0, 1, 2], options={"engine": "fused", "fft_type": "C2R", "last_axis_parity": "even"}) \
            as fft:
        fft.plan()
        _close(to_host(fft.execute()), np.fft.irfftn(half, s=x.shape, axes=(0, 1, 2)) * x.size)
    _close(to_host(device), half)  # the inverse C2C passes ran in a scratch buffer


def test_the_norm_goes_to_the_last_pass_and_ihfftn_conjugates_it(fake, rng):
    x = _signal(rng, (6, 8))
    with _fused(to_device(x)) as fft:
        _close(to_host(nfft.fftn(to_device(x), norm="ortho", plan=fft)), np.fft.fftn(x, norm="ortho"))
        _close(to_host(nfft.ifftn(to_device(x), norm="forward", plan=fft)), np.fft.ifftn(x, norm="forward"))
    real = rng.standard_normal((6, 8))
    with _fused(to_device(real)) as fft:
        expected = np.conj(np.fft.rfftn(real)) / real.size  # scipy.fft.ihfftn's definition
        _close(to_host(nfft.ihfftn(to_device(real), plan=fft)), expected)


def test_an_axis_too_long_for_the_fused_kernel_runs_on_cufft(fake, rng):
    x = _signal(rng, (2, 40000))
    with _fused(to_device(x)) as fft:
        reason = fft._transform.engine_reason
        assert "fused along axes (0,)" in reason and "cuFFT along axes (1,)" in reason
        _close(to_host(fft.execute()), np.fft.fftn(x))
    assert [rows.size for rows, _ in FakeFusedPlan.made] == [2]


def test_a_split_that_fits_no_axis_or_needs_copies_is_refused_naming_engine(fake, rng, monkeypatch):
    monkeypatch.setitem(_engine.MAX_FUSED_SIZE, "float64", 4)  # no axis of 8 points fits a block now
    with pytest.raises(OptionsError, match="options.engine.*fits none of its axes"):
        _fused(to_device(_signal(rng, (8, 8))))
    assert FakeFusedPlan.made == []
    with pytest.raises(OptionsError, match="options.engine"):  # float16 converts through a copy
        _fused(to_device(rng.standard_normal((4, 8)).astype(np.float16)))


def test_a_load_callback_on_a_first_pass_of_several_launches_is_refused(fake, rng):
    """The first pass of a C2C transform over axes 0 and 1 of a 3-D operand whose innermost axis is
    not transformed runs along axis 1, one launch per index of axis 0: no launch sees the operand's
    offsets, as with cuFFT."""
    device = to_device(_signal(rng, (3, 4, 5)))
    symbol = _callbacks.cufft_symbol("prolog", "complex128")
    prolog = nfft.CompiledCallback("prolog", "complex128", None, "sm_90", symbol, b"\xedCN\x7fsplit", "split")
    with nfft.FFT(device, axes=[0, 1], options={"engine": "fused"}) as fft:
        with pytest.raises(OptionsError, match="prolog"):
            fft.plan(prolog=prolog)


@pytest.mark.parametrize("shape", [(3, 40000), (4, 9, 15)])
def test_real_splits_with_an_odd_or_too_long_real_axis(fake, rng, shape):
    """A real axis of 40000 points runs on cuFFT (R2C first, C2R last) beside fused passes; an odd one
    in the fused kernel's unfolded mode."""
    x = rng.standard_normal(shape)
    with _fused(to_device(x)) as fft:
        _close(to_host(fft.execute()), np.fft.rfftn(x))
    half = np.fft.rfftn(x)
    parity = "even" if shape[-1] % 2 == 0 else "odd"
    options = {"engine": "fused", "fft_type": "C2R", "last_axis_parity": parity}
    with nfft.FFT(to_device(half), options=options) as fft:
        fft.plan()
        _close(to_host(fft.execute()), np.fft.irfftn(half, s=shape, axes=tuple(range(len(shape)))) * x.size)
        if shape[-1] > 32768:
            assert f"cuFFT along axes ({len(shape) - 1},)" in fft._transform.engine_reason


def test_a_freed_split_raises_on_use(fake, rng):
    from nvmathx._core.errors import InvalidStateError
    from nvmathx.fft._by_axis import AxisPlans

    fft = _fused(to_device(_signal(rng, (4, 8))))
    plans = fft._transform.plan
    assert isinstance(plans, AxisPlans) and [engine for _, engine in plans.engines] == ["fused", "fused"]
    fft.free()
    with pytest.raises(InvalidStateError):
        fft.execute()
    with pytest.raises(InvalidStateError):  # the plan itself, as a function form's cached transform holds it
        plans.run(0, 0, -1, None)
