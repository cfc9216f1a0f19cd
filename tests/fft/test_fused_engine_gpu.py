"""The fused FFT engine (``FFTOptions(engine="fused")``) on a GPU: C2C, R2C and C2R rows against
numpy in float64, both precisions and directions, batched, strided, in place, with each norm and
with callbacks (the same results as cuFFT's engine), and its accuracy against cuFFT's."""

import numpy as np
import pytest

import nvmathx.fft as nfft
from helpers.requirements import needs_mathdx
from nvmathx._core.errors import OptionsError

from ._fused_gpu import TOLERANCE, scaling_callbacks
from ._fused_gpu import cupy_or_skip as _cupy
from ._fused_gpu import planned as _planned
from ._fused_gpu import relative_error as _error
from ._fused_gpu import scale_load as _scale_load
from ._fused_gpu import signal as _signal
from ._fused_gpu import windowed as _windowed

pytestmark = [pytest.mark.gpu, needs_mathdx]

@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("size", [8, 12, 64, 100, 256, 1000, 1024, 2048, 4096])
def test_rows_forward_and_inverse_match_numpy(rng, dtype, size):
    cupy = _cupy()
    x = _signal((37, size), dtype, rng)  # 37 rows: a ragged last block whatever ffts_per_block is
    fft = _planned(cupy.asarray(x), axes=[1])
    assert fft.engine == "fused"
    forward = fft.execute("forward")
    assert _error(forward.get(), np.fft.fft(x.astype(np.complex128), axis=1)) < TOLERANCE[dtype] * np.log2(size)
    inverse = fft.execute("inverse")  # unnormalised, as cuFFT
    assert _error(inverse.get(), size * np.fft.ifft(x.astype(np.complex128), axis=1)) < TOLERANCE[dtype] * np.log2(size)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("size", [8, 64, 1000, 1024, 4096])
def test_real_transforms_match_numpy(rng, dtype, size):
    cupy = _cupy()
    tolerance = (2e-6 if dtype == np.float32 else 1e-14) * np.log2(size)
    x = rng.standard_normal((37, size)).astype(dtype)
    r2c = _planned(cupy.asarray(x), axes=[1])
    assert (r2c.fft_type, r2c.engine) == ("R2C", "fused")
    spectrum = r2c.execute()
    assert _error(spectrum.get(), np.fft.rfft(x.astype(np.float64), axis=1)) < tolerance
    half = np.fft.rfft(x.astype(np.float64), axis=1).astype(np.complex64 if dtype == np.float32 else np.complex128)
    device_half = cupy.asarray(half)
    parity = "even" if size % 2 == 0 else "odd"
    c2r = _planned(device_half, axes=[1], fft_type="C2R", last_axis_parity=parity)
    assert c2r.engine == "fused"
    real = c2r.execute()
    assert _error(real.get(), size * np.fft.irfft(half.astype(np.complex128), n=size, axis=1)) < tolerance
    np.testing.assert_array_equal(device_half.get(), half)  # unlike cuFFT's C2R, the operand is kept


@pytest.mark.parametrize("norm", ["backward", "ortho", "forward"])
def test_real_norms_and_ihfft_through_the_function_forms(rng, norm):
    cupy = _cupy()
    x = rng.standard_normal((8, 512)).astype(np.float32)
    device = cupy.asarray(x)
    plan = _planned(device, axes=[1])
    expected = np.fft.rfft(x.astype(np.float64), norm=norm)
    assert _error(nfft.rfft(device, norm=norm, plan=plan).get(), expected) < 2e-5
    expected = np.fft.ihfft(x.astype(np.float64), norm=norm)  # R2C, conjugated
    assert _error(nfft.ihfft(device, norm=norm, plan=plan).get(), expected) < 2e-5
    half = cupy.asarray(np.fft.rfft(x).astype(np.complex64))
    inverse = _planned(half, axes=[1], fft_type="C2R")
    expected = np.fft.irfft(half.get().astype(np.complex128), norm=norm)
    assert _error(nfft.irfft(half, norm=norm, plan=inverse).get(), expected) < 2e-5
    with pytest.raises(OptionsError, match="plan"):
        nfft.hfft(half, norm=norm, plan=inverse)  # a C2R of the conjugated operand


