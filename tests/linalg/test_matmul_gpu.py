"""GPU results against the CPU execution space: dtypes x epilogs, random shapes and layouts, float8."""

import numpy as np
import pytest

from helpers.torch_random import randn
from nvmathx.linalg import matmul, relu_mask

from ._gpu import to_numpy, to_torch
from ._reference import BACKWARD, FORWARD, epilog_operands, random, reference, relative_error, tolerance

pytestmark = pytest.mark.gpu

# What cuBLASLt must support on sm_90 (anything else may be skipped when it says NOT_SUPPORTED).
REQUIRED = ({(d, e, ()) for d in ("float16", "bfloat16") for e in FORWARD + BACKWARD}
            | {(d, e, (2,)) for d in ("float16", "bfloat16") for e in FORWARD}
            | {("float32", e, batch) for e in FORWARD for batch in ((), (2,))}
            | {(d, None, batch) for d in ("float16", "bfloat16", "float32", "float64") for batch in ((), (2,))})
M, N, K = 96, 72, 40


def _device(array):
    """A torch copy keeping a transposed (column-major) layout."""
    if array.ndim >= 2 and not array.flags.c_contiguous and array.swapaxes(-1, -2).flags.c_contiguous:
        return to_torch(array.swapaxes(-1, -2)).transpose(-1, -2)
    return to_torch(array)


def _tolerance(dtype, epilog):
    """The dtype's tolerance; activations (tanh inside GELU) computed on the GPU in the compute
    precision may differ from numpy's by a few ulps more."""
    if epilog is None or dtype in ("float16", "bfloat16"):
        return tolerance(dtype)
    return max(tolerance(dtype), 1e-4 if dtype == "float32" else 1e-6)


def _compare_outputs(gpu_aux, cpu_aux, result_dtype, epilog):
    assert set(gpu_aux) == set(cpu_aux)
    for name, expected in cpu_aux.items():
        got = to_numpy(gpu_aux[name])
        if name == "relu_aux":
            n = N
            mismatch = np.mean(relu_mask(got, n) != relu_mask(expected, n))
            assert got.shape == expected.shape and mismatch < 5e-3, f"{name}: {mismatch:.2%} of the bits differ"
        else:
            assert got.shape == expected.shape, name
            assert relative_error(got, np.asarray(expected).astype(np.float64)) < _tolerance(result_dtype, epilog), name


@pytest.mark.parametrize("batch", [(), (2,)], ids=["single", "batched"])
@pytest.mark.parametrize("epilog", [None] + FORWARD + BACKWARD)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_dtype_and_epilog_match_cpu(rng, dtype, epilog, batch):
    from nvmathx._bindings.cublaslt import CublasLtError

    a, b, inputs = epilog_operands(rng, dtype, epilog, batch, M, N, K)
    cpu = matmul(a, b, epilog=epilog, epilog_inputs=inputs or None, execution="cpu")
    try:
        gpu = matmul(
            _device(a), _device(b), epilog=epilog, epilog_inputs={k: _device(v) for k, v in inputs.items()} or None
        )
    except CublasLtError as error:
        if (dtype, epilog, batch) in REQUIRED or error.status_name != "CUBLAS_STATUS_NOT_SUPPORTED":
            raise
        pytest.skip(f"cuBLASLt does not support {dtype} with {epilog} (batch {batch}) on this device")
    if isinstance(cpu, tuple):
        (gpu, gpu_aux), (cpu, cpu_aux) = gpu, cpu
        _compare_outputs(gpu_aux, cpu_aux, dtype, epilog)
    assert tuple(gpu.shape) == cpu.shape
    assert relative_error(to_numpy(gpu), np.asarray(cpu).astype(np.float64)) < _tolerance(dtype, epilog)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_with_alpha_beta_c(rng, dtype):
    a, b, c = random(rng, (3, 33, 17), dtype), random(rng, (17, 9), dtype), random(rng, (33, 9), dtype)
    result = matmul(to_torch(a), to_torch(b), to_torch(c), alpha=0.5 - 2j, beta=1.5 + 0.25j)
    assert relative_error(to_numpy(result), reference(a, b, c, 0.5 - 2j, 1.5 + 0.25j)) < tolerance(dtype)


