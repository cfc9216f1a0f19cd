"""fused_linear and fused_mlp on the CPU (the torch composition): values and gradients against
float64 torch, auxiliary formats, layouts and argument errors (gradcheck and gradgradcheck:
test_double_backward.py)."""

import pytest

torch = pytest.importorskip("torch")

import numpy as np  # noqa: E402

import nvmathx  # noqa: E402
from helpers.torch_layers import (  # noqa: E402
    float64_reference,
    generator,
    layer_tensors,
    randn,
    reference_linear,
    reference_mlp,
    relative_error,
)
from nvmathx.linalg import relu_mask  # noqa: E402
from nvmathx.torch import fused_linear, fused_mlp  # noqa: E402

ACTIVATIONS = [None, "relu", "gelu"]


def _linear_tensors(gen, n_in, n_out, bias, dtype=torch.float32):
    shapes = {"weight": (n_out, n_in), "bias": (n_out,)}
    tensors = layer_tensors(gen, shapes, dtype)
    return tensors["weight"], tensors["bias"] if bias else None


def _mlp_tensors(gen, d_model, hidden, bias, dtype=torch.float32):
    shapes = {"w1": (hidden, d_model), "b1": (hidden,), "w2": (d_model, hidden), "b2": (d_model,)}
    t = layer_tensors(gen, shapes, dtype)
    return t["w1"], t["b1"] if bias else None, t["w2"], t["b2"] if bias else None


@pytest.mark.parametrize("shape", [(37, 24), (3, 11, 24)], ids=["2d", "3d"])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no_bias"])
@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_linear_matches_float64(seed, activation, bias, shape):
    gen = generator(seed)
    x = randn(gen, shape, requires_grad=True)
    weight, b = _linear_tensors(gen, shape[-1], 20, bias)
    y = fused_linear(x, weight, b, activation)
    grad = randn(gen, y.shape)
    tensors = [t for t in (x, weight, b) if t is not None]
    grads = torch.autograd.grad(y, tensors, grad)
    expected, expected_grads = float64_reference(reference_linear, (x, weight, b), grad, activation)
    assert y.shape == shape[:-1] + (20,) and y.dtype == torch.float32
    assert relative_error(y, expected) < 1e-6
    for got, want in zip(grads, expected_grads):
        assert got.shape == want.shape and relative_error(got, want) < 1e-5


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no_bias"])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_mlp_matches_float64(seed, activation, bias):
    gen = generator(seed)
    x = randn(gen, (4, 9, 16), requires_grad=True)
    params = _mlp_tensors(gen, 16, 52, bias)
    out = fused_mlp(x, *params, activation=activation)
    grad = randn(gen, out.shape)
    tensors = [t for t in (x, *params) if t is not None]
    grads = torch.autograd.grad(out, tensors, grad)
    expected, expected_grads = float64_reference(reference_mlp, (x, *params), grad, activation)
    assert relative_error(out, expected) < 1e-6
    for got, want in zip(grads, expected_grads):
        assert relative_error(got, want) < 1e-5


def test_gradients_only_where_required(seed):
    gen = generator(seed)
    x = randn(gen, (8, 6))  # data: no gradient
    w1, b1, w2, b2 = _mlp_tensors(gen, 6, 16, True)
    b1.requires_grad_(False)
    fused_mlp(x, w1, b1, w2, b2).sum().backward()
    assert x.grad is None and b1.grad is None
    assert all(t.grad is not None for t in (w1, w2, b2))


