"""nvmathx.fft on a real GPU: every transform against numpy in float64, layouts, plans, streams."""

import numpy as np
import pytest

import nvmathx.fft as nfft
from nvmathx import OptionsError

pytestmark = pytest.mark.gpu

REAL_INPUT = {"rfft", "rfft2", "rfftn", "ihfft", "ihfft2", "ihfftn"}
ALL = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn", "rfftn",
       "irfftn", "hfft2", "ihfft2", "hfftn", "ihfftn"]
TOLERANCE = {"single": 2e-6, "double": 1e-12}  # relative to the reference's norm


def _torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA device")
    return torch


def _cupy():
    return pytest.importorskip("cupy")


def _relative_error(got, expected):
    got = np.asarray(got, dtype=np.complex128)
    expected = np.asarray(expected, dtype=np.complex128)
    assert got.shape == expected.shape
    return np.linalg.norm(got - expected) / max(np.linalg.norm(expected), 1e-300)


def _host(name, shape, precision, rng):
    x = rng.standard_normal(shape)
    if name not in REAL_INPUT:
        x = x + 1j * rng.standard_normal(shape)
    if precision == "single":
        return x.astype(np.float32 if name in REAL_INPUT else np.complex64)
    return x


def _reference(name, x, **kwargs):
    import scipy.fft

    return getattr(scipy.fft, name)(x.astype(np.complex128 if np.iscomplexobj(x) else np.float64), **kwargs)


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("precision", ["single", "double"])
@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
def test_every_transform_torch(rng, name, precision, norm):
    torch = _torch()
    x = _host(name, (8, 6, 32), precision, rng)
    kwargs = {"norm": norm}
    result = getattr(nfft, name)(torch.from_numpy(x).cuda(), **kwargs)
    assert isinstance(result, torch.Tensor) and result.is_cuda
    assert _relative_error(result.cpu().numpy(), _reference(name, x, **kwargs)) < TOLERANCE[precision]


@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft"])
@pytest.mark.parametrize("n", [1, 2, 3, 16, 97, 256, 1000])
def test_lengths_and_padding_cupy(rng, name, n):
    cp = _cupy()
    x = _host(name, (5, 40), "double", rng)
    result = getattr(nfft, name)(cp.asarray(x), n=n, axis=-1)
    assert isinstance(result, cp.ndarray)
    assert _relative_error(cp.asnumpy(result), _reference(name, x, n=n, axis=-1)) < 1e-12


def test_four_axes_against_numpy(rng):
    cp = _cupy()
    x = rng.standard_normal((6, 8, 10, 12)) + 1j * rng.standard_normal((6, 8, 10, 12))
    for name in ("fftn", "ifftn"):
        result = getattr(nfft, name)(cp.asarray(x))
        assert _relative_error(cp.asnumpy(result), getattr(np.fft, name)(x)) < 1e-12
    real = x.real.copy()
    spectrum = nfft.rfftn(cp.asarray(real))
    assert _relative_error(cp.asnumpy(spectrum), np.fft.rfftn(real)) < 1e-12
    assert _relative_error(cp.asnumpy(nfft.irfftn(spectrum, real.shape)), real) < 1e-12


def test_strided_non_contiguous_view_against_numpy(rng):
    cp = _cupy()
    base = rng.standard_normal((16, 24, 20)) + 1j * rng.standard_normal((16, 24, 20))
    device = cp.asarray(base)
    for index in ((slice(None, None, 2), slice(3, 21), slice(None, None, -3)),
                  (slice(None), slice(None, None, 5), slice(None))):
        view, expected_view = device[index], base[index]
        assert not view.flags.c_contiguous
        for axes in (None, (1,), (0, 2), (2, 0, 1)):
            result = nfft.fftn(view, axes=axes)
            assert _relative_error(cp.asnumpy(result), np.fft.fftn(expected_view, axes=axes)) < 1e-12
        transposed = view.transpose(2, 0, 1)
        result = nfft.rfftn(transposed.real.copy()[:, ::2], axes=(0, 2))
        expected = np.fft.rfftn(expected_view.transpose(2, 0, 1).real.copy()[:, ::2], axes=(0, 2))
        assert _relative_error(cp.asnumpy(result), expected) < 1e-12
    np.testing.assert_array_equal(cp.asnumpy(device), base)  # the operand is untouched


