"""Empty problems (no tokens, no input features, no output features, no hidden features) and
meta tensors behave as torch's nn.Linear-based layers do: outputs and gradients of the same shapes,
values, dtypes and devices, eager and compiled, and no empty GEMM ever reaches cuBLASLt (on the
CPU, float32 tensors are sent down the cuBLASLt path so that the guard is what keeps them off it)."""

import pytest

torch = pytest.importorskip("torch")

from helpers.torch_layers import TorchLinear, TorchMLP, generator, randn  # noqa: E402
from nvmathx.torch import FusedLinear, FusedMLP, _dispatch, _fused, fused_linear, fused_mlp  # noqa: E402

pytestmark = [
    # functorch.compile (imported by the AOTAutograd backends) warns about torch.jit's deprecation.
    pytest.mark.filterwarnings("ignore:`torch.jit.script_method` is deprecated:DeprecationWarning"),
    # nn.Linear's initialisation of a weight with no elements (ours is the same call).
    pytest.mark.filterwarnings("ignore:Initializing zero-element tensors is a no-op:UserWarning"),
]

SPACES = [
    pytest.param("cpu", torch.float32, id="cpu-float32"),
    pytest.param("cuda", torch.float32, id="cuda-float32", marks=pytest.mark.gpu),
    pytest.param("cuda", torch.bfloat16, id="cuda-bfloat16", marks=pytest.mark.gpu),
]
LINEAR_SHAPES = [  # (in_features, out_features, input shape)
    pytest.param(0, 5, (3, 0), id="no_input_features"),
    pytest.param(0, 5, (2, 3, 0), id="no_input_features_3d"),
    pytest.param(4, 0, (3, 4), id="no_output_features"),
    pytest.param(4, 5, (0, 4), id="no_tokens"),
    pytest.param(4, 5, (2, 0, 4), id="no_tokens_3d"),
    pytest.param(0, 0, (0, 0), id="nothing"),
]
MLP_SHAPES = [  # (d_model, hidden, input shape)
    pytest.param(4, 8, (0, 4), id="no_tokens"),
    pytest.param(4, 8, (3, 0, 4), id="no_tokens_3d"),
    pytest.param(0, 8, (3, 0), id="no_model_features"),
    pytest.param(4, 0, (3, 4), id="no_hidden_features"),
    pytest.param(0, 0, (2, 0), id="nothing"),
]
GRAD_MODES = ["backward", "no_grad"]
_GEMMS = ("forward", "grad_input", "grad_weight", "grad_activation")


def _forbid_cublaslt(monkeypatch, device):
    """Make any GEMM that reaches the cuBLASLt path fail the test (on the CPU, float32 tensors are
    taken down that path, as CUDA ones are)."""

    def forbidden(kind):
        def gemm(*args):
            raise AssertionError(f"{kind} reached cuBLASLt with shapes {[tuple(a.shape) for a in args[:2]]}")

        return gemm

    for kind in _GEMMS:
        monkeypatch.setattr(_fused, kind, forbidden(kind))
    if device == "cpu":
        monkeypatch.setattr(_dispatch, "fusable", lambda t: t.dtype in _dispatch.FUSED_DTYPES)
    monkeypatch.setattr(_dispatch, "refused", set())


def _assert_same_as_torch(layer, expected, x, mode, gen):
    """``layer(x)`` and ``expected(x)``, then (mode "backward") the gradients of x and of the parameters."""
    ours, theirs = x.detach().clone(), x.detach().clone()
    if mode == "no_grad":
        with torch.no_grad():
            got, want = layer(ours), expected(theirs)
        assert not got.requires_grad
        torch.testing.assert_close(got, want)
        return
    ours.requires_grad_()
    theirs.requires_grad_()
    got, want = layer(ours), expected(theirs)
    torch.testing.assert_close(got, want)
    grad = randn(gen, got.shape, got.dtype, got.device)
    got.backward(grad)
    want.backward(grad)
    torch.testing.assert_close(ours.grad, theirs.grad)
    for (name, param), reference in zip(layer.named_parameters(), expected.parameters()):
        assert param.grad is not None, name
        torch.testing.assert_close(param.grad, reference.grad, msg=name)


