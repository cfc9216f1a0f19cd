"""The GPU code path (planning, pointer arithmetic, copies, scales, caching) on a host stand-in
for the device: see ``_fake_device.py``. Numbers are checked against scipy.fft."""

import types

import numpy as np
import pytest
import scipy.fft

import nvmathx.fft as nfft
from nvmathx import InvalidStateError, OperandError, UnsupportedOperandError
from nvmathx._core.device_array import DeviceArray

from ._fake_device import FakeMemoryResource, install, to_device, to_host

REAL_INPUT = {"rfft", "rfft2", "rfftn", "ihfft", "ihfft2", "ihfftn"}
FUNCTIONS_1D = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
FUNCTIONS_ND = ["fft2", "ifft2", "fftn", "ifftn", "rfft2", "irfft2", "rfftn", "irfftn", "hfft2", "ihfft2", "hfftn",
                "ihfftn"]


@pytest.fixture
def fake(monkeypatch):
    nfft.plan_cache.clear()
    fake_cufft, resource = install(monkeypatch)
    yield fake_cufft, resource
    nfft.plan_cache.clear()


def _operand(name, shape, dtype, rng):
    x = rng.standard_normal(shape)
    if name not in REAL_INPUT:
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def _tolerance(dtype):
    return 2e-5 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-11


def _close(got, expected, dtype):
    scale = max(np.abs(expected).max(), 1.0)
    np.testing.assert_allclose(got, expected, rtol=_tolerance(dtype), atol=_tolerance(dtype) * scale)


@pytest.mark.parametrize("name", FUNCTIONS_1D)
@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
@pytest.mark.parametrize("precision", ["single", "double"])
def test_one_dimensional(rng, fake, name, norm, precision):
    real = name in REAL_INPUT
    dtype = {("single", True): np.float32, ("single", False): np.complex64, ("double", True): np.float64,
             ("double", False): np.complex128}[precision, real]
    x = _operand(name, (6, 10), dtype, rng)
    for kwargs in ({}, {"n": 1}, {"n": 7}, {"n": 16}, {"axis": 0}):
        before = x.copy()
        device_x = to_device(x)
        result = getattr(nfft, name)(device_x, norm=norm, **kwargs)
        expected = getattr(scipy.fft, name)(x, norm=norm, **kwargs)
        assert result.dtype == expected.dtype
        _close(to_host(result), expected, dtype)
        np.testing.assert_array_equal(to_host(device_x), before)  # the operand is never written


@pytest.mark.parametrize("name", FUNCTIONS_ND)
def test_n_dimensional_and_strided(rng, fake, name):
    base = _operand(name, (6, 8, 10), np.complex128 if name not in REAL_INPUT else np.float64, rng)
    views = [base, base[::-1, :, ::2], base.transpose(2, 0, 1), base[:, 1:7, ::-3]]
    for view in views:
        for kwargs in ({}, {"axes": (0, 2)}, {"s": (4, 6), "axes": (2, 0)}):
            if name.endswith("2") and "axes" not in kwargs:
                kwargs = {**kwargs, "axes": (-2, -1)}
            device_view = to_device(view)
            expected = getattr(scipy.fft, name)(view, **kwargs)
            _close(to_host(getattr(nfft, name)(device_view, **kwargs)), expected, np.float64)


def test_four_axes_and_broadcast(rng, fake):
    x = _operand("fftn", (3, 4, 5, 6), np.complex128, rng)
    _close(to_host(nfft.fftn(to_device(x))), np.fft.fftn(x), np.float64)
    row = _operand("fft", (8,), np.complex128, rng)
    wide = np.broadcast_to(row, (5, 8))
    _close(to_host(nfft.fft2(to_device(wide))), np.fft.fft2(wide), np.float64)


def test_plan_cache_hits_and_strides_in_key(rng, fake):
    fake_cufft, _ = fake
    x = _operand("fft", (4, 16), np.complex64, rng)
    nfft.fft(to_device(x))
    nfft.fft(to_device(x))
    info = nfft.plan_cache.info(0)
    assert (info.size, info.hits, info.misses) == (1, 1, 1)
    assert fake_cufft.executions == 2 and len(fake_cufft.plans) == 1
    nfft.fft(to_device(np.asfortranarray(x)))  # same shape, other strides: another plan
    assert nfft.plan_cache.info(0).size == 2
    nfft.plan_cache.set_limits(max_size=1)
    try:
        assert nfft.plan_cache.info(0).size == 1
    finally:
        nfft.plan_cache.set_limits(max_size=64)


