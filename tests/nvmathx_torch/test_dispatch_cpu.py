"""The path decision: what the cuBLASLt path hands to nvmathx.linalg.matmul (run here on nvmathx's
own CPU execution space, which implements the same epilog semantics), and the fallback to the
torch composition when cuBLASLt refuses a problem."""

import logging

import pytest

torch = pytest.importorskip("torch")

from helpers.torch_layers import (  # noqa: E402
    float64_reference,
    generator,
    layer_tensors,
    randn,
    reference_mlp,
    relative_error,
    route_float32_to_cublaslt_path,
)
from nvmathx import InvalidStateError  # noqa: E402
from nvmathx._bindings.cublaslt import CublasLtError  # noqa: E402
from nvmathx.torch import _dispatch, _fused, fused_linear, fused_mlp  # noqa: E402


@pytest.fixture
def fused_on_cpu(monkeypatch):
    """Send float32 CPU tensors down the cuBLASLt path and record every matmul call made there."""
    return route_float32_to_cublaslt_path(monkeypatch)


def _shares_storage(view, *tensors):
    return any(view.untyped_storage().data_ptr() == t.untyped_storage().data_ptr() for t in tensors)


@pytest.mark.parametrize("activation", ["gelu", "relu"])
def test_mlp_runs_six_gemms_with_the_fused_epilogs(seed, fused_on_cpu, activation):
    gen = generator(seed)
    x = randn(gen, (3, 10, 24), requires_grad=True)
    t = layer_tensors(gen, {"w1": (128, 24), "b1": (128,), "w2": (24, 128), "b2": (24,)}, torch.float32)
    out = fused_mlp(x, t["w1"], t["b1"], t["w2"], t["b2"], activation)
    grad = randn(gen, out.shape)
    grads = torch.autograd.grad(out, (x, t["w1"], t["b1"], t["w2"], t["b2"]), grad)
    upper = activation.upper()
    assert [call["epilog"] for call in fused_on_cpu] == [
        f"{upper}_AUX_BIAS", "BIAS",  # forward
        f"D{upper}", None, "BGRADA", "BGRADA",  # backward: dz, dx, dW1 and db1, dW2 and db2
    ]
    # Weights and the input go in as they are or as transposed views (transpose flags): no copies.
    weights = (t["w1"], t["w2"])
    forward_1, forward_2, activation_grad, input_grad, weight_1_grad, weight_2_grad = fused_on_cpu
    assert forward_1["b"].T.is_contiguous() and _shares_storage(forward_1["b"], *weights)
    assert forward_2["b"].T.is_contiguous() and _shares_storage(forward_2["b"], *weights)
    assert _shares_storage(forward_1["a"], x) and _shares_storage(weight_1_grad["b"], x)
    assert _shares_storage(activation_grad["b"], *weights) and _shares_storage(input_grad["b"], *weights)
    assert weight_1_grad["a"].T.is_contiguous() and weight_2_grad["a"].T.is_contiguous()
    expected, expected_grads = float64_reference(reference_mlp, (x, *t.values()), grad, activation)
    assert relative_error(out, expected) < 1e-6
    for got, want in zip(grads, expected_grads):
        assert relative_error(got, want) < 1e-5


@pytest.mark.parametrize("activation,forward,backward", [
    (None, "BIAS", [None, "BGRADA"]),
    ("relu", "RELU_BIAS", [None, "BGRADA"]),
    ("gelu", "GELU_AUX_BIAS", [None, "BGRADA"]),
])
def test_linear_epilogs(seed, fused_on_cpu, activation, forward, backward):
    gen = generator(seed)
    x = randn(gen, (12, 8), requires_grad=True)
    t = layer_tensors(gen, {"weight": (16, 8), "bias": (16,)}, torch.float32)
    y = fused_linear(x, t["weight"], t["bias"], activation)
    y.backward(randn(gen, y.shape))
    assert [call["epilog"] for call in fused_on_cpu] == [forward, *backward]


