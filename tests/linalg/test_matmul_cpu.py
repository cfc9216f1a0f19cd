"""matmul and Matmul in the CPU execution space: the documented semantics, checked against numpy."""

import numpy as np
import pytest

from helpers.torch_random import randn
from nvmathx.linalg import Matmul, MatmulEpilog, matmul, relu_mask

from ._reference import gelu, gelu_derivative, random, reference, relative_error, tolerance

SHAPES = [
    ((5, 3), (3, 4)), ((3,), (3, 4)), ((5, 3), (3,)), ((3,), (3,)), ((2, 5, 3), (3, 4)), ((5, 3), (2, 3, 4)),
    ((2, 5, 3), (2, 3, 4)), ((2, 1, 5, 3), (4, 3, 6)), ((1, 1), (1, 7)),
]


def _stateful(a, b):
    with Matmul(a, b) as mm:
        mm.plan()
        return mm.execute()


@pytest.mark.parametrize("form", [matmul, _stateful], ids=["function", "stateful"])
@pytest.mark.parametrize("a_shape, b_shape", SHAPES)
def test_shapes_follow_numpy(rng, a_shape, b_shape, form):
    a, b = random(rng, a_shape, "float64"), random(rng, b_shape, "float64")
    result = form(a, b)
    assert isinstance(result, np.ndarray) and result.shape == np.matmul(a, b).shape
    np.testing.assert_allclose(result, np.matmul(a, b), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64", "complex64", "complex128"])
def test_dtypes_alpha_beta_c(rng, dtype):
    a, b, c = random(rng, (2, 6, 5), dtype), random(rng, (5, 7), dtype), random(rng, (6, 7), dtype)
    alpha, beta = (0.5 - 1.5j, 2.0 + 0.5j) if dtype.startswith("complex") else (0.5, 2.0)
    result = matmul(a, b, c, alpha=alpha, beta=beta)
    assert result.dtype == a.dtype and result.shape == (2, 6, 7)
    assert relative_error(result, reference(a, b, c, alpha, beta)) < tolerance(dtype)


@pytest.mark.parametrize("order", ["C", "F", "T"])
def test_layouts(rng, order):
    a = random(rng, (6, 5))
    a = np.asfortranarray(a) if order == "F" else (random(rng, (5, 6)).T if order == "T" else a)
    b = random(rng, (5, 4))
    assert relative_error(matmul(a, b), a.astype(np.float64) @ b) < tolerance("float32")


def test_bf16_result_float32(rng):
    a, b = random(rng, (8, 16), "bfloat16"), random(rng, (16, 8), "bfloat16")
    result = matmul(a, b, options={"result_type": "float32"})
    assert result.dtype == np.float32
    assert relative_error(result, reference(a, b)) < 1e-6


@pytest.mark.parametrize("epilog", ["RELU", "GELU", "BIAS", "RELU_BIAS", "GELU_BIAS"])
def test_forward_epilogs(rng, epilog):
    x, w, bias = random(rng, (3, 8, 5)), random(rng, (5, 6)), random(rng, (6,))
    inputs = {"bias": bias} if "BIAS" in epilog else None
    result = matmul(x, w, epilog=epilog, epilog_inputs=inputs)
    z = reference(x, w) + (bias if inputs else 0)
    expected = np.maximum(z, 0) if "RELU" in epilog else gelu(z) if "GELU" in epilog else z
    assert relative_error(result, expected) < 1e-5


def test_bias_shapes(rng):
    x, w = random(rng, (2, 4, 3)), random(rng, (3, 5))
    batched = random(rng, (2, 1, 5))
    # float32 sums near cancellation: errors are measured against the result's norm, not per element
    result = matmul(x, w, epilog="BIAS", epilog_inputs={"bias": batched})
    assert relative_error(result, reference(x, w) + batched) < tolerance("float32")
    full = random(rng, (2, 4, 5))  # folded into C
    result = matmul(x, w, epilog="RELU_BIAS", epilog_inputs={"bias": full})
    assert relative_error(result, np.maximum(reference(x, w) + full, 0)) < tolerance("float32")


def test_aux_epilogs_compose_like_an_mlp(rng):
    """Forward with *_AUX_BIAS, backward with D*_BGRAD and BGRADB, checked against the math."""
    x, w1 = random(rng, (16, 8), "float64"), random(rng, (8, 12), "float64")
    b1, w2 = random(rng, (12,), "float64"), random(rng, (12, 4), "float64")
    activations = ((gelu, gelu_derivative, "gelu"), (lambda z: np.maximum(z, 0), lambda z: (z > 0) * 1.0, "relu"))
    for act, grad, name in activations:
        h, aux = matmul(x, w1, epilog=f"{name}_aux_bias", epilog_inputs={"bias": b1})
        z = x @ w1 + b1
        np.testing.assert_allclose(h, act(z), rtol=1e-12, atol=1e-12)
        dout = random(rng, (16, 4), "float64")
        dz, grads = matmul(dout, w2.T, epilog=f"d{name}_bgrad", epilog_inputs={f"{name}_aux": aux[f"{name}_aux"]})
        np.testing.assert_allclose(dz, (dout @ w2.T) * grad(z), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(grads[f"d{name}_bgrad"], dz.sum(axis=0), rtol=1e-12, atol=1e-12)
        dw, bgrad = matmul(x.T, dz, epilog=MatmulEpilog.BGRADB)
        np.testing.assert_allclose(dw, x.T @ dz, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(bgrad["bgradb"], dz.sum(axis=0), rtol=1e-12, atol=1e-12)
    assert relu_mask(aux["relu_aux"], 12).shape == (16, 12)


def test_bgrada(rng):
    dz, x = random(rng, (10, 6), "float64"), random(rng, (10, 3), "float64")
    dwt, out = matmul(dz.T, x, epilog="BGRADA")  # dW^T = dz^T @ x, db = dz.sum(0)
    np.testing.assert_allclose(dwt, dz.T @ x, rtol=1e-12)
    np.testing.assert_allclose(out["bgrada"], dz.sum(axis=0), rtol=1e-12)


def test_float8_with_scales(rng):
    a = random(rng, (32, 64), "float8_e4m3fn")
    b = random(rng, (16, 64), "float8_e4m3fn").T
    scales = {"a": 0.5, "b": 2.0, "d": 0.25}
    options = {"result_type": "float8_e4m3fn", "result_amax": True}
    result, aux = matmul(a, b, quantization_scales=scales, options=options)
    exact = reference(a, b)
    assert result.dtype.name == "float8_e4m3fn"
    assert relative_error(result, 0.25 * exact) < tolerance("float8_e4m3fn")
    np.testing.assert_allclose(float(aux["result_amax"]), np.abs(exact).max(), rtol=1e-5)
    bf16 = matmul(a, b, quantization_scales={"a": 0.5, "b": 2.0}, options={"result_type": "bfloat16"})
    assert relative_error(bf16, exact) < tolerance("bfloat16")


def test_stateful_lifecycle(rng):
    a, b, c = random(rng, (6, 5)), random(rng, (5, 4)), random(rng, (6, 4))
    with Matmul(a, b, c, alpha=2.0, beta=0.5) as mm:
        assert mm.plan() == []
        # float32 sums cancel: the tolerance is relative to the result's scale, not each element
        assert relative_error(mm.execute(), reference(a, b, c, 2.0, 0.5)) < 1e-5
        a2, c2 = random(rng, (6, 5)), random(rng, (6, 4))
        mm.reset_operands(a=a2, c=c2, alpha=1.0)
        assert relative_error(mm.execute(), reference(a2, b, c2, 1.0, 0.5)) < 1e-5
        assert mm.autotune() == []


def test_torch_cpu_tensors_give_torch_results(rng):
    torch = pytest.importorskip("torch")
    a, b = randn(rng, 4, 3, dtype=torch.bfloat16), randn(rng, 3, 5, dtype=torch.bfloat16)
    result = matmul(a, b)
    assert isinstance(result, torch.Tensor) and result.dtype == torch.bfloat16
    expected = (a.float() @ b.float()).numpy()
    assert relative_error(result.float().numpy(), expected) < 1e-2


@pytest.mark.parametrize("form", [matmul, _stateful], ids=["function", "stateful"])
@pytest.mark.parametrize("a_shape, b_shape", SHAPES)
def test_torch_cpu_shapes_follow_torch(rng, a_shape, b_shape, form):
    """Vector products included: two 1-D tensors give a 0-d tensor, as torch.matmul does."""
    torch = pytest.importorskip("torch")
    a, b = randn(rng, *a_shape, dtype=torch.float64), randn(rng, *b_shape, dtype=torch.float64)
    result = form(a, b)
    assert isinstance(result, torch.Tensor) and result.shape == torch.matmul(a, b).shape
    np.testing.assert_allclose(result.numpy(), np.matmul(a.numpy(), b.numpy()), rtol=1e-12, atol=1e-12)


def test_float8_result_saturates_without_finfo(rng, monkeypatch):
    """numpy 2.3 + ml_dtypes 0.6 reject np.finfo on float8: the CPU reference must not need it."""
    import ml_dtypes

    real_finfo = np.finfo

    def strict_finfo(dtype):
        if np.dtype(dtype) in (np.dtype(ml_dtypes.float8_e4m3fn), np.dtype(ml_dtypes.float8_e5m2)):
            raise ValueError(f"data type {dtype!r} not inexact")
        return real_finfo(dtype)

    monkeypatch.setattr(np, "finfo", strict_finfo)
    a = rng.standard_normal((16, 32)).astype(ml_dtypes.float8_e4m3fn)
    b = rng.standard_normal((16, 32)).astype(ml_dtypes.float8_e4m3fn).T
    for dtype_name, limit in (("float8_e4m3fn", 448.0), ("float8_e5m2", 57344.0)):
        result, aux = matmul(a, b, quantization_scales={"a": 1.0, "b": 1.0, "d": 1e6},
                             options={"result_type": dtype_name, "result_amax": True}, execution="cpu")
        wide = result.astype(np.float64)
        assert np.all(np.isfinite(wide)) and np.abs(wide).max() == limit  # saturated, not NaN
        expected = np.abs(a.astype(np.float64) @ b.astype(np.float64)).max()
        np.testing.assert_allclose(float(aux["result_amax"]), expected, rtol=1e-5)


def test_what_the_plans_are_made_for_is_read_only():
    """The rule of nvmathx/_core/options.py: options, operand shapes and dtypes, result shape and
    dtype and the planned epilog are read-only properties, as FFT's options, axes and key are."""
    from nvmathx.linalg import MatmulOptions

    a, b, c = np.ones(3, np.float32), np.ones((2, 3, 4), np.float32), np.ones((2, 4), np.float32)
    with Matmul(a, b, c, beta=1.0, options={"workspace_limit": 1024}) as mm:
        assert mm.options == MatmulOptions(workspace_limit=1024)
        assert dict(mm.operand_shapes) == {"a": (3,), "b": (2, 3, 4), "c": (2, 4)}
        assert dict(mm.operand_dtypes) == {"a": "float32", "b": "float32", "c": "float32"}
        assert (mm.result_shape, mm.result_dtype, mm.epilog) == ((2, 4), "float32", None)
        mm.plan(epilog="relu")
        assert mm.epilog is MatmulEpilog.RELU
        assert mm.execute().shape == mm.result_shape
        for name in ("options", "operand_shapes", "operand_dtypes", "result_shape", "result_dtype", "epilog"):
            with pytest.raises(AttributeError):
                setattr(mm, name, None)
        with pytest.raises(TypeError):
            mm.operand_shapes["a"] = (1,)
    assert Matmul(np.ones((2, 2)), np.ones((2, 2))).operand_shapes["c"] is None
