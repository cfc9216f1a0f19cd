"""The reference composition of torch ops: what every fused GEMM of :mod:`nvmathx.torch` computes.

These functions run where cuBLASLt does not (CPU tensors, float64, anything it refuses) and define
the semantics the fused path is tested against. ``forward`` and the three gradients implement
:class:`._layer_gemms.LayerGemms` (their ``autotune`` is ignored: nothing here is tuned). Each
mirrors one fused GEMM of :mod:`._fused` and returns fresh, contiguous tensors in the same
formats, so that a forward pass on one path and a backward pass on the other compose.

Auxiliary formats (cuBLASLt's, see :mod:`nvmathx.linalg`), for a pre-activation ``z`` of shape
``(M, N)``:

- GELU: ``z`` itself in a ``(M, gelu_aux_width(N))`` buffer (N rounded up to a multiple of 8);
  its first N columns hold ``z``.
- ReLU: a ``uint8`` bitmask of shape ``(M, relu_aux_width(N))`` (N bits rounded up to 128): bit
  ``n % 8`` (least significant first) of byte ``[m, n // 8]`` is set where ``z[m, n] > 0``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

__all__ = [
    "ACTIVATIONS",
    "activate",
    "activation_backward",
    "aux_width",
    "forward",
    "gelu_aux_width",
    "grad_activation",
    "grad_input",
    "grad_weight",
    "pack_positive",
    "relu_aux_width",
    "unpack_positive",
]

ACTIVATIONS = ("none", "relu", "gelu")
_BIT_VALUES = (1, 2, 4, 8, 16, 32, 64, 128)


def gelu_aux_width(n):
    """Columns of the GELU auxiliary buffer: N rounded up to a multiple of 8 (cuBLASLt's rule)."""
    return (n + 7) // 8 * 8


def relu_aux_width(n):
    """Bytes per row of the ReLU bitmask: N bits rounded up to a multiple of 128 bits."""
    return (n + 127) // 128 * 16


def aux_width(activation: str, n):
    """Columns of the auxiliary output kept for ``activation`` ("relu" or "gelu")."""
    return gelu_aux_width(n) if activation == "gelu" else relu_aux_width(n)


def pack_positive(z: torch.Tensor) -> torch.Tensor:
    """The ReLU bitmask of ``z > 0`` (shape ``(M, relu_aux_width(N))``, uint8)."""
    m, n = z.shape
    width = relu_aux_width(n)
    bits = z.new_zeros((m, width * 8), dtype=torch.uint8)
    bits[:, :n] = z > 0
    weights = torch.tensor(_BIT_VALUES, dtype=torch.uint8, device=z.device)
    return (bits.view(m, width, 8) * weights).sum(-1, dtype=torch.uint8)


def unpack_positive(mask: torch.Tensor, n: int) -> torch.Tensor:
    """The boolean ``(M, n)`` array a ReLU bitmask encodes."""
    shifts = torch.arange(8, dtype=torch.uint8, device=mask.device)
    bits = (mask.unsqueeze(-1) >> shifts) & 1
    return bits.flatten(1)[:, :n].bool()


def activation_backward(grad: torch.Tensor, aux: torch.Tensor, activation: str) -> torch.Tensor:
    """``grad * act'(z)`` from the auxiliary output of the forward pass."""
    n = grad.shape[1]
    if activation == "gelu":
        return torch.ops.aten.gelu_backward(grad, aux[:, :n], approximate="tanh")
    return torch.where(unpack_positive(aux, n), grad, 0)


def activate(z, activation: str):
    """``act(z)`` for "none", "relu" or "gelu" (tanh)."""
    if activation == "relu":
        return torch.relu(z)
    if activation == "gelu":
        return F.gelu(z, approximate="tanh")
    return z


def _pre_activation(x, weight, bias):
    if bias is None:
        return x @ weight.T
    return torch.addmm(bias, x, weight.T)


def forward(x, weight, bias, activation: str, keep_aux: bool, autotune: bool | None = None):
    """``(act(x @ weight.T + bias), aux or None)``; ``aux`` in the format above when ``keep_aux``."""
    z = _pre_activation(x, weight, bias)
    if activation == "none":
        return z, None
    y = activate(z, activation)
    if not keep_aux:
        return y, None
    if activation == "relu":
        return y, pack_positive(z)
    m, n = z.shape
    width = gelu_aux_width(n)
    if width == n:
        return y, z
    aux = z.new_zeros((m, width))
    aux[:, :n] = z
    return y, aux


def grad_input(grad, weight, autotune: bool | None = None):
    """``grad @ weight``: the input gradient of ``x @ weight.T``."""
    return grad @ weight


def grad_weight(grad, x, bias_grad: bool, autotune: bool | None = None):
    """``(grad.T @ x, grad.sum(0) or None)``: the weight (and bias) gradient of ``x @ weight.T + b``."""
    return grad.T @ x, grad.sum(0) if bias_grad else None


def grad_activation(grad, weight, aux, activation: str, bias_grad: bool, autotune: bool | None = None):
    """``(dz, dz.sum(0) or None)`` with ``dz = (grad @ weight) * act'(z)`` (``z`` from ``aux``)."""
    dz = activation_backward(grad @ weight, aux, activation).contiguous()
    return dz, dz.sum(0) if bias_grad else None