def test_half_precision_inputs_are_widened(rng, fake):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = rng.standard_normal((4, 16))
    for dtype in (np.float16, ml_dtypes.bfloat16):
        narrow = x.astype(dtype)
        wide = narrow.astype(np.float64)
        result = nfft.rfft(to_device(narrow))
        assert result.dtype == np.complex64
        _close(to_host(result), np.fft.rfft(wide), np.float32)
        _close(to_host(nfft.fft(to_device(narrow))), np.fft.fft(wide), np.float32)


def test_unsupported_dtypes(fake):
    with pytest.raises(UnsupportedOperandError, match="float128") as info:
        nfft.fft(to_device(np.arange(8, dtype=np.longdouble)))
    assert info.value.argument == "x"
    with pytest.raises(UnsupportedOperandError, match="real"):
        nfft.rfft(to_device(np.ones(8, np.complex64)))


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint8, np.int16, np.int32, np.uint32, np.int64, np.uint64])
def test_integer_and_bool_operands_compute_in_double_like_scipy(rng, fake, dtype):
    x = rng.integers(0, 2 if dtype is np.bool_ else 100, (4, 10)).astype(dtype)
    for name in ("fft", "rfft", "irfft", "hfft", "ihfft", "fftn", "rfftn"):
        expected = getattr(scipy.fft, name)(x)
        result = getattr(nfft, name)(to_device(x))
        assert result.dtype == expected.dtype, name
        _close(to_host(result), expected, np.float64)


def test_overwrite_x_lets_c2r_use_the_operand(rng, fake):
    x = _operand("irfft", (4, 9), np.complex128, rng)
    expected = scipy.fft.irfft(x)
    _close(to_host(nfft.irfft(to_device(x), overwrite_x=True)), expected, np.float64)


def test_stateful_fft_on_device(rng, fake):
    fake_cufft, _ = fake
    x, y = (_operand("fft", (8, 32), np.complex64, rng) for _ in range(2))
    resource = FakeMemoryResource()
    device_x = to_device(x)
    with nfft.FFT(device_x, axes=[1], options={"memory_resource": resource}) as f:
        f.plan()
        assert resource.allocations == [] or all(n > 0 for n, _ in resource.allocations)
        _close(to_host(f.execute()), np.fft.fft(x, axis=1), np.complex64)
        assert resource.allocations, "the work area comes from the user's memory resource"
        _close(to_host(f.execute("inverse")), np.fft.ifft(x, axis=1) * 32, np.complex64)
        f.reset_operand(to_device(y))
        _close(to_host(f.execute()), np.fft.fft(y, axis=1), np.complex64)
        with pytest.raises(OperandError):
            f.reset_operand(to_device(y[:, :16]))
        assert nfft.fft(to_device(y), axis=1, plan=f) is not None
        with pytest.raises(OperandError):
            nfft.fft(to_device(y), plan=f, axis=0)
    with pytest.raises(InvalidStateError):
        f.execute()



def test_a_freed_transform_refuses_to_run(rng, fake):
    # The planned transform behind FFT (and the plan cache): after free() it raises a state error.
    from nvmathx.fft._gpu import GpuTransform

    device_x = to_device(_operand("fft", (4, 8), np.complex64, rng))
    with nfft.FFT(device_x, axes=[1]) as f:
        f.plan()
        transform = f._transform
        assert isinstance(transform, GpuTransform)
        transform.free()
        with pytest.raises(InvalidStateError, match="freed"):
            transform.execute(device_x.ptr, device_x, transform.streams(), -1)

def test_stateful_inplace_and_c2r(rng, fake):
    x = _operand("fft", (4, 6, 8), np.complex128, rng)
    device_x = to_device(x[:, ::2])
    with nfft.FFT(device_x, axes=(0, 2), options={"inplace": True}) as f:
        f.plan()
        assert f.execute() is device_x
    _close(to_host(device_x), np.fft.fftn(x[:, ::2], axes=(0, 2)), np.float64)
    spectrum = _operand("irfft", (4, 5), np.complex128, rng)
    device_spectrum = to_device(spectrum)
    with nfft.FFT(device_spectrum, options={"fft_type": "C2R", "last_axis_parity": "odd"}) as f:
        f.plan()
        result = to_host(f.execute())
    assert result.shape == (4, 9)
    _close(result, np.fft.irfftn(spectrum, s=(4, 9), axes=(0, 1)) * 36, np.float64)
    np.testing.assert_array_equal(to_host(device_spectrum), spectrum)


