"""torch.compile(fullgraph=True) traces the layers as single ops, forward and backward, and
computes what eager mode computes."""

import pytest

torch = pytest.importorskip("torch")

from functorch.compile import make_boxed_func  # noqa: E402
from torch._dynamo.backends.common import aot_autograd  # noqa: E402

from helpers.torch_layers import generator, randn, training_step  # noqa: E402
from nvmathx.torch import FusedLinear, FusedMLP  # noqa: E402

# functorch.compile imports torch.jit code that warns about its own deprecation.
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script_method` is deprecated:DeprecationWarning")

_PLUMBING = {"aten.view.default", "aten.alias.default", "aten.slice.Tensor", "<built-in function getitem>"}  # views


def _capturing_backend():
    """An AOTAutograd backend that records the forward and backward graphs and runs them as they are."""
    graphs = {"forward": [], "backward": []}

    def compiler(name):
        def compile_graph(gm, example_inputs):
            graphs[name].append([str(node.target) for node in gm.graph.nodes if node.op == "call_function"])
            return make_boxed_func(gm.forward)

        return compile_graph

    return aot_autograd(fw_compiler=compiler("forward"), bw_compiler=compiler("backward")), graphs


def _compute(ops):
    return sorted(op for op in ops if op not in _PLUMBING)


@pytest.mark.parametrize("activation", ["gelu", "relu"])
def test_mlp_is_one_op_forward_and_four_gemms_backward(seed, activation):
    backend, graphs = _capturing_backend()
    block = FusedMLP(16, 128, activation)  # hidden a multiple of 128: ReLU's bitmask needs no padding
    x = randn(generator(seed), (4, 8, 16), requires_grad=True)
    out = torch.compile(block, fullgraph=True, backend=backend)(x)
    out.backward(torch.ones_like(out))
    assert [_compute(ops) for ops in graphs["forward"]] == [["nvmathx.mlp.default"]]
    assert [_compute(ops) for ops in graphs["backward"]] == [[
        "nvmathx.grad_activation.default", "nvmathx.grad_input.default", "nvmathx.grad_weight.default",
        "nvmathx.grad_weight.default"]]


def test_linear_gelu_backward_is_one_elementwise_kernel_and_two_gemms(seed):
    backend, graphs = _capturing_backend()
    layer = FusedLinear(16, 24, activation="gelu")
    x = randn(generator(seed), (10, 16), requires_grad=True)
    out = torch.compile(layer, fullgraph=True, backend=backend)(x)
    out.backward(torch.ones_like(out))
    assert [_compute(ops) for ops in graphs["forward"]] == [["nvmathx.linear_aux.default"]]
    assert [_compute(ops) for ops in graphs["backward"]] == [[
        "aten.gelu_backward.default", "nvmathx.grad_input.default", "nvmathx.grad_weight.default"]]


def test_compiled_model_equals_eager(seed):
    """The default backend (inductor) on a model mixing both layers, forward and backward."""
    torch.manual_seed(seed)
    model = torch.nn.Sequential(FusedLinear(16, 32, activation="gelu"), FusedMLP(32, 96), FusedLinear(32, 8))
    gen = generator(seed)
    x = randn(gen, (3, 7, 16), requires_grad=True)
    grad = randn(gen, (3, 7, 8))
    compiled = torch.compile(model, fullgraph=True)
    out, grads = training_step(compiled, x, grad)
    expected, expected_grads = training_step(model, x, grad)
    torch.testing.assert_close(out, expected, rtol=1e-6, atol=1e-6)
    for got, want in zip(grads, expected_grads):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


def test_compiled_autocast_casts_as_eager(seed):
    backend, _ = _capturing_backend()
    torch.manual_seed(seed)
    model = torch.nn.Sequential(FusedLinear(16, 32, activation="relu"), FusedMLP(32, 64))
    x = randn(generator(seed), (6, 16))
    compiled = torch.compile(model, fullgraph=True, backend=backend)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out, expected = compiled(x), model(x)
    assert out.dtype == expected.dtype == torch.bfloat16
    assert torch.equal(out, expected)