def test_irfft_keeps_its_operand_unless_overwrite_allowed(rng):
    torch = _torch()
    spectrum = np.fft.rfft2(rng.standard_normal((64, 128)))
    device = torch.from_numpy(spectrum).cuda()
    before = device.clone()
    result = nfft.irfft2(device)
    assert torch.equal(device, before)
    assert _relative_error(result.cpu().numpy(), np.fft.irfft2(spectrum)) < 1e-12
    result = nfft.irfft2(device, overwrite_x=True)
    assert _relative_error(result.cpu().numpy(), np.fft.irfft2(spectrum)) < 1e-12


def test_half_precision_is_computed_in_single(rng):
    torch = _torch()
    x = torch.from_numpy(rng.standard_normal((16, 256)).astype(np.float32)).cuda()
    dtypes = [torch.float16]
    try:
        import ml_dtypes  # noqa: F401  (nvmathx views bfloat16 through ml_dtypes)

        dtypes.append(torch.bfloat16)
    except ImportError:
        pass
    for dtype in dtypes:
        narrow = x.to(dtype)
        wide = narrow.float().cpu().numpy().astype(np.float64)
        result = nfft.rfft(narrow)
        assert result.dtype == torch.complex64
        assert _relative_error(result.cpu().numpy(), np.fft.rfft(wide)) < TOLERANCE["single"]


def test_stateful_fft_and_reset_operand(rng):
    torch = _torch()
    a, b = (rng.standard_normal((32, 512)) + 1j * rng.standard_normal((32, 512)) for _ in range(2))
    ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
    with nfft.FFT(ta, axes=[1]) as f:
        f.plan()
        assert _relative_error(f.execute().cpu().numpy(), np.fft.fft(a, axis=1)) < 1e-12
        assert _relative_error(f.execute("inverse").cpu().numpy(), np.fft.ifft(a, axis=1) * 512) < 1e-12
        f.reset_operand(tb)
        assert _relative_error(f.execute().cpu().numpy(), np.fft.fft(b, axis=1)) < 1e-12
        same = nfft.fft(tb, axis=1, plan=f)
        assert _relative_error(same.cpu().numpy(), np.fft.fft(b, axis=1)) < 1e-12


def test_host_operand_with_cuda_execution(rng):
    x = rng.standard_normal((8, 64))
    with nfft.FFT(x, execution="cuda") as f:
        f.plan()
        result = f.execute()
    assert isinstance(result, np.ndarray)
    assert _relative_error(result, np.fft.rfftn(x)) < 1e-12


@pytest.mark.parametrize("name", ALL)
def test_functions_with_cuda_execution_of_a_host_operand(rng, name):
    """Every function form moves a numpy operand to the GPU with ``execution="cuda"`` and returns numpy."""
    import scipy.fft

    x = _host(name, (6, 16), "double", rng)
    result = getattr(nfft, name)(x, norm="ortho", execution="cuda")
    assert isinstance(result, np.ndarray)
    assert _relative_error(result, getattr(scipy.fft, name)(x, norm="ortho")) < 1e-12


def test_functions_run_on_the_stream_given(rng):
    torch = _torch()
    x = torch.from_numpy(rng.standard_normal((8, 64)) + 1j * rng.standard_normal((8, 64))).cuda()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())  # x was made on the current stream
    result = nfft.fft(x, stream=stream)
    stream.synchronize()
    assert _relative_error(result.cpu().numpy(), np.fft.fft(x.cpu().numpy())) < 1e-12


def test_graph_capture_and_replay(rng):
    torch = _torch()
    shape = (64, 256)
    x = torch.from_numpy((rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)).cuda()
    stream = torch.cuda.Stream()
    with nfft.FFT(x, axes=[1]) as f:
        f.plan()
        with torch.cuda.stream(stream):
            f.execute()  # binds the plan to the capture stream outside capture
        stream.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            y = f.execute()
        for _ in range(2):
            fresh = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)
            x.copy_(torch.from_numpy(fresh).cuda())
            graph.replay()
            torch.cuda.synchronize()
            assert _relative_error(y.cpu().numpy(), np.fft.fft(fresh.astype(np.complex128), axis=1)) < 2e-6


def test_graph_capture_with_scale_kernel(rng):
    torch = _torch()
    x = torch.from_numpy(rng.standard_normal((16, 128)) + 0j).cuda()
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        nfft.fft(x, norm="ortho")
    stream.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        y = nfft.fft(x, norm="ortho")
    fresh = rng.standard_normal((16, 128)) + 0j
    x.copy_(torch.from_numpy(fresh).cuda())
    graph.replay()
    torch.cuda.synchronize()
    assert _relative_error(y.cpu().numpy(), np.fft.fft(fresh, norm="ortho")) < 1e-12