def test_gelu_aux_padding_round_trips_through_dgelu(rng):
    """N not a multiple of 8: gelu_aux is a view of a padded buffer that DGELU takes back."""
    torch = pytest.importorskip("torch")
    x, w, bias = (randn(rng, *s, device="cuda", dtype=torch.float16) for s in ((64, 32), (32, 70), (70,)))
    y, aux = matmul(x, w, epilog="GELU_AUX_BIAS", epilog_inputs={"bias": bias})
    assert tuple(aux["gelu_aux"].shape) == (64, 70) and aux["gelu_aux"].stride(0) == 72
    z = (x.float() @ w.float() + bias.float())
    assert relative_error(to_numpy(aux["gelu_aux"]), z.double().cpu().numpy()) < 2e-2
    dout = randn(rng, 64, 16, device="cuda", dtype=torch.float16)
    w2 = randn(rng, 70, 16, device="cuda", dtype=torch.float16)
    dz = matmul(dout, w2.T, epilog="DGELU", epilog_inputs={"gelu_aux": aux["gelu_aux"]})
    cpu = matmul(
        to_numpy(dout),
        to_numpy(w2).T,
        epilog="DGELU",
        epilog_inputs={"gelu_aux": to_numpy(aux["gelu_aux"])},
        execution="cpu",
    )
    assert relative_error(to_numpy(dz), cpu.astype(np.float64)) < tolerance("float16")


@pytest.mark.parametrize("bias_shape", [(2, 1, 72), (2, 96, 72), (96, 72)])
def test_other_bias_shapes(rng, bias_shape):
    a, b = random(rng, (2, 96, 40), "bfloat16"), random(rng, (40, 72), "bfloat16")
    bias = random(rng, bias_shape, "bfloat16")
    cpu = matmul(a, b, epilog="GELU_BIAS", epilog_inputs={"bias": bias}, execution="cpu")
    gpu = matmul(to_torch(a), to_torch(b), epilog="GELU_BIAS", epilog_inputs={"bias": to_torch(bias)})
    assert relative_error(to_numpy(gpu), cpu.astype(np.float64)) < tolerance("bfloat16")


@pytest.mark.parametrize("b_dtype", ["float8_e4m3fn", "float8_e5m2"])
@pytest.mark.parametrize("epilog", [None, "RELU", "GELU", "BIAS", "GELU_BIAS"])
def test_float8_bf16_result(rng, b_dtype, epilog):
    torch = pytest.importorskip("torch")
    a = random(rng, (128, 64), "float8_e4m3fn")
    b_rows = random(rng, (96, 64), b_dtype)  # b = b_rows.T, K contiguous
    bias = random(rng, (96,), "bfloat16")
    inputs = {"bias": bias} if epilog and "BIAS" in epilog else None
    scales = {"a": 0.5, "b": 1.5}
    options = {"result_type": "bfloat16"}
    cpu = matmul(
        a, b_rows.T, epilog=epilog, epilog_inputs=inputs, quantization_scales=scales, options=options, execution="cpu"
    )
    device_scales = {"a": torch.tensor(0.5, device="cuda"), "b": 1.5}
    gpu = matmul(
        to_torch(a),
        to_torch(b_rows).T,
        epilog=epilog,
        epilog_inputs={"bias": to_torch(bias)} if inputs else None,
        quantization_scales=device_scales,
        options=options,
    )
    assert gpu.dtype == torch.bfloat16
    assert relative_error(to_numpy(gpu), cpu.astype(np.float64)) < tolerance("bfloat16")


def test_float8_result_with_d_scale_and_amax(rng):
    torch = pytest.importorskip("torch")
    a, b_rows = random(rng, (64, 128), "float8_e4m3fn"), random(rng, (32, 128), "float8_e4m3fn")
    scales = {"a": 2.0, "b": 0.5, "d": 0.125}
    options = {"result_type": "float8_e4m3fn", "result_amax": True}
    cpu, cpu_aux = matmul(a, b_rows.T, quantization_scales=scales, options=options, execution="cpu")
    gpu, gpu_aux = matmul(to_torch(a), to_torch(b_rows).T, quantization_scales=scales, options=options)
    assert gpu.dtype == torch.float8_e4m3fn
    assert relative_error(to_numpy(gpu), cpu.astype(np.float64)) < tolerance("float8_e4m3fn")
    np.testing.assert_allclose(float(gpu_aux["result_amax"]), float(cpu_aux["result_amax"]), rtol=1e-2)


