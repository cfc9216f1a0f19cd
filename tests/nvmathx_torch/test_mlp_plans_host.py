"""The eager MLP's recorded passes (nvmathx.torch._mlp_plans) on the host: torch CPU tensors presented
as device tensors, cuBLASLt replaced by its numpy model (tests/linalg), the column-sum kernel compiled
as host C++. A step served by the recorded plans gives the bits the general path gives on the same
inputs (same plans, same model), the gradients match torch's block in float64, and every way out
(no plan in the cache, a refusal, a less aligned intermediate, another threshold) takes the general
path."""

import pytest

torch = pytest.importorskip("torch")

from helpers.fake_torch_device import present_torch_as_device  # noqa: E402
from helpers.host_kernels import HostKernels  # noqa: E402
from helpers.torch_layers import float64_reference, generator, layer_tensors, randn, reference_mlp  # noqa: E402
from linalg._fake_cublaslt import install  # noqa: E402
from nvmathx.linalg import plan_cache  # noqa: E402
from nvmathx.torch import _column_sums, _dispatch, _fused, _gemm_calls, _mlp_plans, fused_mlp  # noqa: E402
from nvmathx.torch._float8 import kernels  # noqa: E402

HOST = HostKernels(kernels.KERNEL_SOURCE, kernels.KERNEL_NAMES, "float8")
DTYPE = torch.bfloat16


@pytest.fixture
def fake_gpu(monkeypatch):
    """The cuBLASLt path for CPU tensors presented as device 0, with the GEMMs that reach it through
    the general path counted (``counts["general"]``) and the intermediates' alignment taken as 64
    bytes, which every CPU allocation has (the device's allocator gives one alignment to all)."""
    install(monkeypatch)
    present_torch_as_device(monkeypatch)
    monkeypatch.setattr(_dispatch, "fusable", lambda t: t.dtype in _dispatch.FUSED_DTYPES)
    monkeypatch.setattr(_dispatch, "refused", set())
    monkeypatch.setattr(_gemm_calls, "current_stream_handle", lambda device_id: 7)
    monkeypatch.setattr(kernels, "launch", HOST.launch)
    monkeypatch.setattr(_column_sums, "torch_stream", lambda device: (None, 0))
    monkeypatch.setattr(_mlp_plans, "_alignment", lambda ptr: 64)
    monkeypatch.setattr(_mlp_plans, "_forward_passes", {})
    monkeypatch.setattr(_mlp_plans, "_backward_passes", {})
    counts = {"general": 0}
    real_gemm = _fused.gemm

    def counted(*args, **kwargs):
        counts["general"] += 1
        return real_gemm(*args, **kwargs)

    monkeypatch.setattr(_fused, "gemm", counted)
    yield counts
    plan_cache.clear()


def _problem(gen, tokens, d_model, hidden, bias, x_grad):
    shapes = {"w1": (hidden, d_model), "w2": (d_model, hidden)}
    if bias:
        shapes.update(b1=(hidden,), b2=(d_model,))
    t = layer_tensors(gen, shapes, DTYPE)
    params = (t["w1"], t.get("b1"), t["w2"], t.get("b2"))
    x = randn(gen, (tokens, d_model), DTYPE, requires_grad=x_grad)
    return x, params, randn(gen, (tokens, d_model), DTYPE)


def _step(x, params, grad, activation):
    """(out, gradients of x and the parameters that need them)."""
    out = fused_mlp(x, *params, activation=activation)
    wanted = [t for t in (x, *params) if t is not None and t.requires_grad]
    return out, torch.autograd.grad(out, wanted, grad)


def _general_step(monkeypatch, x, params, grad, activation):
    with monkeypatch.context() as patch:
        patch.setattr(_mlp_plans, "forward", lambda *args: None)
        patch.setattr(_mlp_plans, "backward", lambda *args: None)
        return _step(x, params, grad, activation)


@pytest.mark.parametrize("activation", ["gelu", "relu"])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("x_grad", [True, False])
@pytest.mark.parametrize("hidden, column_sums", [(128, False), (100, False), (128, True)],
                         ids=["bgrada", "padded-aux", "column-sums"])