def test_cupy_torch_and_jax_operands(rng):
    x = rng.standard_normal((4, 32)) + 1j * rng.standard_normal((4, 32))
    expected = np.fft.fft(x)
    cp = _cupy()
    assert _relative_error(cp.asnumpy(nfft.fft(cp.asarray(x))), expected) < 1e-12
    torch = _torch()
    assert _relative_error(nfft.fft(torch.from_numpy(x).cuda()).cpu().numpy(), expected) < 1e-12
    try:
        import jax
        import jax.numpy as jnp

        gpu = jax.devices("gpu")[0]
    except Exception as error:  # jax missing or without a GPU backend
        pytest.skip(f"jax GPU not available: {type(error).__name__}")
    jax.config.update("jax_enable_x64", True)
    operand = jax.device_put(jnp.asarray(x), gpu).block_until_ready()  # jax computes asynchronously
    result = nfft.fft(operand)
    assert _relative_error(np.asarray(result), expected) < 1e-12


@pytest.mark.parametrize("dtype", ["bool", "int8", "int32", "int64", "uint8"])
def test_integer_and_bool_operands_like_scipy(rng, dtype):
    torch = _torch()
    x = rng.integers(0, 2 if dtype == "bool" else 100, (6, 20)).astype(dtype)
    for name in ("fft", "rfft", "irfft", "fftn", "ihfft"):
        expected = _reference(name, x)
        result = getattr(nfft, name)(torch.from_numpy(x).cuda())
        assert result.cpu().numpy().dtype == expected.dtype, name
        assert _relative_error(result.cpu().numpy(), expected) < 1e-12, name
    cp = _cupy()
    assert _relative_error(cp.asnumpy(nfft.rfftn(cp.asarray(x))), _reference("rfftn", x)) < 1e-12


def _recording_resource():
    from cuda.bindings import driver
    from cuda.core import Buffer, MemoryResource

    class Recording(MemoryResource):
        def __init__(self):
            self.sizes = []

        def allocate(self, size, stream=None):
            self.sizes.append(size)
            status, pointer = driver.cuMemAlloc(size)
            assert status == driver.CUresult.CUDA_SUCCESS
            return Buffer.from_handle(ptr=int(pointer), size=size, mr=self)

        def deallocate(self, ptr, size, stream=None):
            driver.cuMemFree(ptr)

        @property
        def is_device_accessible(self):
            return True

        @property
        def is_host_accessible(self):
            return False

        @property
        def device_id(self):
            return 0

    return Recording()


def test_custom_memory_resource_sees_the_work_area(rng):
    torch = _torch()
    from cuda.core import Device

    Device(0).set_current()
    # Large primes (Bluestein) and long multi-pass 1-D sizes need a cuFFT work area; cuFFT decides
    # which, so the first candidate it reports a nonzero work area for is used.
    for shape in ((2, 1_000_003), (8, 65537), (1 << 24,), (4, 6, 8, 1021)):
        x = torch.from_numpy(rng.standard_normal(shape) + 0j).cuda()
        resource = _recording_resource()
        f = nfft.FFT(x, axes=[len(shape) - 1], options={"memory_resource": resource})
        f.plan()
        work_bytes = f._transform.plan.workspace_bytes
        if work_bytes > 0:
            break
        f.free()
    else:
        pytest.fail("cuFFT reported no work area for any candidate size")
    with f:
        result = f.execute()
        torch.cuda.synchronize()
    assert resource.sizes and max(resource.sizes) >= work_bytes
    expected = np.fft.fft(x.cpu().numpy(), axis=-1)
    assert _relative_error(result.cpu().numpy(), expected) < 1e-11


def test_custom_memory_resource_sees_the_scratch_buffer(rng):
    torch = _torch()
    from cuda.core import Device

    Device(0).set_current()
    x = torch.from_numpy(rng.standard_normal((3, 5, 3))).cuda()
    resource = _recording_resource()
    # R2C along the middle, odd axis: a direct pass would read batches at odd real offsets, which
    # cuFFT refuses, so the operand is first copied into an aligned scratch buffer.
    with nfft.FFT(x, axes=[1], options={"memory_resource": resource}) as f:
        f.plan()
        scratch_bytes = f._transform.plan.scratch_bytes
        result = f.execute()
        torch.cuda.synchronize()
    assert scratch_bytes > 0 and scratch_bytes in resource.sizes
    assert _relative_error(result.cpu().numpy(), np.fft.rfft(x.cpu().numpy(), axis=1)) < 1e-12