@pytest.mark.parametrize("mode", GRAD_MODES)
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no_bias"])
@pytest.mark.parametrize("activation", [None, "relu", "gelu"])
@pytest.mark.parametrize("in_features,out_features,shape", LINEAR_SHAPES)
@pytest.mark.parametrize("device,dtype", SPACES)
def test_linear_empty_problems_are_nn_linear(seed, monkeypatch, device, dtype, in_features, out_features, shape,
                                             activation, bias, mode):
    _forbid_cublaslt(monkeypatch, device)
    torch.manual_seed(seed)
    expected = TorchLinear(in_features, out_features, bias, activation, device=device, dtype=dtype)
    layer = FusedLinear(in_features, out_features, bias, activation, device=device, dtype=dtype)
    layer.load_state_dict(expected.state_dict())
    gen = generator(seed)
    _assert_same_as_torch(layer, expected, randn(gen, shape, dtype, device), mode, gen)


@pytest.mark.parametrize("mode", GRAD_MODES)
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no_bias"])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("d_model,hidden,shape", MLP_SHAPES)
@pytest.mark.parametrize("device,dtype", SPACES)
def test_mlp_empty_problems_are_two_nn_linears(seed, monkeypatch, device, dtype, d_model, hidden, shape, activation,
                                               bias, mode):
    _forbid_cublaslt(monkeypatch, device)
    torch.manual_seed(seed)
    expected = TorchMLP(d_model, hidden, activation, bias, device=device, dtype=dtype)
    block = FusedMLP(d_model, hidden, activation, bias, device=device, dtype=dtype)
    block.load_state_dict(expected.state_dict())
    gen = generator(seed)
    _assert_same_as_torch(block, expected, randn(gen, shape, dtype, device), mode, gen)


def test_no_input_features_give_the_bias_and_its_gradient(seed):
    """FusedLinear(0, n): the output is the activated bias on every row; the weight gradient is empty
    and the bias gradient is the gradient summed over the tokens (what nn.Linear gives)."""
    gen = generator(seed)
    weight, bias = torch.empty(5, 0, requires_grad=True), randn(gen, (5,), requires_grad=True)
    y = fused_linear(torch.empty(2, 3, 0), weight, bias, "relu")
    assert torch.equal(y, torch.relu(bias).expand(2, 3, 5))
    grad = randn(gen, y.shape)
    y.backward(grad)
    assert weight.grad.shape == (5, 0)
    torch.testing.assert_close(bias.grad, torch.where(bias > 0, grad.sum((0, 1)), 0))


COMPILED = [
    pytest.param("linear", 0, 5, (3, 0), "gelu", id="linear-no_input_features"),
    pytest.param("linear", 4, 0, (3, 4), "relu", id="linear-no_output_features"),
    pytest.param("linear", 4, 5, (2, 0, 4), "gelu", id="linear-no_tokens"),
    pytest.param("mlp", 4, 8, (2, 0, 4), "relu", id="mlp-no_tokens"),
    pytest.param("mlp", 0, 8, (3, 0), "gelu", id="mlp-no_model_features"),
    pytest.param("mlp", 4, 0, (3, 4), "gelu", id="mlp-no_hidden_features"),
]


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
@pytest.mark.parametrize("kind,n_in,n_mid,shape,activation", COMPILED)
@pytest.mark.parametrize("device,dtype", SPACES)
def test_compiled_empty_problems_are_torch_layers(seed, monkeypatch, device, dtype, kind, n_in, n_mid, shape,
                                                  activation, backend):
    """The fake implementations give the shapes, the ops the values, as in eager mode."""
    _forbid_cublaslt(monkeypatch, device)
    torch._dynamo.reset()
    torch.manual_seed(seed)
    if kind == "linear":
        expected = TorchLinear(n_in, n_mid, activation=activation, device=device, dtype=dtype)
        layer = FusedLinear(n_in, n_mid, activation=activation, device=device, dtype=dtype)
    else:
        expected = TorchMLP(n_in, n_mid, activation, device=device, dtype=dtype)
        layer = FusedMLP(n_in, n_mid, activation, device=device, dtype=dtype)
    layer.load_state_dict(expected.state_dict())
    gen = generator(seed)
    compiled = torch.compile(layer, backend=backend, fullgraph=True)
    _assert_same_as_torch(compiled, expected, randn(gen, shape, dtype, device), "backward", gen)