def test_host_operand_with_cuda_execution(rng, fake):
    x = _operand("fft", (4, 8), np.complex128, rng)
    with nfft.FFT(x, execution="cuda") as f:
        f.plan()
        result = f.execute()
        assert isinstance(result, np.ndarray)
        _close(result, np.fft.fftn(x), np.float64)
        y = _operand("fft", (4, 8), np.complex128, rng)
        f.reset_operand(y)
        _close(f.execute(), np.fft.fftn(y), np.float64)


def test_shifts_on_device(rng, fake):
    x = rng.standard_normal((5, 6))
    np.testing.assert_array_equal(to_host(nfft.fftshift(to_device(x))), np.fft.fftshift(x))
    np.testing.assert_array_equal(to_host(nfft.ifftshift(to_device(x), axes=1)), np.fft.ifftshift(x, axes=1))


def test_cached_plans_do_not_keep_operands_alive(fake):
    import gc
    import weakref

    x = to_device(np.ones((4, 8), np.complex64))
    nfft.fft(x)
    alive = weakref.ref(x)
    del x
    gc.collect()
    assert alive() is None
    assert nfft.plan_cache.info(0).size == 1


def test_empty_batch_and_zero_padding(fake):
    result = nfft.fft(to_device(np.ones((0, 8), np.complex64)))
    assert result.shape == (0, 8)
    padded = nfft.fft(to_device(np.ones((3, 0), np.complex128)), n=4)
    np.testing.assert_array_equal(to_host(padded), np.zeros((3, 4)))


def test_copy_kernel_arguments_for_many_dimensions(rng, fake):
    from nvmathx._codegen import elementwise as _kernels

    x = rng.standard_normal((2, 3) * 5)
    view = x.transpose(9, 0, 8, 1, 7, 2, 6, 3, 5, 4)[::-1]
    source = to_device(view)
    target = to_device(np.zeros(view.shape))
    _kernels.copy_nd(source.ptr, target.ptr, view.shape, source.strides, target.strides, np.float64, np.float64, 2.0,
                     False, None, 0)
    np.testing.assert_array_equal(to_host(target), 2 * view)
    assert _kernels.collapse((4, 5, 6), (30, 6, 1), (30, 6, 1)) == ((120,), (1,), (1,))


def test_transpose_plan_recognises_batches_of_row_major_matrices():
    from nvmathx._codegen.elementwise import collapse, transpose_plan

    # (3, 5, 7) row-major matrices into column-major ones: rows along the target's contiguous axis
    shape, source, target = collapse((3, 5, 7), (35, 7, 1), (35, 1, 5))
    assert transpose_plan(shape, source, target) == (3, 5, 7, 35, 7, 35, 5)
    assert transpose_plan(*collapse((5, 7), (7, 1), (1, 5))) == (1, 5, 7, 0, 7, 0, 5)
    assert transpose_plan(*collapse((4, 5, 7), (0, 7, 1), (35, 1, 5))) == (4, 5, 7, 0, 7, 35, 5)  # broadcast
    assert transpose_plan(*collapse((3, 5, 7), (35, 7, 1), (35, 7, 1))) is None  # a plain copy
    assert transpose_plan(*collapse((3, 5, 7), (35, 7, 2), (35, 1, 5))) is None  # nothing contiguous in the source
    assert transpose_plan(*collapse((2, 3, 5, 7), (105, 35, 7, 1), (105, 1, 15, 3))) is None  # two batch axes


@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
def test_copies_that_transpose_or_copy_plainly(rng, fake, dtype, monkeypatch):
    from nvmathx._codegen import elementwise as _kernels

    launches, launch = [], _kernels._launch
    monkeypatch.setattr(_kernels, "_launch", lambda stream, device_id, name, *args: (
        launches.append(name), launch(stream, device_id, name, *args)))
    x = rng.standard_normal((3, 37, 70)).astype(dtype)
    source, target = to_device(x), to_device(np.zeros((3, 70, 37), dtype))
    launches.clear()
    _kernels.copy_nd(source.ptr, target.ptr, x.shape, (37 * 70, 70, 1), (37 * 70, 1, 37), dtype, dtype, 1.0, False,
                     None, 0)
    np.testing.assert_array_equal(to_host(target), np.swapaxes(x, 1, 2))
    assert [name.partition("<")[0] for name in launches] == ["transpose"]
    launches.clear()
    copied = to_device(np.zeros_like(x))
    _kernels.copy_nd(source.ptr, copied.ptr, x.shape, (37 * 70, 70, 1), (37 * 70, 70, 1), dtype, dtype, 1.0, False,
                     types.SimpleNamespace(handle=0), 0)
    np.testing.assert_array_equal(to_host(copied), x)
    assert launches == []  # a memcpy