def test_green_context_stream(rng):
    torch = _torch()
    from cuda.core import ContextOptions, Device, SMResourceOptions

    device = Device(0)
    device.set_current()
    try:
        groups, _ = device.resources.sm.split(SMResourceOptions(count=16))
        context = device.create_context(ContextOptions(resources=[groups[0]]))
        stream = context.create_stream()
    except Exception as error:  # green contexts need a recent driver and cuda.core
        pytest.skip(f"green contexts unavailable: {type(error).__name__}: {error}")
    x = rng.standard_normal((64, 1024)) + 1j * rng.standard_normal((64, 1024))
    tx = torch.from_numpy(x).cuda()
    torch.cuda.synchronize()
    with nfft.FFT(tx, axes=[1]) as f:
        f.plan()
        result = f.execute(stream=stream)
        stream.sync()
    assert _relative_error(result.cpu().numpy(), np.fft.fft(x, axis=1)) < 1e-12
    scaled = nfft.fft(tx, norm="ortho")
    assert _relative_error(scaled.cpu().numpy(), np.fft.fft(x, norm="ortho")) < 1e-12


def test_plan_cache_hits_on_repeat():
    cp = _cupy()
    nfft.plan_cache.clear()
    x = cp.asarray(np.ones((8, 64), np.complex64))
    for _ in range(3):
        nfft.fft(x)
    info = nfft.plan_cache.info(0)
    assert (info.size, info.hits, info.misses) == (1, 2, 1)
    nfft.fft(cp.asfortranarray(x))
    assert nfft.plan_cache.info(0).size == 2
    nfft.plan_cache.clear()


def test_shift_on_device():
    cp = _cupy()
    x = np.arange(30.0).reshape(5, 6)
    np.testing.assert_array_equal(cp.asnumpy(nfft.fftshift(cp.asarray(x))), np.fft.fftshift(x))
    np.testing.assert_array_equal(cp.asnumpy(nfft.ifftshift(cp.asarray(x), axes=0)), np.fft.ifftshift(x, axes=0))


def test_scipy_backend_serves_device_arrays(rng):
    import scipy.fft

    cp = _cupy()
    x = rng.standard_normal(64) + 0j
    with scipy.fft.set_backend(nfft):
        result = scipy.fft.fft(cp.asarray(x))
        host = scipy.fft.fft(x)
    assert isinstance(result, cp.ndarray)
    assert _relative_error(cp.asnumpy(result), np.fft.fft(x)) < 1e-12
    assert _relative_error(host, np.fft.fft(x)) < 1e-12


# -- hypothesis over shapes, axes, strides, n/s and norm ----------------------------------------------


def test_hypothesis_layouts():
    cp = _cupy()
    from hypothesis import given, settings
    from hypothesis import strategies as st

    @st.composite
    def problems(draw):
        ndim = draw(st.integers(1, 4))
        shape = tuple(draw(st.lists(st.integers(1, 7), min_size=ndim, max_size=ndim)))
        steps = tuple(draw(st.lists(st.sampled_from([1, 2, -1]), min_size=ndim, max_size=ndim)))
        perm = tuple(draw(st.permutations(range(ndim))))
        axes = tuple(draw(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True)))
        name = draw(st.sampled_from(["fftn", "ifftn", "rfftn", "irfftn"]))
        s = draw(st.none() | st.tuples(*[st.integers(1, 9) for _ in axes]))
        norm = draw(st.sampled_from([None, "ortho", "forward"]))
        return shape, steps, perm, axes, name, s, norm

    @settings(max_examples=60, deadline=None)
    @given(problems())
    def check(problem):
        shape, steps, perm, axes, name, s, norm = problem
        rng = np.random.default_rng(0)
        big = tuple(e * abs(step) for e, step in zip(shape, steps))
        base = rng.standard_normal(big) + (0 if name == "rfftn" else 1j * rng.standard_normal(big))
        index = tuple(slice(None, None, step) for step in steps)
        host = base[index].transpose(perm)
        if name == "irfftn" and s is None and host.shape[axes[-1]] < 2:
            return
        device = cp.asarray(base)[index].transpose(perm)
        result = getattr(nfft, name)(device, s=s, axes=axes, norm=norm)
        expected = _reference(name, host, s=s, axes=axes, norm=norm)
        assert _relative_error(cp.asnumpy(result), expected) < 1e-11

    check()