@pytest.mark.parametrize("dtype, size", [(np.complex64, 8192), (np.complex64, 32768), (np.complex128, 16384)])
def test_large_lengths_opt_into_more_shared_memory(rng, dtype, size):
    cupy = _cupy()
    x = _signal((5, size), dtype, rng)
    fft = _planned(cupy.asarray(x), axes=[1])
    assert _error(fft.execute().get(), np.fft.fft(x.astype(np.complex128), axis=1)) < TOLERANCE[dtype] * np.log2(size)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_strided_axis_and_a_sliced_view(rng, dtype):
    cupy = _cupy()
    x = _signal((512, 7), dtype, rng)
    fft = _planned(cupy.asarray(x), axes=[0])
    assert _error(fft.execute().get(), np.fft.fft(x.astype(np.complex128), axis=0)) < TOLERANCE[dtype] * 9
    wide = _signal((9, 600), dtype, rng)
    view = cupy.asarray(wide)[::2, 44:300]  # rows 2 apart, each 256 points starting at 44
    fft = _planned(view, axes=[1])
    expected = np.fft.fft(wide[::2, 44:300].astype(np.complex128), axis=1)
    assert _error(fft.execute().get(), expected) < TOLERANCE[dtype] * 8


@pytest.mark.parametrize("dtype", [np.complex64, np.float64])
def test_middle_axis_of_a_3d_operand_runs_in_one_launch_per_outer_index(rng, dtype):
    """Axis 1 of (3, 64, 5): the batch (3 x 5) has two strides, so the kernel is launched 3 times;
    each transform kind and the norms against numpy."""
    cupy = _cupy()
    shape = (3, 64, 5)
    real = np.dtype(dtype).kind == "f"
    x = rng.standard_normal(shape).astype(dtype) if real else _signal(shape, dtype, rng)
    device = cupy.asarray(x)
    tolerance = 1e-13 if dtype == np.float64 else TOLERANCE[np.complex64] * 6
    precise = x.astype(np.float64 if real else np.complex128)
    plan = _planned(device, axes=[1])
    assert plan.engine == "fused"
    if real:
        half = nfft.rfft(device, axis=1, norm="ortho", plan=plan)
        assert half.shape == (3, 33, 5)
        assert _error(half.get(), np.fft.rfft(precise, axis=1, norm="ortho")) < tolerance
        inverse = _planned(half, axes=[1], fft_type="C2R")
        assert inverse.engine == "fused"
        back = nfft.irfft(half, n=64, axis=1, norm="ortho", plan=inverse)
        assert _error(back.get(), precise) < tolerance
    else:
        for norm in ("backward", "forward"):
            got = nfft.fft(device, axis=1, norm=norm, plan=plan).get()
            assert _error(got, np.fft.fft(precise, axis=1, norm=norm)) < tolerance, norm
        assert _error(nfft.ifft(device, axis=1, plan=plan).get(), np.fft.ifft(precise, axis=1)) < tolerance


def test_in_place(rng):
    cupy = _cupy()
    x = _signal((20, 128), np.complex128, rng)
    device = cupy.asarray(x)
    fft = _planned(device, axes=[1], inplace=True)
    result = fft.execute()
    assert result is device
    assert _error(device.get(), np.fft.fft(x, axis=1)) < 1e-13


