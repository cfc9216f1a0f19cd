"""Problems with an extent of 0 (M, N, K or the batch), as numpy.matmul defines them, in every
space: the CPU (checked against formulas written out here), the GPU code path on the host
stand-in ("fake-gpu", where the kernels run as host C++) and a GPU, both checked against the CPU.
No cuBLASLt call is made for them."""

import gc

import numpy as np
import pytest

from nvmathx import OperandError, OptionsError
from nvmathx._core.dtypes import numpy_dtype
from nvmathx._matmulcore.epilogs import gelu_aux_ld, relu_aux_width
from nvmathx.linalg import Matmul, MatmulAlgorithm, matmul, plan_cache

from ._fake_cublaslt import install, to_device, to_host
from ._gpu import to_numpy, to_torch
from ._reference import BACKWARD, FORWARD, gelu, gelu_derivative, random, relative_error, tolerance

SPACES = ["cpu", "fake-gpu", pytest.param("gpu", marks=pytest.mark.gpu)]
DEVICE_SPACES = SPACES[1:]


class Space:
    """Operands and results of one space, and a guard that no cuBLASLt call is made."""

    def __init__(self, name, monkeypatch):
        self.name = name
        if name == "gpu":
            pytest.importorskip("torch")
        self.fake = install(monkeypatch)[0] if name == "fake-gpu" else None
        if name != "cpu":
            from nvmathx._bindings import cublaslt as lt

            for function in ("create", "matmul_desc_create", "matrix_layout_create", "algo_get_heuristic",
                             "algo_check", "matmul_function"):
                monkeypatch.setattr(lt, function, _forbidden(function))

    def __call__(self, array):
        """``array`` (host numpy) in this space."""
        if array is None or self.name == "cpu":
            return array
        return to_device(array) if self.name == "fake-gpu" else to_torch(array)

    def inputs(self, inputs):
        return {name: self(value) for name, value in inputs.items()} or None

    def host(self, result):
        """A result of this space as a host numpy array (a dict of them for auxiliary outputs)."""
        if isinstance(result, tuple):
            return self.host(result[0]), {name: self.host(value) for name, value in result[1].items()}
        if isinstance(result, np.ndarray):
            return result
        return to_host(result) if self.name == "fake-gpu" else to_numpy(result)


def _dtype(name):
    return numpy_dtype(name)


def _forbidden(name):
    def call(*args, **kwargs):
        raise AssertionError(f"cuBLASLt's {name} was called for a problem with an extent of 0")

    return call


@pytest.fixture
def space(request, monkeypatch):
    yield Space(request.param, monkeypatch)
    plan_cache.clear()
    gc.collect()


def _both_forms(space, a, b, c=None, **kwargs):
    """(function form, Matmul) results of one call in ``space``, as host arrays."""
    epilog = kwargs.pop("epilog", None)
    inputs = kwargs.pop("epilog_inputs", {})
    device_inputs = space.inputs(inputs)
    function = matmul(space(a), space(b), space(c), epilog=epilog, epilog_inputs=device_inputs, **kwargs)
    again = matmul(space(a), space(b), space(c), epilog=epilog, epilog_inputs=device_inputs, **kwargs)  # cached
    with Matmul(space(a), space(b), space(c), **kwargs) as mm:
        assert mm.plan(epilog=epilog, epilog_inputs=device_inputs) == []
        assert mm.algorithms == [] and mm.autotune() == []
        stateful = mm.execute()
    return space.host(function), space.host(again), space.host(stateful)


# -- shapes and dtypes -------------------------------------------------------------------------

SHAPES = [
    ((0, 3), (3, 4)), ((2, 3), (3, 0)), ((2, 0), (0, 4)), ((0, 0), (0, 0)), ((0,), (0,)), ((0,), (0, 4)),
    ((2, 0), (0,)), ((3,), (3, 0)), ((0, 2, 3), (3, 4)), ((1, 2, 3), (0, 3, 4)), ((0, 1, 2, 0), (3, 0, 4)),
    ((2, 1, 5, 0), (3, 0, 4)), ((2, 5, 0), (2, 0, 4)),
]


