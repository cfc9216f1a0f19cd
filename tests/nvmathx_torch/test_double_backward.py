"""Gradients of gradients (``create_graph=True``, then differentiating the result: gradient
penalties, Hessian-vector products) through every layer form and activation are torch's own:
gradcheck and gradgradcheck in float64, second-order gradients equal to those of torch's unfused
layers (also where the first-order GEMMs take the cuBLASLt path), through the eager
autograd.Function and through the custom ops' registered autograd; under torch.compile, correct
without AOTAutograd and refused by torch (a RuntimeError naming double backward) with it. An op
registered without a torch composition refuses create_graph=True with a RuntimeError."""

import pytest

torch = pytest.importorskip("torch")

from torch.func import functional_call  # noqa: E402

from helpers.torch_layers import (  # noqa: E402
    TorchLinear,
    TorchMLP,
    generator,
    layer_tensors,
    randn,
    reference_linear,
    reference_mlp,
    relative_error,
    route_float32_to_cublaslt_path,
)
from nvmathx.torch import FusedLinear, FusedMLP, fused_linear, fused_mlp  # noqa: E402
from nvmathx.torch._autograd import differentiable  # noqa: E402

# functorch.compile (imported by the AOTAutograd backends) warns about torch.jit's deprecation.
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script_method` is deprecated:DeprecationWarning")

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]
CASES = [(form, activation, bias)
         for form in ("fused_linear", "FusedLinear", "fused_mlp", "FusedMLP")
         for activation in ((None, "relu", "gelu") if form.lower().endswith("linear") else ("relu", "gelu"))
         for bias in (True, False)]
CASE_IDS = [f"{form}-{activation}-{'bias' if bias else 'no_bias'}" for form, activation, bias in CASES]
# Where the second-order gradients are computed and how close to float64 torch they must be: float64
# runs the torch composition; float32 on "cpu-cublaslt" takes the cuBLASLt path (nvmathx's CPU
# execution space) for the first-order GEMMs; CUDA float32 and bfloat16 take cuBLASLt itself.
SPACES = [
    ("cpu", torch.float64, 1e-10, ()),
    ("cpu-cublaslt", torch.float32, 1e-5, ()),
    ("cuda", torch.float32, 1e-4, (pytest.mark.gpu,)),
    ("cuda", torch.bfloat16, 5e-2, (pytest.mark.gpu,)),
]
# bfloat16 pairs with GELU only: a ReLU pre-activation within bfloat16 rounding of 0 may take the
# other sign than in float64 (cuBLAS may round the product before adding the bias), which moves a
# whole gradient entry.
SPACE_CASES = [
    pytest.param(space, dtype, tolerance, *case, marks=marks,
                 id=f"{space}-{str(dtype).removeprefix('torch.')}-{case_id}")
    for space, dtype, tolerance, marks in SPACES
    for case, case_id in zip(CASES, CASE_IDS)
    if not (dtype == torch.bfloat16 and case[1] == "relu")
]


def _is_linear(form):
    return form.lower().endswith("linear")


def _params(gen, form, bias, dtype, device) -> dict:
    """The layer's parameters by their state_dict names, drawn from ``gen``."""
    if _is_linear(form):
        shapes = {"weight": (7, 5), "bias": (7,)}
    else:
        shapes = {"fc1.weight": (9, 5), "fc1.bias": (9,), "fc2.weight": (5, 9), "fc2.bias": (5,)}
    tensors = layer_tensors(gen, shapes, dtype, device)
    return {name: t for name, t in tensors.items() if bias or not name.endswith("bias")}


def _positional(names, values, order):
    named = dict(zip(names, values))
    return [named.get(name) for name in order]


_LINEAR_ORDER = ("weight", "bias")
_MLP_ORDER = ("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias")


def _layer(form, activation, bias, names, dtype, device):
    """The layer form as a function of ``(x, *params)``, the params in the order of ``names``."""
    if form == "FusedLinear":
        module = FusedLinear(5, 7, bias, activation, device=device, dtype=dtype)
    elif form == "FusedMLP":
        module = FusedMLP(5, 9, activation, bias, device=device, dtype=dtype)
    elif form == "fused_linear":
        return lambda x, *p: fused_linear(x, *_positional(names, p, _LINEAR_ORDER), activation)
    else:
        return lambda x, *p: fused_mlp(x, *_positional(names, p, _MLP_ORDER), activation)
    return lambda x, *p: functional_call(module, dict(zip(names, p)), (x,))


def _torch_layer(form, activation, names):
    """torch's unfused layer as a function of ``(x, *params)``."""
    if _is_linear(form):
        return lambda x, *p: reference_linear(x, *_positional(names, p, _LINEAR_ORDER), activation)
    return lambda x, *p: reference_mlp(x, *_positional(names, p, _MLP_ORDER), activation)


def _first_and_second_order(function, tensors, v, u):
    """The gradients of ``(function(*tensors) * v).sum()`` (created with create_graph=True) and of
    the penalty ``sum((g * u).sum())`` over those gradients: a gradient of gradients."""
    loss = (function(*tensors) * v).sum()
    first = torch.autograd.grad(loss, tensors, create_graph=True)
    penalty = sum((g * w).sum() for g, w in zip(first, u))
    second = torch.autograd.grad(penalty, tensors, materialize_grads=True)
    return first, second


def _widened(tensors):
    return [t.detach().cpu().double().requires_grad_() for t in tensors]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("form,activation,bias", CASES, ids=CASE_IDS)
def test_gradcheck_and_gradgradcheck(seed, device, form, activation, bias):
    gen = generator(seed)
    params = _params(gen, form, bias, torch.float64, device)
    x = randn(gen, (2, 3, 5), torch.float64, device, requires_grad=True)
    layer = _layer(form, activation, bias, list(params), torch.float64, device)
    inputs = (x, *params.values())
    assert torch.autograd.gradcheck(layer, inputs)
    assert torch.autograd.gradgradcheck(layer, inputs)


@pytest.mark.parametrize("space,dtype,tolerance,form,activation,bias", SPACE_CASES)
def test_second_order_gradients_are_torch_layers(seed, monkeypatch, space, dtype, tolerance, form, activation, bias):
    cublaslt_calls = route_float32_to_cublaslt_path(monkeypatch) if space == "cpu-cublaslt" else None
    device = "cuda" if space == "cuda" else "cpu"
    gen = generator(seed)
    params = _params(gen, form, bias, dtype, device)
    x = randn(gen, (4, 3, 5), dtype, device, requires_grad=True)
    tensors = [x, *params.values()]
    v = randn(gen, (4, 3, 5 if not _is_linear(form) else 7), dtype, device)
    u = [randn(gen, t.shape, dtype, device) for t in tensors]
    names = list(params)
    first, second = _first_and_second_order(_layer(form, activation, bias, names, dtype, device), tensors, v, u)
    expected_first, expected_second = _first_and_second_order(
        _torch_layer(form, activation, names), _widened(tensors), v.cpu().double(), [w.cpu().double() for w in u])
    for index, (got, want) in enumerate(zip(first + second, expected_first + expected_second)):
        assert got.shape == want.shape and got.dtype == dtype, index
        assert relative_error(got, want) < tolerance, index
    assert cublaslt_calls is None or cublaslt_calls  # the forward GEMMs took the cuBLASLt path


@pytest.mark.parametrize("op,activation", [("linear", "none"), ("linear", "relu"), ("linear", "gelu"),
                                           ("linear_aux", "relu"), ("linear_aux", "gelu"),
                                           ("mlp", "relu"), ("mlp", "gelu")])
def test_ops_gradgradcheck(seed, op, activation):
    """The custom ops called directly: their registered autograd (what torch.compile traces)."""
    gen = generator(seed)
    x = randn(gen, (6, 5), torch.float64, requires_grad=True)
    shapes = {"w1": (9, 5), "b1": (9,), "w2": (5, 9), "b2": (5,)} if op == "mlp" else {"w": (9, 5), "b": (9,)}
    params = layer_tensors(gen, shapes, torch.float64)
    function = getattr(torch.ops.nvmathx, op).default

    def first_output(*tensors):  # linear_aux and mlp also return what their backward keeps
        result = function(*tensors, activation)
        return result if op == "linear" else result[0]

    inputs = (x, *params.values())
    assert torch.autograd.gradcheck(first_output, inputs)
    assert torch.autograd.gradgradcheck(first_output, inputs)


def _module_pair(seed, form, activation, dtype, device):
    """(nvmathx module, torch's module) with the same parameters."""
    torch.manual_seed(seed)
    if form == "FusedLinear":
        ours, expected = FusedLinear(5, 7, activation=activation), TorchLinear(5, 7, activation=activation)
    else:
        ours, expected = FusedMLP(5, 9, activation), TorchMLP(5, 9, activation)
    expected.load_state_dict(ours.state_dict())
    return ours.to(device=device, dtype=dtype), expected.to(device=device, dtype=dtype)


COMPILED = [("FusedLinear", "gelu"), ("FusedLinear", "relu"), ("FusedMLP", "gelu"), ("FusedMLP", "relu")]


@pytest.mark.parametrize("device,dtype,tolerance", [
    ("cpu", torch.float64, 1e-10),
    pytest.param("cuda", torch.float32, 1e-4, marks=pytest.mark.gpu),  # the forward on cuBLASLt
])
@pytest.mark.parametrize("form,activation", COMPILED)
def test_compiled_without_aot_autograd_double_backward_is_torch_layers(seed, device, dtype, tolerance, form,
                                                                       activation):
    """backend="eager": dynamo's graph calls the custom ops, whose registered autograd runs."""
    torch._dynamo.reset()
    ours, expected = _module_pair(seed, form, activation, dtype, device)
    gen = generator(seed)
    x = randn(gen, (4, 5), dtype, device, requires_grad=True)
    v = randn(gen, (4, 5 if form == "FusedMLP" else 7), dtype, device)
    compiled = torch.compile(ours, backend="eager", fullgraph=True)
    u = [randn(gen, t.shape, dtype, device) for t in (x, *ours.parameters())]
    first, second = _first_and_second_order(lambda x, *_: compiled(x), [x, *ours.parameters()], v, u)
    want_first, want_second = _first_and_second_order(lambda x, *_: expected(x), [x, *expected.parameters()], v, u)
    for index, (got, want) in enumerate(zip(first + second, want_first + want_second)):
        assert relative_error(got, want) < tolerance, index


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("form,activation", [("FusedLinear", "gelu"), ("FusedMLP", "gelu")])
def test_compiled_with_aot_autograd_double_backward_raises(seed, device, backend, form, activation):
    """AOTAutograd's compiled backward is first-order only: create_graph=True still gives the right
    gradients, and differentiating them raises a RuntimeError naming double backward (torch's own)."""
    torch._dynamo.reset()
    ours, expected = _module_pair(seed, form, activation, torch.float32, device)
    gen = generator(seed)
    x = randn(gen, (4, 5), torch.float32, device, requires_grad=True)
    compiled = torch.compile(ours, backend=backend, fullgraph=True)
    (grad,) = torch.autograd.grad(compiled(x).square().sum(), x, create_graph=True)
    (want,) = torch.autograd.grad(expected(x).square().sum(), x)
    assert relative_error(grad, want) < 1e-4
    with pytest.raises(RuntimeError, match="double backward"):
        torch.autograd.grad(grad.square().sum(), list(ours.parameters()))


def _scale(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return x * w


def _setup_scale(ctx, inputs, output):
    ctx.save_for_backward(*inputs)


def _backward_scale(ctx, grad):
    x, w = ctx.saved_tensors
    return grad * w, grad * x


_scale_op = torch.library.custom_op("nvmathx_tests::scale", _scale, mutates_args=())
_scale_op.register_fake(lambda x, w: torch.empty_like(x))
# An op registered without a composition, as one with no exact torch composition would be.
_EagerScale = differentiable("EagerScale", _scale_op, _scale, _setup_scale, _backward_scale, None, 2)


@pytest.mark.parametrize("path", ["eager_function", "custom_op"])
def test_op_without_composition_refuses_create_graph(seed, path):
    """First-order gradients as usual; a backward pass with create_graph=True raises at once."""
    gen = generator(seed)
    x, w = randn(gen, (3, 4), requires_grad=True), randn(gen, (3, 4), requires_grad=True)
    scale = _EagerScale.apply if path == "eager_function" else _scale_op
    grads = torch.autograd.grad(scale(x, w).sum(), (x, w))
    assert torch.equal(grads[0], w.detach()) and torch.equal(grads[1], x.detach())
    with pytest.raises(RuntimeError, match="^EagerScale: double backward is not supported"):
        torch.autograd.grad(scale(x, w).sum(), (x, w), create_graph=True)