def test_inference_keeps_no_auxiliary_output(seed, fused_on_cpu):
    gen = generator(seed)
    x = randn(gen, (12, 8))
    t = layer_tensors(gen, {"w1": (16, 8), "b1": (16,), "w2": (8, 16), "b2": (8,)}, torch.float32)
    with torch.no_grad():
        fused_mlp(x, *t.values())
        fused_linear(x, t["w1"], None, "gelu")
    assert [call["epilog"] for call in fused_on_cpu] == ["GELU_BIAS", "BIAS", "GELU"]


def test_refused_problems_fall_back_once_per_signature(seed, fused_on_cpu, monkeypatch, caplog):
    """A NOT_SUPPORTED from cuBLASLt sends that problem to the torch composition (logged at DEBUG)
    and is remembered; other shapes still try cuBLASLt."""
    attempts = []

    def refusing_grad_activation(*args):
        attempts.append(args[0].shape)
        raise CublasLtError(15, "CUBLAS_STATUS_NOT_SUPPORTED", "cublasLtMatmulAlgoGetHeuristic")

    monkeypatch.setattr(_fused, "grad_activation", refusing_grad_activation)
    monkeypatch.setattr(_dispatch, "_logged", set())
    gen = generator(seed)
    t = layer_tensors(gen, {"w1": (16, 8), "b1": (16,), "w2": (8, 16), "b2": (8,)}, torch.float32)
    with caplog.at_level(logging.DEBUG, logger="nvmathx"):
        for rows in (5, 5, 5, 7):
            x = randn(gen, (rows, 8), requires_grad=True)
            out = fused_mlp(x, *t.values())
            grad = randn(gen, out.shape)
            grads = torch.autograd.grad(out, (x, *t.values()), grad)
            _, expected = float64_reference(reference_mlp, (x, *t.values()), grad, "gelu")
            assert all(relative_error(g, e) < 1e-5 for g, e in zip(grads, expected))
    assert attempts == [(5, 8), (7, 8)]
    assert len(_dispatch.refused) == 2
    ours = [record for record in caplog.records if record.getMessage().startswith("nvmathx.torch:")]
    assert len(ours) == 2 and all("refused" in r.getMessage() and r.levelno == logging.DEBUG for r in ours)


@pytest.mark.parametrize("error", [
    CublasLtError(13, "CUBLAS_STATUS_EXECUTION_FAILED", "cublasLtMatmul"),
    InvalidStateError("this matmul plan was freed"),
])
def test_other_errors_propagate(seed, fused_on_cpu, monkeypatch, error):
    def failing(*args):
        raise error

    monkeypatch.setattr(_fused, "forward", failing)
    gen = generator(seed)
    with pytest.raises(type(error)):
        fused_linear(randn(gen, (4, 3)), randn(gen, (5, 3)))
    assert not _dispatch.refused


def test_cpu_tensors_take_the_torch_composition(seed, monkeypatch, caplog):
    monkeypatch.setattr(_dispatch, "_logged", set())
    gen = generator(seed)
    assert not _dispatch.fusable(randn(gen, (2, 2)))
    with caplog.at_level(logging.DEBUG, logger="nvmathx"):
        for _ in range(3):
            fused_linear(randn(gen, (4, 3)), randn(gen, (5, 3)))
    assert len(caplog.records) == 1 and "torch composition" in caplog.records[0].getMessage()


def test_set_autotune_reaches_every_gemm(seed, fused_on_cpu):
    from nvmathx import OptionsError
    from nvmathx.torch import set_autotune

    gen = generator(seed)
    x = randn(gen, (6, 24), requires_grad=True)
    t = layer_tensors(gen, {"w1": (32, 24), "b1": (32,), "w2": (24, 32), "b2": (24,)}, torch.float32)
    assert set_autotune(True) is False
    try:
        fused_mlp(x, t["w1"], t["b1"], t["w2"], t["b2"], "gelu").sum().backward()
    finally:
        assert set_autotune(False) is True
    assert len(fused_on_cpu) == 6 and all(call["preferences"].autotune for call in fused_on_cpu)
    fused_on_cpu.clear()
    fused_mlp(x, t["w1"], t["b1"], t["w2"], t["b2"], "gelu")
    assert [call["preferences"] for call in fused_on_cpu] == [None, None]
    with pytest.raises(OptionsError, match="^enabled"):
        set_autotune("yes")