@pytest.mark.parametrize("norm", ["backward", "ortho", "forward"])
@pytest.mark.parametrize("function", ["fft", "ifft"])
def test_norms_through_the_function_forms(rng, norm, function):
    cupy = _cupy()
    x = _signal((16, 1024), np.complex64, rng)
    device = cupy.asarray(x)
    fft = _planned(device, axes=[1])
    got = getattr(nfft, function)(device, norm=norm, plan=fft)
    expected = getattr(np.fft, function)(x.astype(np.complex128), norm=norm)
    assert _error(got.get(), expected) < 2e-6 * 10


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("size", [64, 1024, 4096])
def test_accuracy_no_worse_than_cufft(rng, dtype, size):
    cupy = _cupy()
    x = _signal((64, size), dtype, rng)
    expected = np.fft.fft(x.astype(np.complex128), axis=1)
    errors = {}
    for engine in ("cufft", "fused"):
        fft = nfft.FFT(cupy.asarray(x), axes=[1], options={"engine": engine})
        fft.plan()
        assert fft.engine == engine
        errors[engine] = _error(fft.execute().get(), expected)
    print(f"relative error {dtype.__name__} {size}: {errors}")
    assert errors["fused"] <= 2 * errors["cufft"] + np.finfo(dtype).eps


def test_transforms_it_cannot_run_are_refused_at_plan(rng):
    cupy = _cupy()
    x = cupy.asarray(_signal((16, 16), np.complex64, rng))
    with pytest.raises(OptionsError, match="options.engine.*copies"):  # float16 converts through a copy
        _planned(cupy.asarray(rng.standard_normal((4, 64)).astype(np.float16)), axes=[1])
    wrong = nfft.compile_prolog(_scale_load, element_dtype="complex128", user_info_dtype="float64")
    fft = nfft.FFT(x, axes=[1], options={"engine": "fused"})
    with pytest.raises(OptionsError, match="prolog"):
        fft.plan(prolog=wrong)


@pytest.mark.parametrize("norm", ["backward", "ortho"])
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_callbacks_give_the_same_results_in_both_engines(rng, dtype, norm):
    cupy = _cupy()
    x = _signal((24, 512), dtype, rng)
    callbacks, load_factor, store_factor = scaling_callbacks(x, rng)
    device = cupy.asarray(x)
    results = {}
    for engine in ("cufft", "fused"):
        fft = nfft.FFT(device, axes=[1], options={"engine": engine})
        fft.plan(**callbacks)
        assert fft.engine == engine
        results[engine] = nfft.fft(device, axis=1, norm=norm, plan=fft, **callbacks).get()  # a plan with
        # callbacks serves the calls that pass the same ones
    # cuFFT's meaning in both: the prolog scales what is loaded, the epilog what is stored, and a
    # norm multiplies what the epilog stored
    scale = 1 / np.sqrt(512) if norm == "ortho" else 1.0
    expected = np.fft.fft(x.astype(np.complex128) * load_factor, axis=1) * store_factor * scale
    tolerance = TOLERANCE[dtype] * 9
    assert _error(results["cufft"], expected) < tolerance
    assert _error(results["fused"], expected) < tolerance


@pytest.mark.parametrize("norm", ["backward", "forward"])
def test_windowed_rfft_gives_the_same_results_in_both_engines(rng, norm):
    cupy = _cupy()
    x = rng.standard_normal((32, 4096)).astype(np.float32)
    window = np.hanning(4096).astype(np.float32)
    prolog = nfft.compile_prolog(_windowed, element_dtype="float32", user_info_dtype="float32")
    device = cupy.asarray(x)
    expected = np.fft.rfft(x.astype(np.float64) * window, norm=norm)
    loaded = (prolog, cupy.asarray(window))
    for engine in ("cufft", "fused"):
        fft = nfft.FFT(device, axes=[1], options={"engine": engine})
        fft.plan(prolog=loaded)
        assert _error(nfft.rfft(device, norm=norm, plan=fft, prolog=loaded).get(), expected) < 2e-5, engine