@pytest.mark.parametrize("space", SPACES, indirect=True)
@pytest.mark.parametrize("a_shape, b_shape", SHAPES)
def test_shapes_dtypes_and_values_are_numpy_s(space, a_shape, b_shape):
    a, b = np.ones(a_shape, np.float32), np.ones(b_shape, np.float32)
    expected = np.matmul(a, b)
    for result in _both_forms(space, a, b):
        assert result.shape == np.shape(expected) and result.dtype == np.float32
        np.testing.assert_array_equal(result, expected)  # empty, or zeros for K = 0


@pytest.mark.parametrize("space", SPACES, indirect=True)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64", "complex64", "complex128"])
def test_k_zero_is_beta_c_in_every_dtype(rng, space, dtype):
    a, b, c = np.zeros((2, 6, 0), _dtype(dtype)), np.zeros((0, 5), _dtype(dtype)), random(rng, (6, 5), dtype)
    beta = 0.5 - 2j if dtype.startswith("complex") else -0.75
    wide = np.complex128 if dtype.startswith("complex") else np.float64
    expected = np.broadcast_to(beta * c.astype(wide), (2, 6, 5))
    for result in _both_forms(space, a, b, c, alpha=np.inf, beta=beta):  # alpha scales a product of 0: unused
        assert result.dtype == c.dtype and result.shape == (2, 6, 5)
        assert relative_error(result, expected) < tolerance(dtype)
    for result in _both_forms(space, a, b, np.full((6, 5), np.nan, _dtype(dtype)), beta=0):  # beta 0: c unread
        np.testing.assert_array_equal(result.astype(wide), np.zeros((2, 6, 5)))


# -- epilogs -----------------------------------------------------------------------------------