@pytest.mark.parametrize("offset", [0, 4, 8])
def test_float8_device_scales_at_any_float_offset(rng, offset):
    """cuBLASLt refuses float8 scales not 16-byte aligned (CUBLAS_STATUS_NOT_SUPPORTED); matmul
    copies such scales to an aligned slot: views 0, 4 and 8 bytes into a tensor all work, on a
    plan-cache hit too, with each call's values."""
    torch = pytest.importorskip("torch")
    a, b_rows = random(rng, (64, 128), "float8_e4m3fn"), random(rng, (256, 128), "float8_e4m3fn")
    bias = random(rng, (256,), "bfloat16")
    options = {"result_type": "bfloat16"}
    for a_scale, b_scale in ((0.5, 0.25), (2.0, 1.5)):
        expected = matmul(a, b_rows.T, epilog="BIAS", epilog_inputs={"bias": bias}, options=options,
                          quantization_scales={"a": a_scale, "b": b_scale}, execution="cpu")
        scales = torch.zeros(16, device="cuda")
        index = offset // 4
        scales[index], scales[index + 8] = a_scale, b_scale
        gpu = matmul(to_torch(a), to_torch(b_rows).T, epilog="BIAS", epilog_inputs={"bias": to_torch(bias)},
                     quantization_scales={"a": scales[index:index + 1], "b": scales[index + 8:index + 9]},
                     options=options)
        assert relative_error(to_numpy(gpu), expected.astype(np.float64)) < tolerance("bfloat16")


def test_tf32_compute_option(rng):
    pytest.importorskip("torch")
    a, b = randn(rng, 256, 512, device="cuda"), randn(rng, 512, 128, device="cuda")
    exact = a.double() @ b.double()
    tf32 = matmul(a, b, options={"compute_type": "32F_FAST_TF32"})
    full = matmul(a, b)
    error = lambda x: float((x.double() - exact).norm() / exact.norm())  # noqa: E731
    assert error(full) < 1e-6 < error(tf32) < 5e-3


def test_numpy_operands_on_cuda_return_numpy(rng):
    a, b, c = random(rng, (2, 50, 30), "float32"), random(rng, (30, 20), "float32"), random(rng, (50, 20), "float32")
    result, aux = matmul(a, b, c, beta=0.5, epilog="RELU_AUX", execution="cuda")
    assert isinstance(result, np.ndarray) and isinstance(aux["relu_aux"], np.ndarray)
    expected = reference(a, b, c, 1.0, 0.5)
    assert relative_error(result, np.maximum(expected, 0)) < 1e-5
    assert np.mean(relu_mask(aux["relu_aux"], 20) != (expected > 0)) < 1e-3


def test_autotune_preference_keeps_the_fastest_and_is_correct(rng):
    """preferences={"autotune": True}: the planning call times the candidates, the cached plan runs the fastest."""
    from nvmathx.linalg import plan_cache

    a, b, bias = random(rng, (256, 96), "bfloat16"), random(rng, (96, 320), "bfloat16"), random(rng, (320,), "bfloat16")
    expected = matmul(a, b, epilog="GELU_BIAS", epilog_inputs={"bias": bias}, execution="cpu")
    plan_cache.clear()
    for _ in range(2):
        got = matmul(to_torch(a), to_torch(b), epilog="GELU_BIAS", epilog_inputs={"bias": to_torch(bias)},
                     preferences={"autotune": True})
        assert relative_error(to_numpy(got), np.asarray(expected).astype(np.float64)) < tolerance("bfloat16")
    (key,) = plan_cache.keys(0)
    assert len(plan_cache.get(0, key).runner.algorithms) == 1
    assert plan_cache.info(0).misses == 1


@pytest.mark.parametrize("library", ["numpy", "torch", "cupy"])
@pytest.mark.parametrize("a_shape, b_shape", [((7,), (7,)), ((7,), (7, 3)), ((3, 7), (7,))])
def test_vector_products_keep_numpy_shapes(rng, library, a_shape, b_shape):
    """Two vectors give a 0-d result in the operands' library (numpy operands run on CUDA)."""
    a, b = random(rng, a_shape, "float64"), random(rng, b_shape, "float64")
    expected = np.matmul(a, b)
    if library == "numpy":
        result = matmul(a, b, execution="cuda")
        host = result
    elif library == "torch":
        result = matmul(to_torch(a), to_torch(b))
        host = to_numpy(result)
    else:
        cupy = pytest.importorskip("cupy")
        result = matmul(cupy.asarray(a), cupy.asarray(b))
        host = cupy.asnumpy(result)
    assert type(result).__module__.partition(".")[0] == library and result.shape == expected.shape
    np.testing.assert_allclose(host, expected, rtol=1e-12, atol=1e-12)


def test_relu_mask_of_a_gpu_array_asks_for_a_host_copy(rng):
    from nvmathx import OperandError

    a, b = random(rng, (6, 5), "float32"), random(rng, (5, 9), "float32")
    d, aux = matmul(to_torch(a), to_torch(b), epilog="RELU_AUX")
    with pytest.raises(OperandError, match="^relu_aux: lives on GPU"):
        relu_mask(aux["relu_aux"], 9)
    np.testing.assert_array_equal(relu_mask(to_numpy(aux["relu_aux"]), 9), to_numpy(d) > 0)  # max(z, 0) > 0 iff z > 0
