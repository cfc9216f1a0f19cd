"""FusedLinear and FusedMLP: nn.Linear's parameters, initialisation and state_dict; autocast."""

import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402

import nvmathx  # noqa: E402
from helpers.torch_layers import ACTIVATE, TorchMLP, generator, randn, relative_error  # noqa: E402
from nvmathx.torch import FusedLinear, FusedMLP  # noqa: E402


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no_bias"])
def test_linear_initialises_and_loads_as_nn_linear(seed, bias):
    torch.manual_seed(seed)
    expected = nn.Linear(12, 7, bias=bias)
    torch.manual_seed(seed)
    layer = FusedLinear(12, 7, bias=bias, activation="gelu")
    assert list(layer.state_dict()) == list(expected.state_dict())
    for key, value in expected.state_dict().items():
        assert torch.equal(layer.state_dict()[key], value), key
    assert [name for name, _ in layer.named_parameters()] == [name for name, _ in expected.named_parameters()]


def test_state_dict_round_trips_both_ways(seed):
    gen = generator(seed)
    torch_layer, layer = nn.Linear(10, 6), FusedLinear(10, 6, activation="relu")
    layer.load_state_dict(torch_layer.state_dict())
    x = randn(gen, (5, 10))
    assert torch.equal(layer(x), torch.relu(torch_layer(x)))
    with torch.no_grad():
        layer.weight.add_(1.0)
    torch_layer.load_state_dict(layer.state_dict())
    assert torch.equal(torch_layer.weight, layer.weight) and torch.equal(torch_layer.bias, layer.bias)


def test_mlp_initialises_and_loads_as_two_linears(seed):
    torch.manual_seed(seed)
    expected = TorchMLP(16, 48)
    torch.manual_seed(seed)
    block = FusedMLP(16, 48)
    assert list(block.state_dict()) == ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    for key, value in expected.state_dict().items():
        assert torch.equal(block.state_dict()[key], value), key
    gen = generator(seed)
    x = randn(gen, (3, 5, 16))
    other = TorchMLP(16, 48)
    other.load_state_dict(block.state_dict())
    assert relative_error(block(x), other(x).double()) < 1e-6
    block.load_state_dict(TorchMLP(16, 48).state_dict())


def test_bias_free_layers_and_reprs():
    layer = FusedLinear(4, 3, bias=False)
    assert layer.bias is None and "bias" not in layer.state_dict()
    assert "activation=None" in repr(layer) and "activation='relu'" in repr(FusedMLP(4, 8, activation="relu"))
    assert FusedMLP(4, 8, bias=False).fc2.bias is None


def test_device_and_dtype_arguments():
    layer = FusedLinear(4, 3, device="cpu", dtype=torch.float64)
    block = FusedMLP(4, 8, dtype=torch.bfloat16)
    assert layer.weight.dtype == torch.float64 and block.fc1.weight.dtype == torch.bfloat16
    assert layer(torch.ones(2, 4, dtype=torch.float64)).dtype == torch.float64


@pytest.mark.parametrize("activation", ["tanh", "", 3])
def test_constructors_reject_unknown_activations(activation):
    with pytest.raises(nvmathx.OptionsError, match="^activation:"):
        FusedLinear(4, 3, activation=activation)
    with pytest.raises(nvmathx.OptionsError, match="^activation:"):
        FusedMLP(4, 8, activation=activation)


@pytest.mark.parametrize("activation", ["gelu", "relu"])
def test_autocast_behaves_as_nn_linear(seed, activation):
    """Under CPU autocast (bfloat16) the layers compute in bfloat16 and the float32 parameters
    receive float32 gradients, exactly as torch's own block does."""
    torch.manual_seed(seed)
    expected = TorchMLP(32, 64, activation)
    torch.manual_seed(seed)
    block = FusedMLP(32, 64, activation)
    gen = generator(seed)
    x = randn(gen, (4, 8, 32))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out, want = block(x), expected(x)
    assert out.dtype == want.dtype == torch.bfloat16
    assert torch.equal(out, want)  # same bfloat16 ops on the CPU
    grad = randn(gen, out.shape, torch.bfloat16)
    out.backward(grad)
    want.backward(grad)
    for (name, param), (_, reference) in zip(block.named_parameters(), expected.named_parameters()):
        assert param.grad.dtype == torch.float32, name
        assert relative_error(param.grad, reference.grad) < 1e-2, name


def test_linear_autocast(seed):
    torch.manual_seed(seed)
    expected = nn.Linear(16, 24)
    torch.manual_seed(seed)
    layer = FusedLinear(16, 24, activation="gelu")
    x = randn(generator(seed), (10, 16))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out, want = layer(x), ACTIVATE["gelu"](expected(x))
    assert out.dtype == torch.bfloat16 and torch.equal(out, want)