@pytest.mark.parametrize("source_strides, target_shape", [
    ((37 * 70, 70, 1), (3, 37, 70)),  # a plain copy: memcpy
    ((37 * 70, 1, 37), (3, 70, 37)),  # a batch of transposes
    ((2 * 37 * 70, 140, 2), (3, 37, 70)),  # the general kernel
])
def test_a_prepared_copy_serves_any_pair_of_addresses(rng, fake, source_strides, target_shape):
    from nvmathx._codegen import elementwise as _kernels

    shape = (3, 37, 70) if target_shape == (3, 37, 70) else (3, 70, 37)
    target_strides = tuple(int(np.prod(shape[i + 1:])) for i in range(3))
    copy = _kernels.prepare_copy(shape, source_strides, target_strides, np.float64, np.float64, 1.0, False, 0)
    for _ in range(2):  # new buffers each time: nothing of the first call's addresses is kept
        storage = rng.standard_normal(3 * 37 * 70 * 2)
        view = np.lib.stride_tricks.as_strided(storage, shape, tuple(8 * s for s in source_strides))
        source, target = to_device(storage), to_device(np.zeros(shape))
        copy(source.ptr, target.ptr, types.SimpleNamespace(handle=0))
        np.testing.assert_array_equal(to_host(target), view)
    assert _kernels.prepare_copy((0, 5), (5, 1), (5, 1), np.float64, np.float64, 1.0, False, 0) is _kernels._no_copy


def test_hypothesis_functions_on_the_stand_in(monkeypatch):
    from hypothesis import given, settings
    from hypothesis import strategies as st

    nfft.plan_cache.clear()
    install(monkeypatch)

    @st.composite
    def problems(draw):
        ndim = draw(st.integers(1, 4))
        shape = tuple(draw(st.lists(st.integers(1, 6), min_size=ndim, max_size=ndim)))
        steps = tuple(draw(st.lists(st.sampled_from([1, 2, -1, -2]), min_size=ndim, max_size=ndim)))
        perm = tuple(draw(st.permutations(range(ndim))))
        axes = tuple(draw(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True)))
        name = draw(st.sampled_from(["fftn", "ifftn", "rfftn", "irfftn"]))
        s = draw(st.none() | st.tuples(*[st.integers(1, 8) for _ in axes]))
        norm = draw(st.sampled_from([None, "ortho", "forward"]))
        single = draw(st.booleans())
        return shape, steps, perm, axes, name, s, norm, single

    @settings(max_examples=200, deadline=None)
    @given(problems())
    def check(problem):
        shape, steps, perm, axes, name, s, norm, single = problem
        rng = np.random.default_rng(0)
        big = tuple(e * abs(step) for e, step in zip(shape, steps))
        base = rng.standard_normal(big) + (0 if name == "rfftn" else 1j * rng.standard_normal(big))
        if single:
            base = base.astype(np.float32 if name == "rfftn" else np.complex64)
        host = base[tuple(slice(None, None, step) for step in steps)].transpose(perm)
        if name == "irfftn" and s is None and host.shape[axes[-1]] < 2:
            return
        result = getattr(nfft, name)(to_device(host), s=s, axes=axes, norm=norm)
        expected = getattr(scipy.fft, name)(host.astype(np.complex128 if name != "rfftn" else np.float64), s=s,
                                            axes=axes, norm=norm)
        _close(to_host(result), expected, base.dtype)

    try:
        check()
    finally:
        nfft.plan_cache.clear()


