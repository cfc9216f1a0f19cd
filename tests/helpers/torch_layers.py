"""Shared helpers of the nvmathx.torch tests: seeded torch data and the float64 reference block."""

import torch
import torch.nn.functional as F
from torch import nn

__all__ = [
    "ACTIVATE",
    "TorchLinear",
    "TorchMLP",
    "float64_reference",
    "generator",
    "layer_tensors",
    "randn",
    "reference_linear",
    "reference_mlp",
    "relative_error",
    "route_float32_to_cublaslt_path",
    "training_step",
]

ACTIVATE = {None: lambda z: z, "relu": torch.relu, "gelu": lambda z: F.gelu(z, approximate="tanh")}


def generator(seed: int) -> torch.Generator:
    """A CPU torch generator seeded from the test's ``seed`` fixture."""
    return torch.Generator().manual_seed(seed)


def randn(gen, shape, dtype=torch.float32, device="cpu", scale=1.0, requires_grad=False):
    """Standard-normal data drawn on the CPU from ``gen`` (reproducible on any device), then moved."""
    values = torch.randn(shape, generator=gen, dtype=torch.float64) * scale
    return values.to(device=device, dtype=dtype).requires_grad_(requires_grad)


def layer_tensors(gen, shapes: dict, dtype, device="cpu", requires_grad=True) -> dict:
    """Weights scaled by 1/sqrt(fan_in) (outputs of order one), biases of order one."""
    tensors = {}
    for name, shape in shapes.items():
        scale = shape[1] ** -0.5 if len(shape) == 2 else 1.0
        tensors[name] = randn(gen, shape, dtype, device, scale, requires_grad)
    return tensors


def reference_linear(x, weight, bias, activation):
    """torch's unfused layer (float64 in, float64 out)."""
    return ACTIVATE[activation](F.linear(x, weight, bias))


def reference_mlp(x, w1, b1, w2, b2, activation):
    """torch's unfused block."""
    return F.linear(ACTIVATE[activation](F.linear(x, w1, b1)), w2, b2)


def reference_mlp_with_mask(x, w1, b1, w2, b2, positive):
    """The ReLU block with the activation's mask given: the function whose gradient the fused
    backward computes from the forward's bitmask. (Where the forward rounded a pre-activation near
    0 to the other sign, a float64 mask of its own would move a whole gradient entry.)"""
    z = F.linear(x, w1, b1)
    return F.linear(torch.where(positive, z, torch.zeros_like(z)), w2, b2)


def float64_reference(function, tensors, grad, *args):
    """(output, gradients of the tensors that are not None) of ``function`` in float64."""
    wide = [t.detach().cpu().double().requires_grad_() if t is not None else None for t in tensors]
    out = function(*wide, *args)
    given = [t for t in wide if t is not None]
    return out.detach(), torch.autograd.grad(out, given, grad.detach().cpu().double())


def relative_error(result, expected) -> float:
    """Norm-wise relative error of ``result`` against the float64 ``expected``."""
    expected = expected.detach().double().cpu()
    difference = result.detach().double().cpu() - expected
    return float(difference.norm() / (expected.norm() or 1.0))


class TorchLinear(nn.Linear):
    """The torch layer FusedLinear replaces: nn.Linear, then the activation."""

    def __init__(self, in_features, out_features, bias=True, activation=None, device=None, dtype=None):
        super().__init__(in_features, out_features, bias, device=device, dtype=dtype)
        self.activation = activation

    def forward(self, x):
        return ACTIVATE[self.activation](super().forward(x))


class TorchMLP(nn.Module):
    """The torch block FusedMLP replaces: fc1, activation, fc2."""

    def __init__(self, d_model, hidden, activation="gelu", bias=True, device=None, dtype=None):
        super().__init__()
        self.fc1 = nn.Linear(d_model, hidden, bias, device=device, dtype=dtype)
        self.fc2 = nn.Linear(hidden, d_model, bias, device=device, dtype=dtype)
        self.activation = activation

    def forward(self, x):
        return self.fc2(ACTIVATE[self.activation](self.fc1(x)))


def training_step(module, x, grad):
    """One step: gradients dropped, ``module(x)``, ``backward(grad)``; returns (output, [param grads..., x.grad])."""
    for param in module.parameters():
        param.grad = None
    x.grad = None
    out = module(x)
    out.backward(grad)
    return out.detach(), [param.grad for param in module.parameters()] + [x.grad]


def route_float32_to_cublaslt_path(monkeypatch) -> list:
    """Send float32 CPU tensors down nvmathx.torch's cuBLASLt path, which then runs on nvmathx's own
    CPU execution space (the same epilog semantics, results without autograd history, as on a
    GPU), for the duration of a test. Returns the list that records every matmul call made there."""
    from nvmathx.torch import _dispatch, _gemm_calls

    calls = []
    real_matmul = _gemm_calls.matmul

    def recording_matmul(a, b, *, epilog=None, epilog_inputs=None, preferences=None, **kwargs):
        calls.append({"epilog": epilog, "a": a, "b": b, "inputs": dict(epilog_inputs or {}),
                      "preferences": preferences})
        return real_matmul(a, b, epilog=epilog, epilog_inputs=epilog_inputs, preferences=preferences, **kwargs)

    monkeypatch.setattr(_dispatch, "fusable", lambda t: t.dtype == torch.float32)
    monkeypatch.setattr(_gemm_calls, "matmul", recording_matmul)
    monkeypatch.setattr(_dispatch, "refused", set())
    return calls