def _autotuned(calls) -> list:
    return [call["preferences"] is not None and call["preferences"].autotune for call in calls]


@pytest.mark.parametrize("global_default", [False, True])
@pytest.mark.parametrize("mode", ["module", "call"])
def test_a_layer_or_call_setting_wins_over_set_autotune(seed, fused_on_cpu, global_default, mode):
    """autotune=True/False on a layer or a call decides every GEMM it runs, forward and backward,
    whatever set_autotune says; autotune=None follows set_autotune."""
    from nvmathx.torch import FusedLinear, FusedMLP, set_autotune

    own = not global_default
    gen = generator(seed)
    x = randn(gen, (6, 24), requires_grad=True)
    block, linear = FusedMLP(24, 32, autotune=own), FusedLinear(24, 8, activation="gelu", autotune=own)
    previous = set_autotune(global_default)
    try:
        if mode == "module":
            block(x).sum().backward()
            linear(x).sum().backward()
        else:
            t = layer_tensors(gen, {"w1": (32, 24), "b1": (32,), "w2": (24, 32), "b2": (24,)}, torch.float32)
            fused_mlp(x, t["w1"], t["b1"], t["w2"], t["b2"], "gelu", autotune=own).sum().backward()
            fused_linear(x, t["w1"], t["b1"], "gelu", autotune=own).sum().backward()
        assert len(fused_on_cpu) == 6 + 3 and _autotuned(fused_on_cpu) == [own] * 9
        fused_on_cpu.clear()
        FusedMLP(24, 32)(x).sum().backward()  # autotune=None: the global default
        assert _autotuned(fused_on_cpu) == [global_default] * 6
    finally:
        set_autotune(previous)


def test_a_layer_setting_reaches_the_compiled_ops(seed, fused_on_cpu):
    """Under torch.compile the setting is an argument of the custom ops, forward and backward."""
    from nvmathx.torch import FusedMLP

    gen = generator(seed)
    x = randn(gen, (6, 24), requires_grad=True)
    block = FusedMLP(24, 32, autotune=True)
    torch.compile(block, backend="aot_eager", fullgraph=True)(x).sum().backward()
    assert len(fused_on_cpu) == 6 and all(_autotuned(fused_on_cpu))


def test_autotune_takes_none_or_a_bool():
    from nvmathx import OptionsError
    from nvmathx.torch import FusedLinear, FusedMLP

    with pytest.raises(OptionsError, match="^autotune"):
        FusedLinear(2, 2, autotune="yes")
    with pytest.raises(OptionsError, match="^autotune"):
        FusedMLP(2, 2, autotune=1)
    with pytest.raises(OptionsError, match="^autotune"):
        fused_linear(torch.ones(2, 2), torch.ones(2, 2), autotune=0)
    assert "autotune=True" in repr(FusedMLP(2, 2, autotune=True)) and "autotune" not in repr(FusedLinear(2, 2))


def test_a_padded_gelu_aux_without_an_autograd_base_comes_back_whole():
    """Under torch.compile the ops run below ADInplaceOrView: the aux slice has no ``_base``, and the
    op must still return the padded buffer its fake kernel promises."""
    from nvmathx.torch._fused import _whole_buffer

    buffer = torch.arange(4 * 16, dtype=torch.float32).reshape(4, 16).clone()  # owns its storage
    detached_slice = buffer.new_empty(0).set_(buffer.untyped_storage(), 0, (4, 9), (16, 1))
    assert detached_slice._base is None
    whole = _whole_buffer(detached_slice)
    assert tuple(whole.shape) == (4, 16) and torch.equal(whole, buffer)
    assert _whole_buffer(buffer[:, :9]) is buffer
    unpadded = torch.ones(4, 8)
    assert _whole_buffer(unpadded) is unpadded