def _misaligned(array, resource=None):
    """A DeviceArray holding ``array`` one element past an aligned address."""
    from nvmathx._core.device_array import DeviceArray

    from ._fake_device import view_at

    array = np.ascontiguousarray(array)
    resource = resource or FakeMemoryResource()
    buffer = resource.allocate((array.size + 1) * array.itemsize)
    pointer = buffer.handle + array.itemsize
    strides = tuple(s // array.itemsize for s in array.strides)
    view_at(pointer, array.shape, strides, array.dtype)[...] = array
    return DeviceArray(buffer, pointer, array.shape, strides, array.dtype, 0, None)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_real_transforms_keep_cufft_alignment(rng, fake, dtype):
    # The stand-in refuses, as cuFFT does, a real side not aligned to the complex element.
    x = rng.standard_normal((3, 5, 3)).astype(dtype)  # batches at odd real offsets along axis 0
    _close(to_host(nfft.rfft(to_device(x), axis=1)), scipy.fft.rfft(x, axis=1), dtype)
    z = scipy.fft.rfft(x, axis=1)
    _close(to_host(nfft.irfft(to_device(z), n=5, axis=1)), scipy.fft.irfft(z, n=5, axis=1), dtype)
    _close(to_host(nfft.rfft(_misaligned(x))), scipy.fft.rfft(x), dtype)
    transposed = rng.standard_normal((2, 2, 2)).astype(dtype).transpose(0, 2, 1)  # the GPU run's falsifying case
    _close(to_host(nfft.rfftn(to_device(transposed), axes=(0,))), scipy.fft.rfftn(transposed, axes=(0,)), dtype)


def test_stateful_rfft_replans_for_a_misaligned_operand(rng, fake):
    x, y = rng.standard_normal((2, 4, 6))
    with nfft.FFT(to_device(x)) as f:
        f.plan()
        _close(to_host(f.execute()), scipy.fft.rfftn(x), np.float64)
        f.reset_operand(_misaligned(y))
        _close(to_host(f.execute()), scipy.fft.rfftn(y), np.float64)
        f.reset_operand(to_device(x))
        _close(to_host(f.execute()), scipy.fft.rfftn(x), np.float64)


def test_results_come_back_in_each_callers_library(rng, fake, monkeypatch):
    """Two libraries' operands of one layout share a cuFFT plan but not a result allocator."""
    from nvmathx._core.tensor import _lookup, _nvmathx

    class OtherArray(DeviceArray):  # a second "array library" over the same fake device memory
        pass

    class OtherAdapter(_nvmathx.NvmathxAdapter):
        name = "otherlib"

        def from_device_array(self, array):
            return OtherArray(array, array.ptr, array.shape, array.strides, array.dtype, array.device_id, None)

    monkeypatch.setitem(_lookup.ADAPTER_CLASSES, "otherlib", OtherAdapter)
    monkeypatch.setitem(_lookup.adapter_by_type, OtherArray, _lookup.adapter_named("otherlib"))
    x = _operand("fft", (4, 32), np.complex128, rng)
    ours = to_device(x)
    other = OtherArray(ours, ours.ptr, ours.shape, ours.strides, ours.dtype, 0, None)
    first, second = nfft.fft(ours), nfft.fft(other)
    assert type(first) is DeviceArray and type(second) is OtherArray
    _close(to_host(second), scipy.fft.fft(x), np.complex128)


@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "irfft2", "ihfftn", "hfftn"])
def test_functions_with_cuda_execution_of_a_host_operand(rng, fake, name):
    """``execution="cuda"``: a numpy operand is transformed on the (fake) GPU and comes back as numpy,
    equal to scipy.fft's result, with scipy's ``n``/``s`` and ``norm`` applied."""
    dtype = np.float64 if name in ("rfft", "ihfft", "ihfftn") else np.complex128
    x = _operand(name, (4, 6), dtype, rng)
    sizes = {"n": 10} if name in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft") else {"s": (5, 8)}
    result = getattr(nfft, name)(x, **sizes, norm="ortho", execution="cuda")
    assert isinstance(result, np.ndarray)
    _close(result, getattr(scipy.fft, name)(x, **sizes, norm="ortho"), np.float64)


def test_functions_take_a_stream_for_device_operands(rng, fake):
    x = _operand("fft", (4, 8), np.complex128, rng)
    device_x = to_device(x)
    _close(to_host(nfft.fftn(device_x, stream=0)), np.fft.fftn(x), np.float64)
    _close(to_host(nfft.fftn(device_x, execution={"name": "cuda"}, stream=0)), np.fft.fftn(x), np.float64)
    with pytest.raises(OperandError, match="^execution"):  # the CPU space takes host operands only
        nfft.fft(device_x, execution="cpu")
