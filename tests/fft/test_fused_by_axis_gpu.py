"""``FFTOptions(engine="fused")`` over several axes on a GPU: one pass per axis (the fused kernel
where the axis fits a block, cuFFT where not), against numpy in float64; callbacks give the same
results as cuFFT's engine."""

import numpy as np
import pytest

import nvmathx.fft as nfft
from helpers.requirements import needs_mathdx

from ._fused_gpu import TOLERANCE, scaling_callbacks
from ._fused_gpu import cupy_or_skip as _cupy
from ._fused_gpu import planned as _planned
from ._fused_gpu import relative_error as _error
from ._fused_gpu import signal as _signal

pytestmark = [pytest.mark.gpu, needs_mathdx]

@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("shape, axes", [((64, 256), None), ((12, 40, 128), None), ((6, 100, 9), (0, 1)),
                                         ((8, 5, 64), (0, 2))])
def test_c2c_over_several_axes_matches_numpy(rng, dtype, shape, axes):
    cupy = _cupy()
    x = _signal(shape, dtype, rng)
    fft = _planned(cupy.asarray(x), axes=axes)
    assert fft.engine == "fused"
    precise = x.astype(np.complex128)
    tolerance = TOLERANCE[dtype] * np.log2(x.size) * 2
    assert _error(fft.execute("forward").get(), np.fft.fftn(precise, axes=axes)) < tolerance
    points = np.prod([shape[a] for a in (axes or range(len(shape)))])
    assert _error(fft.execute("inverse").get(), np.fft.ifftn(precise, axes=axes) * points) < tolerance


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_real_transforms_over_three_axes_match_numpy_and_keep_the_operand(rng, dtype):
    cupy = _cupy()
    x = rng.standard_normal((10, 24, 256)).astype(dtype)
    tolerance = (2e-6 if dtype == np.float32 else 1e-14) * np.log2(x.size) * 2
    r2c = _planned(cupy.asarray(x))
    assert r2c.engine == "fused"
    half = r2c.execute()
    assert _error(half.get(), np.fft.rfftn(x.astype(np.float64))) < tolerance
    kept = half.copy()
    c2r = _planned(half, fft_type="C2R")
    assert c2r.engine == "fused"
    back = c2r.execute()
    assert _error(back.get(), x.astype(np.float64) * x.size) < tolerance
    assert cupy.array_equal(half, kept)  # the inverse C2C passes ran in a scratch buffer


def test_in_place_and_the_norms_through_the_function_forms(rng):
    cupy = _cupy()
    x = _signal((32, 48, 64), np.complex128, rng)
    device = cupy.asarray(x)
    fft = _planned(device, inplace=True)
    assert fft.execute() is device
    assert _error(device.get(), np.fft.fftn(x)) < 1e-13
    device = cupy.asarray(x)
    plan = _planned(device)
    for norm in ("ortho", "forward"):
        assert _error(nfft.fftn(device, norm=norm, plan=plan).get(), np.fft.fftn(x, norm=norm)) < 1e-13, norm
        assert _error(nfft.ifftn(device, norm=norm, plan=plan).get(), np.fft.ifftn(x, norm=norm)) < 1e-13, norm


def test_an_axis_too_long_for_a_block_runs_on_cufft(rng):
    cupy = _cupy()
    x = _signal((4, 65536), np.complex64, rng)
    fft = _planned(cupy.asarray(x))
    reason = fft._transform.engine_reason
    assert "fused along axes (0,)" in reason and "cuFFT along axes (1,)" in reason
    assert _error(fft.execute().get(), np.fft.fftn(x.astype(np.complex128))) < TOLERANCE[np.complex64] * 20


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_callbacks_on_the_first_and_last_passes_give_cuffts_results(rng, dtype):
    cupy = _cupy()
    x = _signal((48, 256), dtype, rng)
    callbacks, load_factor, store_factor = scaling_callbacks(x, rng)
    device = cupy.asarray(x)
    expected = np.fft.fftn(x.astype(np.complex128) * load_factor) * store_factor / np.sqrt(x.size)
    for engine in ("cufft", "fused"):
        fft = nfft.FFT(device, options={"engine": engine})
        fft.plan(**callbacks)
        assert fft.engine == engine
        got = nfft.fftn(device, norm="ortho", plan=fft, **callbacks).get()
        assert _error(got, expected) < TOLERANCE[dtype] * 30, engine