def _fused_r2c(flat, shift, size, batch, row_stride, window=None, knobs=None):
    """The fused R2C of ``batch`` rows of ``size`` reals, ``row_stride`` apart, starting ``shift``
    floats into ``flat`` (the windowed callback with ``window`` where given), run by its FusedPlan."""
    cupy = _cupy()
    from nvmathx._core import streams
    from nvmathx._fftcore.callbacks import attachment
    from nvmathx._fftcore.engine import FusedRows
    from nvmathx.fft._fused import FusedPlan

    prolog = None
    if window is not None:
        callback = nfft.compile_prolog(_windowed, element_dtype="float32", user_info_dtype="float32")
        prolog = attachment((callback, cupy.asarray(window)), "prolog", 0)
    plan = FusedPlan(FusedRows("R2C", size, batch, "float32", row_stride, 1, size // 2 + 1, 1), 0, prolog=prolog,
                     knobs=knobs)
    source, target = cupy.asarray(flat), cupy.zeros((batch, size // 2 + 1), np.complex64)
    plan.run(source.data.ptr + 4 * shift, target.data.ptr, -1,
             streams.resolve_stream(cupy.cuda.get_current_stream().ptr, 0))
    return target.get()


@pytest.mark.parametrize("knobs", [(32, 1, None, True), (16, 1, 8, True), (8, 2, None, True)])
@pytest.mark.parametrize("windowed", [False, True])
def test_staged_loads_of_a_folded_r2c(rng, knobs, windowed):
    # the reals read through shared memory (the tuning knob), with and without the load callback,
    # a ragged batch of rows
    size, batch = 4096, 37
    x = rng.standard_normal((batch, size)).astype(np.float32)
    window = np.hanning(size).astype(np.float32) if windowed else np.ones(size, np.float32)
    result = _fused_r2c(x, 0, size, batch, size, window if windowed else None, knobs)
    expected = np.fft.rfft(x.astype(np.float64) * window, axis=1)
    assert _error(result, expected) < 2e-5


@pytest.mark.parametrize("layout", ["aligned", "one float off", "odd row stride"])
@pytest.mark.parametrize("windowed", [False, True])
def test_folded_r2c_reads_pairs_at_any_alignment(rng, layout, windowed):
    # a folded R2C reads each pair of reals in one vector load where the pair is aligned as the complex
    # type (through the load callback too) and one real at a time where not: an operand one float
    # off, and rows of odd stride (every other row's pairs misaligned)
    size, batch = 4096, 9
    row_stride = size + 1 if layout == "odd row stride" else size
    shift = 1 if layout == "one float off" else 0
    flat = rng.standard_normal(shift + batch * row_stride).astype(np.float32)
    rows = flat[shift:].reshape(batch, row_stride)[:, :size]
    window = np.hanning(size).astype(np.float32) if windowed else np.ones(size, np.float32)
    result = _fused_r2c(flat, shift, size, batch, row_stride, window if windowed else None)
    # the callback indexes the window by the offset from the operand's start, modulo 4096
    offsets = np.arange(batch)[:, None] * row_stride + np.arange(size)
    expected = np.fft.rfft(rows.astype(np.float64) * window[offsets % size], axis=1)
    assert _error(result, expected) < 2e-5


def test_freed_plan_raises(rng):
    cupy = _cupy()
    fft = _planned(cupy.asarray(_signal((4, 64), np.complex64, rng)), axes=[1])
    fft.free()
    with pytest.raises(Exception, match="freed"):
        fft.execute()


def test_auto_takes_the_fused_kernel_for_callbacks_and_for_norms_once_cached(rng, tmp_path):
    from nvmathx.device_api import set_cache_dir

    cupy = _cupy()
    x = _signal((40, 1000), np.complex64, rng)
    device = cupy.asarray(x)
    expected = np.fft.fft(x.astype(np.complex128), axis=1, norm="ortho")
    set_cache_dir(tmp_path)  # an empty disk cache
    nfft.plan_cache.clear()
    try:
        assert _error(nfft.fft(device, norm="ortho").get(), expected) < 2e-5
        assert [nfft.plan_cache.get(0, key).engine for key in nfft.plan_cache.keys(0)] == ["cufft"]  # not built
        _planned(device, axes=[1]).free()  # a plan with engine="fused" leaves the kernel in the disk cache
        nfft.plan_cache.clear()
        assert _error(nfft.fft(device, norm="ortho").get(), expected) < 2e-5
        assert [nfft.plan_cache.get(0, key).engine for key in nfft.plan_cache.keys(0)] == ["fused"]
        prolog = nfft.compile_prolog(_scale_load, element_dtype="complex64", user_info_dtype="float32")
        factor = rng.uniform(0.5, 2.0, x.shape).astype(np.float32)
        with nfft.FFT(device, axes=[1]) as fft:  # callbacks: the plan builds its kernel
            fft.plan(prolog=(prolog, cupy.asarray(factor)))
            assert fft.engine == "fused"
            got = fft.execute().get()
        assert _error(got, np.fft.fft(x.astype(np.complex128) * factor, axis=1)) < 2e-5
    finally:
        nfft.plan_cache.clear()
        set_cache_dir(None)


def test_auto_takes_the_cached_fused_kernel_for_a_plain_transform_the_table_lists(rng, tmp_path):
    from nvmathx._fftcore.engine import MEASURED_FASTER
    from nvmathx.device_api import set_cache_dir
    from nvmathx.fft._fused import compute_capability

    cupy = _cupy()
    if compute_capability(0)[0] not in MEASURED_FASTER[("C2R", 4096, "float32")]:
        pytest.skip("the measured table lists C2R 4096 float32 for other GPU families")
    x = rng.standard_normal((24, 4096)).astype(np.float32)
    half = cupy.asarray(np.fft.rfft(x, axis=1).astype(np.complex64))
    set_cache_dir(tmp_path)  # an empty disk cache
    nfft.plan_cache.clear()
    try:
        assert _error(nfft.irfft(half, n=4096).get(), x) < 1e-5
        assert [nfft.plan_cache.get(0, key).engine for key in nfft.plan_cache.keys(0)] == ["cufft"]  # not built
        _planned(half, axes=[1], fft_type="C2R").free()  # leaves the kernel in the disk cache
        nfft.plan_cache.clear()
        assert _error(nfft.irfft(half, n=4096).get(), x) < 1e-5
        assert [nfft.plan_cache.get(0, key).engine for key in nfft.plan_cache.keys(0)] == ["fused"]
    finally:
        nfft.plan_cache.clear()
        set_cache_dir(None)


def test_graph_capture_and_replay(rng):
    torch = pytest.importorskip("torch")
    shape = (48, 1000)
    x = torch.from_numpy(_signal(shape, np.complex64, rng)).cuda()
    window = torch.from_numpy(rng.uniform(0.5, 2.0, shape).astype(np.float32)).cuda()
    prolog = (nfft.compile_prolog(_scale_load, element_dtype="complex64", user_info_dtype="float32"), window)
    stream = torch.cuda.Stream()
    with nfft.FFT(x, axes=[1], options={"engine": "fused"}) as plan:
        plan.plan(prolog=prolog)
        with torch.cuda.stream(stream):
            nfft.fft(x, axis=1, norm="ortho", plan=plan, prolog=prolog)  # binds the plan to the stream
        stream.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            y = nfft.fft(x, axis=1, norm="ortho", plan=plan, prolog=prolog)
        for _ in range(2):
            fresh = _signal(shape, np.complex64, rng)
            x.copy_(torch.from_numpy(fresh).cuda())
            graph.replay()
            torch.cuda.synchronize()
            expected = np.fft.fft(fresh.astype(np.complex128) * window.cpu().numpy(), axis=1, norm="ortho")
            assert _error(y.cpu().numpy(), expected) < 2e-5