def _packed(positive):
    """The relu_aux bitmask of a boolean (..., M, N) array, written out: N padded to 128 bits."""
    n = positive.shape[-1]
    padded = np.zeros(positive.shape[:-1] + (-(-n // 128) * 128,), bool)
    padded[..., :n] = positive
    return np.packbits(padded, axis=-1, bitorder="little")


def _unpacked(relu_aux, n):
    return np.unpackbits(relu_aux, axis=-1, bitorder="little")[..., :n].astype(bool)


def _expected(epilog, a, b, c, beta, inputs):
    """The documented semantics in float64: d = beta * c (K = 0) or the empty product, the bias,
    then the epilog; its outputs by definition (sums over an empty axis are 0)."""
    d = np.matmul(a.astype(np.float64), b.astype(np.float64))
    if c is not None:
        d = d + beta * c.astype(np.float64)
    if "bias" in inputs:
        d = d + inputs["bias"].astype(np.float64)
    outputs = {}
    if "AUX" in epilog:
        outputs["relu_aux" if "RELU" in epilog else "gelu_aux"] = _packed(d > 0) if "RELU" in epilog else d
    if epilog.startswith(("RELU", "GELU")):
        d = np.maximum(d, 0) if epilog.startswith("RELU") else gelu(d)
    if epilog.startswith("DRELU"):
        d = d * _unpacked(inputs["relu_aux"], d.shape[-1])
    if epilog.startswith("DGELU"):
        d = d * gelu_derivative(inputs["gelu_aux"].astype(np.float64))
    if epilog.endswith("_BGRAD"):
        outputs[epilog.lower()] = d.sum(axis=-2)
    if epilog == "BGRADA":
        outputs["bgrada"] = np.broadcast_to(a.astype(np.float64).sum(axis=-1), d.shape[:-1])
    if epilog == "BGRADB":
        outputs["bgradb"] = np.broadcast_to(b.astype(np.float64).sum(axis=-2), d.shape[:-2] + d.shape[-1:])
    return d, outputs


def _epilog_case(rng, epilog, batch, m, n, k):
    a, b = random(rng, batch + (m, k), "float32"), random(rng, (k, n), "float32")
    c = random(rng, (m, n), "float32") if epilog in ("BIAS", "RELU", "GELU_AUX", "DRELU_BGRAD", "DGELU", "BGRADA") \
        else None
    inputs = {}
    if "BIAS" in epilog and "BGRAD" not in epilog:
        inputs["bias"] = random(rng, (n,), "float32")
    if epilog.startswith("DRELU"):
        inputs["relu_aux"] = rng.integers(0, 256, batch + (m, relu_aux_width(n)), dtype=np.uint8)  # padding bits too
    if epilog.startswith("DGELU"):
        padded = random(rng, batch + (m, gelu_aux_ld(n)), "float32")
        inputs["gelu_aux"] = padded[..., :n]  # a view, as a forward pass hands it over
    return a, b, c, inputs


EXTENTS = {"K=0": ((3,), 5, 20, 0), "M=0": ((3,), 0, 20, 4), "N=0": ((3,), 5, 0, 4), "batch=0": ((0,), 5, 20, 4),
           "M=N=K=0": ((2,), 0, 0, 0)}


@pytest.mark.parametrize("space", SPACES, indirect=True)
@pytest.mark.parametrize("extents", list(EXTENTS), ids=str)
@pytest.mark.parametrize("epilog", FORWARD + BACKWARD)
def test_every_epilog_and_output(rng, space, epilog, extents):
    batch, m, n, k = EXTENTS[extents]
    a, b, c, inputs = _epilog_case(rng, epilog, batch, m, n, k)
    beta = -0.75 if c is not None else 0
    expected, expected_outputs = _expected(epilog, a, b, c, beta, inputs)
    for got in _both_forms(space, a, b, c, beta=beta, epilog=epilog, epilog_inputs=inputs):
        result, outputs = got if isinstance(got, tuple) else (got, {})
        assert result.shape == expected.shape and result.dtype == np.float32
        assert relative_error(result, expected) < tolerance("float32")
        assert set(outputs) == set(expected_outputs)
        for name, value in expected_outputs.items():
            assert outputs[name].shape == value.shape, name
            if name == "relu_aux":
                assert outputs[name].dtype == np.uint8
                np.testing.assert_array_equal(_unpacked(outputs[name], n), _unpacked(value, n))
            else:
                assert relative_error(outputs[name], value) < tolerance("float32"), name


@pytest.mark.parametrize("space", SPACES, indirect=True)
def test_bias_shapes_and_broadcast_c_with_k_zero(rng, space):
    a, b = np.zeros((2, 3, 4, 0), np.float32), np.zeros((0, 6), np.float32)
    for bias in (random(rng, (6,)), random(rng, (3, 1, 6)), random(rng, (2, 3, 4, 6)), random(rng, (4, 6))):
        expected = np.broadcast_to(np.maximum(bias.astype(np.float64), 0), (2, 3, 4, 6))
        for result in _both_forms(space, a, b, epilog="RELU_BIAS", epilog_inputs={"bias": bias}):
            assert relative_error(result, expected) < tolerance("float32")
    c = random(rng, (1, 3, 4, 6))
    for result in _both_forms(space, a, b, c, beta=2.0, epilog="BIAS", epilog_inputs={"bias": random(rng, (6,)) * 0}):
        assert relative_error(result, np.broadcast_to(2.0 * c, (2, 3, 4, 6))) < tolerance("float32")


@pytest.mark.parametrize("space", SPACES, indirect=True)
def test_many_batch_dimensions(rng, space):
    """More batch dimensions than the kernel takes at once (they are looped over by launches), some
    of them broadcast."""
    a = np.zeros((2, 1, 3, 1, 2, 1, 4, 0), np.float32)
    b = np.zeros((1, 2, 1, 3, 1, 2, 0, 5), np.float32)
    c = random(rng, (2, 1, 3, 1, 2, 1, 4, 5))
    expected = np.broadcast_to(0.5 * c.astype(np.float64), (2, 2, 3, 3, 2, 2, 4, 5))
    for result in _both_forms(space, a, b, c, beta=0.5, epilog="GELU_AUX"):
        result, outputs = result
        assert relative_error(result, gelu(expected)) < tolerance("float32")
        assert relative_error(outputs["gelu_aux"], expected) < tolerance("float32")


@pytest.mark.parametrize("space", SPACES, indirect=True)
def test_float8_with_k_zero_and_empty(rng, space):
    import ml_dtypes

    e4m3 = ml_dtypes.float8_e4m3fn
    a, b = np.zeros((32, 0), e4m3), np.zeros((0, 16), e4m3)
    c = (random(rng, (32, 16), "float32") * 300).astype(ml_dtypes.bfloat16)
    options = {"result_type": "float8_e4m3fn", "result_amax": True}
    scaled = 3.0 * c.astype(np.float64)
    for result, outputs in _both_forms(space, a, b, c, beta=3.0, options=options, quantization_scales={"d": 0.5}):
        assert result.dtype == e4m3
        expected = np.clip(0.5 * scaled, -448, 448)  # float8 saturates
        assert relative_error(result, expected) < tolerance("float8_e4m3fn")
        np.testing.assert_allclose(float(outputs["result_amax"]), np.abs(scaled).max(), rtol=1e-2)
    empty = np.zeros((0, 16), e4m3)
    for result, outputs in _both_forms(space, empty, np.zeros((16, 16), e4m3).T, options=options):
        assert result.shape == (0, 16) and float(outputs["result_amax"]) == 0.0  # the largest of nothing


# -- plans -------------------------------------------------------------------------------------

@pytest.mark.parametrize("space", SPACES, indirect=True)
def test_stateful_plan_execute_reset_autotune(rng, space):
    a, b = np.zeros((4, 0), np.float32), np.zeros((0, 3), np.float32)
    c1, c2 = random(rng, (4, 3)), random(rng, (4, 3))
    with Matmul(space(a), space(b), space(c1), beta=1.0) as mm:
        assert mm.plan(epilog="RELU", preferences={"autotune": True, "limit": 2}) == []
        assert mm.autotune(iterations=3) == [] and mm.algorithms == []
        np.testing.assert_allclose(space.host(mm.execute()), np.maximum(c1, 0), rtol=1e-6)
        mm.reset_operands(c=space(c2), beta=-2.0)
        np.testing.assert_allclose(space.host(mm.execute(release_workspace=True)), np.maximum(-2 * c2, 0), rtol=1e-6)
        mm.reset_operands(a=space(np.zeros((4, 0), np.float32)), beta=0.0)
        np.testing.assert_array_equal(space.host(mm.execute()), np.zeros((4, 3)))
        with pytest.raises(Exception) as info:
            mm.execute(algorithm=MatmulAlgorithm(bytes(64), 0, 0.0))
        assert info.value.argument == "algorithm"
        if space.name != "cpu":
            assert mm.plan(algorithms=[]) == []  # re-planned: nothing to choose
            with pytest.raises(OperandError) as info:
                mm.plan(algorithms=["fastest"])
            assert info.value.argument == "algorithms"
        else:  # the CPU space takes no algorithms at all, rather than ignoring them
            with pytest.raises(OptionsError) as info:
                mm.plan(algorithms=[])
            assert info.value.argument == "algorithms"
    with Matmul(space(np.zeros((0, 5), np.float32)), space(np.ones((5, 2), np.float32))) as mm:
        mm.plan()
        assert space.host(mm.execute()).shape == (0, 2)


@pytest.mark.parametrize("space", DEVICE_SPACES, indirect=True)
def test_function_form_caches_the_plan_and_reads_c_each_call(rng, space):
    a, b = space(np.zeros((6, 0), np.float32)), space(np.zeros((0, 5), np.float32))
    for beta in (1.0, 2.0, 2.0):
        c = random(rng, (6, 5))
        result = space.host(matmul(a, b, space(c), beta=beta, epilog="GELU"))
        assert relative_error(result, gelu(beta * c.astype(np.float64))) < tolerance("float32")
    info = plan_cache.info(0)
    assert (info.size, info.misses, info.hits) == (1, 1, 2)


def test_host_operands_run_on_the_gpu_path(rng, monkeypatch):
    space = Space("fake-gpu", monkeypatch)
    a, b, c = np.zeros((2, 4, 0), np.float32), np.zeros((0, 3), np.float32), random(rng, (4, 3))
    result, outputs = matmul(a, b, c, beta=1.0, epilog="RELU_AUX", execution="cuda")
    assert isinstance(result, np.ndarray) and isinstance(outputs["relu_aux"], np.ndarray)
    np.testing.assert_array_equal(result, np.broadcast_to(np.maximum(c, 0), (2, 4, 3)))
    np.testing.assert_array_equal(_unpacked(outputs["relu_aux"], 3), np.broadcast_to(c > 0, (2, 4, 3)))
    assert space.fake.launches == 0
    plan_cache.clear()


def test_device_work_is_stream_ordered_without_synchronising(rng, monkeypatch):
    """What a CUDA graph needs: every launch and memset on the execution stream, and no wait."""
    Space("fake-gpu", monkeypatch)
    from nvmathx._bindings import cuda_driver
    from nvmathx.linalg import _kernels

    streams = []
    launch, memset = _kernels.launch, cuda_driver.memset_async
    monkeypatch.setattr(_kernels, "launch",
                        lambda stream, *args: (streams.append(stream.handle), launch(stream, *args)))
    monkeypatch.setattr(cuda_driver, "memset_async", lambda ptr, value, n, handle: (streams.append(handle),
                                                                                    memset(ptr, value, n, handle)))
    import ml_dtypes

    e4m3 = ml_dtypes.float8_e4m3fn
    a, b = to_device(np.zeros((16, 0), e4m3)), to_device(np.zeros((0, 16), e4m3))
    c = to_device(random(rng, (16, 16), "bfloat16"))
    with Matmul(a, b, c, beta=1.0, options={"result_type": "float8_e4m3fn", "result_amax": True}) as mm:
        mm.plan()

        def no_sync(handle):
            raise AssertionError("execute() synchronised")

        monkeypatch.setattr(cuda_driver, "stream_synchronize", no_sync)
        mm.execute(stream=7)
        matmul(a, b, c, beta=1.0, options={"result_type": "float8_e4m3fn", "result_amax": True}, stream=7)
    assert len(streams) >= 4 and set(streams) == {7}
    plan_cache.clear()
    gc.collect()


# -- conversions -------------------------------------------------------------------------------

def _every(dtype_name):
    """Every value of a 16-bit dtype (NaN and infinity included), as a 256 x 256 array."""
    return np.arange(1 << 16, dtype=np.uint16).view(numpy_dtype(dtype_name)).reshape(256, 256)


@pytest.mark.parametrize("space", DEVICE_SPACES, indirect=True)
@pytest.mark.parametrize("c_dtype, result_dtype", [("float16", "float16"), ("bfloat16", "bfloat16"),
                                                   ("bfloat16", "float8_e4m3fn"), ("float16", "float8_e5m2"),
                                                   ("bfloat16", "float8_e5m2"), ("float16", "float8_e4m3fn")])
@pytest.mark.parametrize("beta", [1.0, 0.3, 1e4])
@pytest.mark.filterwarnings("ignore:.*encountered in:RuntimeWarning")  # the CPU space on NaN and infinity
def test_conversions_round_as_the_cpu_space(space, c_dtype, result_dtype, beta):
    """Every 16-bit input through the kernels' loads and stores, compared bit for bit with the CPU
    space (numpy / ml_dtypes casts): nearest even, float8 saturating, float16 overflowing."""
    c = _every(c_dtype)
    operand = "float8_e4m3fn" if result_dtype.startswith("float8") else c_dtype
    a, b = np.zeros((256, 0), _dtype(operand)), np.zeros((0, 256), _dtype(operand))
    options = {"result_type": result_dtype}
    cpu = matmul(a, b, c, beta=beta, options=options, execution="cpu")
    gpu = space.host(matmul(space(a), space(b), space(c), beta=beta, options=options))
    assert gpu.dtype == cpu.dtype
    nan = np.isnan(cpu.astype(np.float32))
    np.testing.assert_array_equal(np.isnan(gpu.astype(np.float32)), nan)
    np.testing.assert_array_equal(gpu.view(f"u{gpu.dtype.itemsize}")[~nan], cpu.view(f"u{cpu.dtype.itemsize}")[~nan])


@pytest.mark.parametrize("space", DEVICE_SPACES, indirect=True)
@pytest.mark.parametrize("dtype", ["float8_e4m3fn", "float8_e5m2"])
def test_float8_inputs_load_exactly(space, dtype):
    """Every float8 value as a bias of a float8 result with K = 0 comes back unchanged (infinities
    saturated to the largest finite value, as float8 results are)."""
    e4m3 = _dtype("float8_e4m3fn")
    bias = np.arange(256, dtype=np.uint8).view(_dtype(dtype))
    a, b = np.zeros((16, 0), e4m3), np.zeros((0, 256), e4m3)
    result = space.host(matmul(space(a), space(b), epilog="BIAS", epilog_inputs={"bias": space(bias)},
                               options={"result_type": dtype}))
    nan = np.isnan(bias.astype(np.float32))
    largest = {"float8_e4m3fn": 448.0, "float8_e5m2": 57344.0}[dtype]
    expected = np.broadcast_to(np.clip(bias.astype(np.float32), -largest, largest), (16, 256))
    np.testing.assert_array_equal(np.isnan(result.astype(np.float32)), np.broadcast_to(nan, (16, 256)))
    np.testing.assert_array_equal(result.astype(np.float32)[:, ~nan], expected[:, ~nan])


def test_the_kernels_compile_for_the_gpu():
    """NVRTC compiles the kernel source for Hopper and every name the runner launches (no GPU needed)."""
    try:
        from cuda.core import Program  # noqa: F401

        from nvmathx.linalg._kernels import KERNEL_NAMES, compile_kernels

        code = compile_kernels("sm_90")
    except (ImportError, RuntimeError) as error:  # no cuda.core, or no NVRTC library to load
        if "nvrtc" not in str(error).lower() and not isinstance(error, ImportError):
            raise
        pytest.skip(f"NVRTC is not available: {error}")
    assert code.code_type == "cubin" and len(KERNEL_NAMES) == 6


def test_float8_scales_are_written_by_a_kernel_into_their_slots(rng):
    """The scale slots cuBLASLt reads (16 bytes apart) get the three values; the rest is untouched."""
    from nvmathx.linalg._runner import _SCALE_SLOT_BYTES, _SCALE_SLOTS, _slot_index

    from ._host_kernels import host_launch

    slots = np.full(_SCALE_SLOT_BYTES // 4 * len(_SCALE_SLOTS), -1.0, np.float32)
    values = rng.uniform(0.1, 10.0, 3).astype(np.float32)
    host_launch(None, 0, "set_float8_scales", 1, slots.ctypes.data, *values)
    for key, value in zip("abd", values):
        assert slots[_slot_index(key)] == value
    written = [_slot_index(key) for key in "abd"]
    assert (np.delete(slots, written) == -1.0).all()


@pytest.mark.gpu
def test_k_zero_is_captured_in_a_cuda_graph(rng):
    torch = pytest.importorskip("torch")
    a, b = torch.empty((64, 0), device="cuda"), torch.empty((0, 32), device="cuda")
    c = torch.from_numpy(random(rng, (64, 32))).cuda()
    bias = torch.from_numpy(random(rng, (32,))).cuda()
    with Matmul(a, b, c, beta=0.5) as mm:
        mm.plan(epilog="RELU_AUX_BIAS", epilog_inputs={"bias": bias})
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            mm.execute(stream=stream)  # compiles and loads the kernels outside the capture
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            result, outputs = mm.execute(stream=stream)
        for _ in range(2):
            c.copy_(torch.from_numpy(random(rng, (64, 32))).cuda())
            graph.replay()
            torch.cuda.synchronize()
            z = 0.5 * c.double() + bias.double()
            assert torch.allclose(result.double(), torch.relu(z), rtol=1e-6, atol=1e-6)
            mask = _unpacked(outputs["relu_aux"].cpu().numpy(), 32)
            np.testing.assert_array_equal(mask, (z > 0).cpu().numpy())