@pytest.mark.parametrize("requires_grad", [True, False], ids=["grad", "no_grad"])
@pytest.mark.parametrize("activation", [None, "relu", "gelu"])
def test_meta_linear_is_nn_linear(activation, requires_grad):
    layer = FusedLinear(6, 10, activation=activation, device="meta")
    expected = TorchLinear(6, 10, activation=activation, device="meta")
    x = torch.empty(2, 3, 6, device="meta", requires_grad=requires_grad)
    y, want = layer(x), expected(x)
    assert y.is_meta and y.shape == want.shape == (2, 3, 10) and y.dtype == want.dtype
    y.sum().backward()
    assert layer.weight.grad.is_meta and layer.weight.grad.shape == (10, 6) and layer.bias.grad.shape == (10,)
    assert (x.grad.is_meta and x.grad.shape == x.shape) if requires_grad else x.grad is None


@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_meta_mlp_is_two_nn_linears(activation):
    block = FusedMLP(6, 16, activation, device="meta", dtype=torch.bfloat16)
    x = torch.empty(4, 6, device="meta", dtype=torch.bfloat16, requires_grad=True)
    out = block(x)
    assert out.is_meta and out.shape == (4, 6) and out.dtype == torch.bfloat16
    out.sum().backward()
    for param in (*block.parameters(), x):
        assert param.grad.is_meta and param.grad.shape == param.shape and param.grad.dtype == torch.bfloat16


def test_meta_functional_forms():
    x, w1, b1 = (torch.empty(s, device="meta") for s in ((5, 3), (8, 3), (8,)))
    w2, b2 = torch.empty(2, 8, device="meta"), torch.empty(2, device="meta")
    assert fused_linear(x, w1, b1, "gelu").shape == (5, 8) and fused_linear(x, w1).is_meta
    out = fused_mlp(x, w1, b1, w2, b2, "relu")
    assert out.is_meta and out.shape == (5, 2)


@pytest.mark.parametrize("kind", ["linear", "mlp"])
def test_meta_float8_layer_materialised_with_to_empty_is_initialised_by_reset_parameters(kind, seed):
    """to_empty() leaves the buffers holding whatever the memory held; reset_parameters() gives the
    weights nn.Linear's draws and the scaling state a fresh state's values (as FSDP's meta-device
    initialisation calls it)."""
    from nvmathx.torch import Float8Recipe

    recipe = Float8Recipe(amax_history_len=4)
    make = (lambda device: FusedLinear(16, 32, device=device, fp8=recipe)) if kind == "linear" else \
        (lambda device: FusedMLP(16, 32, device=device, fp8=recipe))
    layer = make("meta").to_empty(device="cpu")
    state = layer.fp8_state
    with torch.no_grad():  # what the memory might hold
        state.amax_history.fill_(7.0)
        state.scale.fill_(float("nan"))
        state.scale_inv.fill_(-3.0)
    state.measured.add(0)
    torch.manual_seed(seed)
    layer.reset_parameters()
    torch.manual_seed(seed)
    fresh = make("cpu")
    for name, value in fresh.state_dict().items():
        assert torch.equal(layer.state_dict()[name], value), name
    assert state.measured == set() and state.weight_cache == {}