def test_kernels_copy_convert_and_scale(rng):
    cp = _cupy()
    from nvmathx._codegen import elementwise as _kernels
    from nvmathx._core.streams import resolve_stream

    stream = resolve_stream(None, 0)
    x = rng.standard_normal((2, 3) * 5).astype(np.float16)
    view = cp.asarray(x).transpose(9, 0, 8, 1, 7, 2, 6, 3, 5, 4)[::-1]
    host_view = x.transpose(9, 0, 8, 1, 7, 2, 6, 3, 5, 4)[::-1]
    target = cp.zeros(view.shape, cp.complex64)
    strides = [s // view.itemsize for s in view.strides]
    _kernels.copy_nd(view.data.ptr, target.data.ptr, view.shape, strides, [s // 8 for s in target.strides],
                     np.float16, np.complex64, 0.5, False, stream, 0)
    _kernels.scale(target.data.ptr, target.size, np.complex64, 4.0, True, stream, 0)
    cp.cuda.runtime.deviceSynchronize()
    np.testing.assert_array_equal(cp.asnumpy(target), 2.0 * host_view.astype(np.complex64))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
def test_copy_kernel_transposes_and_plain_copies(rng, dtype):
    """Row-major matrices into column-major order (the tiled transpose, ragged edges and a
    broadcast batch included) and a contiguous copy (cuMemcpyAsync), against numpy."""
    cp = _cupy()
    from nvmathx._codegen import elementwise as _kernels
    from nvmathx._core.streams import resolve_stream

    stream = resolve_stream(None, 0)
    for batch, rows, cols in ((3, 37, 70), (1, 32, 32), (513, 16, 16), (2, 1, 40)):
        x = rng.standard_normal((batch, rows, cols)).astype(dtype)
        if np.iscomplexobj(x):
            x = x + 1j * rng.standard_normal(x.shape).astype(dtype)
        source = cp.asarray(x)
        target = cp.zeros((batch, cols, rows), dtype)  # column-major copies, one after the other
        _kernels.copy_nd(source.data.ptr, target.data.ptr, x.shape, (rows * cols, cols, 1), (rows * cols, 1, rows),
                         dtype, dtype, 2.0, True, stream, 0)
        cp.cuda.runtime.deviceSynchronize()
        expected = 2 * np.conjugate(x) if np.iscomplexobj(x) else 2 * x
        np.testing.assert_array_equal(cp.asnumpy(target), np.swapaxes(expected, 1, 2))
        broadcast = cp.zeros((4, cols, rows), dtype)
        _kernels.copy_nd(source.data.ptr, broadcast.data.ptr, (4, rows, cols), (0, cols, 1), (rows * cols, 1, rows),
                         dtype, dtype, 1.0, False, stream, 0)
        copied = cp.zeros_like(source)
        _kernels.copy_nd(source.data.ptr, copied.data.ptr, x.shape, (rows * cols, cols, 1), (rows * cols, cols, 1),
                         dtype, dtype, 1.0, False, stream, 0)
        cp.cuda.runtime.deviceSynchronize()
        np.testing.assert_array_equal(cp.asnumpy(broadcast), np.broadcast_to(x[0].T, (4, cols, rows)))
        np.testing.assert_array_equal(cp.asnumpy(copied), x)


def test_scale_kernel_vector_and_scalar_paths(rng):
    cp = _cupy()
    from nvmathx._codegen import elementwise as _kernels
    from nvmathx._core.streams import resolve_stream

    stream = resolve_stream(None, 0)
    for count in (1024, 1023):  # even counts of complex64 take 16-byte vectors
        x = (rng.standard_normal(count) + 1j * rng.standard_normal(count)).astype(np.complex64)
        device = cp.asarray(x)
        _kernels.scale(device.data.ptr, count, np.complex64, 0.25, True, stream, 0)
        cp.cuda.runtime.deviceSynchronize()
        np.testing.assert_array_equal(cp.asnumpy(device), np.conj(x) * np.float32(0.25))


def test_shift_of_a_0d_array_on_device():
    cp = pytest.importorskip("cupy")
    x = cp.asarray(np.array(2.5))
    for shift in (nfft.fftshift, nfft.ifftshift):
        y = shift(x)
        assert isinstance(y, cp.ndarray) and y.shape == () and float(y) == 2.5 and y.data.ptr != x.data.ptr


@pytest.mark.parametrize("call, argument", [(lambda x: nfft.fft(x, n=2**40), "n"),
                                            (lambda x: nfft.irfftn(x, s=[2**20] * 2), "s")])
def test_sizes_past_the_gpus_memory_name_n_or_s(call, argument):
    cp = pytest.importorskip("cupy")
    with pytest.raises(OptionsError, match=rf"^{argument}: asks for a result of \d+ bytes, more than GPU \d+'s "):
        call(cp.ones((4, 8), cp.complex64))