@pytest.mark.parametrize("n", [16, 13, 200])
def test_auxiliary_formats(seed, n):
    """GELU keeps the pre-activation in a buffer of round_up(N, 8) columns; ReLU the bitmask that
    nvmathx.linalg.relu_mask unpacks."""
    gen = generator(seed)
    x = randn(gen, (7, 10))
    weight, bias = _linear_tensors(gen, 10, n, True)
    z = torch.nn.functional.linear(x, weight, bias)
    y, aux = torch.ops.nvmathx.linear_aux(x, weight, bias, "gelu")
    assert aux.shape == (7, -(-n // 8) * 8) and aux.dtype == torch.float32
    assert torch.allclose(aux[:, :n], z, rtol=1e-6, atol=1e-6)
    y, mask = torch.ops.nvmathx.linear_aux(x, weight, bias, "relu")
    assert mask.dtype == torch.uint8 and mask.shape == (7, -(-n // 128) * 16)
    np.testing.assert_array_equal(relu_mask(mask.numpy(), n), (z > 0).numpy())
    assert torch.equal(y, torch.relu(z))


def test_non_contiguous_inputs(seed):
    gen = generator(seed)
    weight, bias = _linear_tensors(gen, 12, 9, True)
    wide = randn(gen, (5, 4, 30))
    cases = {
        "sliced (a view)": wide[:, :, 3:15],
        "permuted (a copy)": randn(gen, (4, 12, 5)).permute(2, 0, 1),
        "transposed 2-D (column-major view)": randn(gen, (12, 20)).T,
        "every other row": randn(gen, (40, 12))[::2],
    }
    for name, x in cases.items():
        x = x.detach().requires_grad_()
        y = fused_linear(x, weight, bias, "gelu")
        grad = randn(gen, y.shape)
        (dx,) = torch.autograd.grad(y, x, grad)
        expected, (expected_dx, *_) = float64_reference(reference_linear, (x, weight, bias), grad, "gelu")
        assert relative_error(y, expected) < 1e-6, name
        assert dx.shape == x.shape and relative_error(dx, expected_dx) < 1e-5, name


def test_no_grad_and_inference_mode(seed):
    gen = generator(seed)
    x = randn(gen, (5, 8))
    w1, b1, w2, b2 = _mlp_tensors(gen, 8, 24, True)
    expected = reference_mlp(*(t.double() for t in (x, w1, b1, w2, b2)), "gelu")
    with torch.no_grad():
        assert relative_error(fused_mlp(x, w1, b1, w2, b2), expected) < 1e-6
    with torch.inference_mode():
        out = fused_mlp(x, w1, b1, w2, b2)
        assert not out.requires_grad and relative_error(out, expected) < 1e-6


def test_bfloat16_on_cpu(seed):
    gen = generator(seed)
    x = randn(gen, (64, 32), torch.bfloat16, requires_grad=True)
    w1, b1, w2, b2 = _mlp_tensors(gen, 32, 128, True, torch.bfloat16)
    out = fused_mlp(x, w1, b1, w2, b2)
    grad = randn(gen, out.shape, torch.bfloat16)
    grads = torch.autograd.grad(out, (x, w1, b1, w2, b2), grad)
    expected, expected_grads = float64_reference(reference_mlp, (x, w1, b1, w2, b2), grad, "gelu")
    assert out.dtype == torch.bfloat16 and relative_error(out, expected) < 2e-2
    for got, want in zip(grads, expected_grads):
        assert got.dtype == torch.bfloat16 and relative_error(got, want) < 3e-2


def test_errors_name_the_argument(seed):
    gen = generator(seed)
    x = randn(gen, (4, 6))
    weight, bias = _linear_tensors(gen, 6, 5, True)
    w1, b1, w2, b2 = _mlp_tensors(gen, 6, 10, True)
    cases = [
        (lambda: fused_linear(randn(gen, (4, 7)), weight), nvmathx.OperandError, "x"),
        (lambda: fused_linear(x, weight[0]), nvmathx.OperandError, "weight"),
        (lambda: fused_linear(x, weight, bias[:3]), nvmathx.OperandError, "bias"),
        (lambda: fused_linear(x, weight.double()), nvmathx.OperandError, "weight"),
        (lambda: fused_linear(x.to(torch.int32), weight.to(torch.int32)), nvmathx.UnsupportedOperandError, "x"),
        (lambda: fused_linear(x.numpy(), weight), nvmathx.UnsupportedOperandError, "x"),
        (lambda: fused_linear(x, weight, activation="tanh"), nvmathx.OptionsError, "activation"),
        (lambda: fused_mlp(x, w1, b1, w2, b2, activation=None), nvmathx.OptionsError, "activation"),
        (lambda: fused_mlp(x, w1, b1, w2[:, :9], b2), nvmathx.OperandError, "w2"),
        (lambda: fused_mlp(x, w1, b1, w2, b2[:2]), nvmathx.OperandError, "b2"),
        (lambda: fused_mlp(x, w1, b1.half(), w2, b2), nvmathx.OperandError, "b1"),
        (lambda: fused_linear(x, weight, bias[None, :]), nvmathx.OperandError, "bias"),
        (lambda: fused_linear(x, weight.to("meta")), nvmathx.OperandError, "weight"),
        (lambda: fused_linear(x, weight, bias.to("meta")), nvmathx.OperandError, "bias"),
        (lambda: fused_linear(x, weight[None]), nvmathx.OperandError, "weight"),
        (lambda: fused_linear(x, weight, bias.tolist()), nvmathx.UnsupportedOperandError, "bias"),
        (lambda: fused_mlp(x, w1, b1, w2.to("meta"), b2), nvmathx.OperandError, "w2"),
        (lambda: fused_mlp(x, w1, b1, w2, b2.double()), nvmathx.OperandError, "b2"),
        (lambda: fused_mlp(x, w1, b1, w2.detach().numpy(), b2), nvmathx.UnsupportedOperandError, "w2"),
        (lambda: fused_mlp(x, w1, [0.0] * 10, w2, b2), nvmathx.UnsupportedOperandError, "b1"),
    ]
    for call, error, argument in cases:
        with pytest.raises(error) as info:
            call()
        assert str(info.value).startswith(f"{argument}:"), str(info.value)


def test_ops_pass_opcheck(seed):
    """Schemas, fake implementations, autograd registration and AOT dispatch agree with the real ops."""
    gen = generator(seed)
    x = randn(gen, (6, 5), requires_grad=True)
    w1, b1, w2, b2 = _mlp_tensors(gen, 5, 12, True)
    grad, aux_grad = randn(gen, (6, 12)), randn(gen, (6, 5))
    _, _, gelu_aux = torch.ops.nvmathx.mlp(x, w1, b1, w2, b2, "gelu")
    _, _, relu_aux = torch.ops.nvmathx.mlp(x, w1, b1, w2, b2, "relu")
    # The gradient ops have no autograd of their own (double backward differentiates the torch
    # composition instead, see nvmathx.torch._autograd): plain tensors.
    xd, w1d, w2d, gelu_aux, relu_aux = (t.detach() for t in (x, w1, w2, gelu_aux, relu_aux))
    calls = [
        (torch.ops.nvmathx.linear.default, (x, w1, b1, "gelu")),
        (torch.ops.nvmathx.linear.default, (x, w1, None, "relu")),
        (torch.ops.nvmathx.linear.default, (x, w1, b1, "none")),
        (torch.ops.nvmathx.linear_aux.default, (x, w1, b1, "gelu")),
        (torch.ops.nvmathx.linear_aux.default, (x, w1, None, "relu")),
        (torch.ops.nvmathx.mlp.default, (x, w1, b1, w2, b2, "gelu")),
        (torch.ops.nvmathx.mlp.default, (x, w1, None, w2, None, "relu")),
        (torch.ops.nvmathx.grad_input.default, (grad, w1d)),
        (torch.ops.nvmathx.grad_weight.default, (grad, xd, True)),
        (torch.ops.nvmathx.grad_weight.default, (grad, xd, False)),
        (torch.ops.nvmathx.grad_activation.default, (aux_grad, w2d, gelu_aux, "gelu", True)),
        (torch.ops.nvmathx.grad_activation.default, (aux_grad, w2d, relu_aux, "relu", False)),
    ]
    for op, args in calls:
        torch.library.opcheck(op, args)


@pytest.mark.parametrize("leading", [(), (3,), (2, 3)])
def test_results_are_the_ops_own_for_matrices(seed, leading):
    """A (tokens, features) input gives the op's result itself (no view, so no view node in the
    backward graph); other shapes a view in the input's leading shape, with the same values."""
    gen = generator(seed)
    x = randn(gen, leading + (4, 6)).requires_grad_()
    weight, bias = _linear_tensors(gen, 6, 5, True)
    w1, b1, w2, b2 = _mlp_tensors(gen, 6, 10, True)
    for y, reference in ((fused_linear(x, weight, bias, "relu"), torch.relu(x @ weight.T + bias)),
                         (fused_mlp(x, w1, b1, w2, b2, "relu"), torch.relu(x @ w1.T + b1) @ w2.T + b2)):
        assert y.shape == reference.shape
        assert relative_error(y, reference) < 1e-5
        assert (y.grad_fn.name() == "ViewBackward0") == bool(leading), y.grad_fn.name()