def test_recorded_steps_equal_the_general_path(fake_gpu, monkeypatch, seed, activation, bias, x_grad, hidden,
                                               column_sums):
    if column_sums:  # the bias gradients from the column-sum pass at any size
        monkeypatch.setattr(_column_sums, "MIN_ELEMENTS", 0)
    gen = generator(seed)
    x, params, grad = _problem(gen, 48, 64, hidden, bias, x_grad)
    _step(x, params, grad, activation)  # the general path, which plans and records
    assert len(_mlp_plans._forward_passes) == 1 and len(_mlp_plans._backward_passes) == 1
    for _ in range(2):  # fresh inputs of the same layouts
        x, _, grad = _problem(gen, 48, 64, hidden, bias, x_grad)
        before = fake_gpu["general"]
        out, grads = _step(x, params, grad, activation)
        assert fake_gpu["general"] == before, "a recorded step reached the general path"
        expected_out, expected_grads = _general_step(monkeypatch, x, params, grad, activation)
        assert fake_gpu["general"] > before
        assert torch.equal(out, expected_out)
        assert len(grads) == len(expected_grads)
        for ours, theirs in zip(grads, expected_grads):
            assert ours.dtype == theirs.dtype and torch.equal(ours, theirs)
    if activation == "gelu":  # and against torch's block in float64 (ReLU's mask may flip near 0 in float64)
        _assert_near_float64(x, params, grad, grads)


def _assert_near_float64(x, params, grad, grads):
    given = [t for t in (x, *params) if t is not None]
    _, reference = float64_reference(reference_mlp, (x, *params), grad, "gelu")
    wanted = [want for t, want in zip(given, reference) if t.requires_grad]
    assert len(wanted) == len(grads)
    for ours, want in zip(grads, wanted):
        assert float((ours.double() - want).norm() / want.norm()) < 2e-2


def test_frozen_weights_record_a_pass_of_their_own(fake_gpu, seed):
    """Which gradients a pass makes is part of its key: freezing the first layer takes new plans."""
    gen = generator(seed)
    x, params, grad = _problem(gen, 32, 64, 128, True, True)
    _step(x, params, grad, "gelu")
    params[0].requires_grad_(False)
    params[1].requires_grad_(False)
    before = fake_gpu["general"]
    _, grads = _step(x, params, grad, "gelu")
    assert fake_gpu["general"] > before and len(grads) == 3  # dx, dw2, db2
    assert len(_mlp_plans._backward_passes) == 2


@pytest.mark.parametrize("way_out", ["plans dropped", "refused", "hidden less aligned", "dz less aligned",
                                     "threshold"])
def test_every_way_out_takes_the_general_path(fake_gpu, monkeypatch, seed, way_out):
    gen = generator(seed)
    x, params, grad = _problem(gen, 32, 64, 128, True, True)
    _step(x, params, grad, "gelu")
    if way_out == "plans dropped":
        plan_cache.clear()
    elif way_out == "refused":
        monkeypatch.setattr(_dispatch, "refused", {("some", "other", "problem")})
    elif way_out == "hidden less aligned":  # no address is a multiple of 2**40
        (key, plans), = _mlp_plans._forward_passes.items()
        _mlp_plans._forward_passes[key] = plans._replace(hidden_alignment=1 << 40)
    elif way_out == "dz less aligned":
        (key, plans), = _mlp_plans._backward_passes.items()
        _mlp_plans._backward_passes[key] = plans._replace(dz_alignment=1 << 40)
    else:
        monkeypatch.setattr(_column_sums, "MIN_ELEMENTS", 0)
    before = fake_gpu["general"]
    out, grads = _step(x, params, grad, "gelu")
    general = fake_gpu["general"] - before
    # the GEMMs that left the recorded path: all six, the second forward one, the two reading dz, the backward's four
    assert general == {"plans dropped": 6, "refused": 6, "hidden less aligned": 1, "dz less aligned": 2,
                       "threshold": 4}[way_out]
    _assert_near_float64(x, params, grad, grads)


def test_nothing_is_recorded_for_host_tensors(monkeypatch, seed):
    """CPU tensors (the CPU execution space, or torch's composition) never reach the recorded passes."""
    monkeypatch.setattr(_mlp_plans, "_forward_passes", {})
    monkeypatch.setattr(_mlp_plans, "_backward_passes", {})
    gen = generator(seed)
    x, params, grad = _problem(gen, 16, 32, 64, True, True)
    _step(x, params, grad, "gelu")
    assert not _mlp_plans._forward_passes and not _mlp_plans._backward_passes
