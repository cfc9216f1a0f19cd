"""The custom ops of :mod:`nvmathx.torch` (namespace ``nvmathx``), their fake implementations and
their autograd formulas.

Every op takes 2-D operands (the wrappers in :mod:`._functional` reshape) with ``nn.Linear``'s
weight layout ``(out_features, in_features)`` and returns fresh tensors that alias neither the
inputs nor each other. The forward ops are differentiable; their backward formulas call the
gradient ops, which have fake implementations too, so ``torch.compile`` traces forward and
backward with no graph break.

===============================================  =============================================
op                                               computes
===============================================  =============================================
``linear(x, weight, bias, activation)``          ``act(x @ weight.T + bias)``
``linear_aux(x, weight, bias, activation)``      the same and the auxiliary output (pre-activation
                                                 or ReLU bitmask, formats of :mod:`._reference`)
``mlp(x, w1, b1, w2, b2, activation)``           ``(out, h, aux)``: ``h = act(x @ w1.T + b1)``,
                                                 ``out = h @ w2.T + b2``; ``h`` and ``aux`` are
                                                 kept for the backward pass
``grad_input(grad, weight)``                     ``grad @ weight``
``grad_weight(grad, x, bias_grad)``              ``[grad.T @ x]`` (+ ``grad.sum(0)``)
``grad_activation(grad, weight, aux, act, bg)``  ``[dz]`` (+ ``dz.sum(0)``),
                                                 ``dz = (grad @ weight) * act'(z)``
===============================================  =============================================

``mlp``'s backward is four GEMMs and no elementwise kernel: ``dz`` from ``grad_activation``
(DGELU / DRELU), ``dW1, db1`` and ``dW2, db2`` from ``grad_weight`` (BGRADA, or a column-sum
pass for large gradients: :mod:`._column_sums`), ``dx`` plain.
``linear``'s backward applies the activation's derivative elementwise (from the saved output for
ReLU; for GELU it recomputes the pre-activation, which :func:`~nvmathx.torch.fused_linear` avoids
by calling ``linear_aux`` when gradients are needed).

Every op also takes ``autotune`` last (None, True or False; None follows
:func:`~nvmathx.torch.set_autotune` when the GEMM runs). A forward op keeps it for its backward
pass, so a layer's setting reaches its gradient GEMMs too.

Those are the first-order formulas. Each forward op registers its autograd through
:func:`._autograd.differentiable`: with ``create_graph=True`` the backward is instead the gradient
of the op's torch composition (``_linear_composition``, ``_mlp_composition``), so that double
backward is torch's own. Every op has ``nn.Linear``'s semantics for empty operands (no tokens, no
input or no output features: the reference composition runs, never cuBLASLt) and for meta
tensors (shapes only).
"""


import torch
from torch import Tensor

from .._core.errors import OptionsError
from . import _dispatch, _mlp_plans, _reference
from ._autograd import differentiable
from ._layer_gemms import LayerGemms
from ._reference import activation_backward, aux_width

__all__ = [
    "EagerLinear",
    "EagerLinearAux",
    "EagerMLP",
    "as_matrix",
    "check_activation",
    "eager",
    "grad_activation",
    "grad_input",
    "grad_weight",
    "linear",
    "linear_aux",
    "mlp",
]

_GEMMS: LayerGemms = _dispatch  # the ops call the per-call choice, itself a LayerGemms (the type checker checks)

_ACTIVATED = ("relu", "gelu")


def check_activation(activation: str, allowed=("none",) + _ACTIVATED) -> str:
    if activation not in allowed:
        raise OptionsError("activation", f"expected one of {list(allowed)} (got {activation!r})")
    return activation


def eager(t: Tensor) -> bool:
    """Whether a call on ``t`` runs in eager mode on a real tensor: then the layers call the
    implementations below directly, through :class:`torch.autograd.Function` for the forward ops
    (a custom op's dispatch costs about 12 us of host time per call, five calls a training step
    of ``fused_mlp``). Under ``torch.compile`` (and for tensor subclasses) they call the ops, which
    the compiler sees as single nodes."""
    return type(t) is Tensor and not torch.compiler.is_compiling()


def as_matrix(t: Tensor) -> Tensor:
    """``t`` (2-D) when it is row- or column-major with a valid leading dimension, else a contiguous copy."""
    rows, cols = t.shape
    row_stride, col_stride = t.stride()
    if (col_stride == 1 and row_stride >= max(cols, 1)) or (row_stride == 1 and col_stride >= max(rows, 1)):
        return t
    return t.contiguous()


def _aux_like(x: Tensor, n, activation: str) -> Tensor:
    dtype = torch.uint8 if activation == "relu" else x.dtype
    return x.new_empty((x.shape[0], aux_width(activation, n)), dtype=dtype)


# -- forward ops -----------------------------------------------------------------------------------


def _linear(x: Tensor, weight: Tensor, bias: Tensor | None, activation: str, autotune: bool | None = None) -> Tensor:
    """``act(x @ weight.T + bias)``, activation "none", "relu" or "gelu" (tanh)."""
    check_activation(activation)
    return _dispatch.forward(x, weight, bias, activation, False, autotune)[0]


linear = torch.library.custom_op("nvmathx::linear", _linear, mutates_args=())


@linear.register_fake
def _linear_fake(x, weight, bias, activation, autotune=None):
    check_activation(activation)
    return x.new_empty((x.shape[0], weight.shape[0]))


def _linear_aux(x: Tensor, weight: Tensor, bias: Tensor | None, activation: str,
                autotune: bool | None = None) -> tuple[Tensor, Tensor]:
    """``(act(x @ weight.T + bias), aux)``, activation "relu" or "gelu"."""
    check_activation(activation, _ACTIVATED)
    return _dispatch.forward(x, weight, bias, activation, True, autotune)


linear_aux = torch.library.custom_op("nvmathx::linear_aux", _linear_aux, mutates_args=())


@linear_aux.register_fake
def _linear_aux_fake(x, weight, bias, activation, autotune=None):
    check_activation(activation, _ACTIVATED)
    return x.new_empty((x.shape[0], weight.shape[0])), _aux_like(x, weight.shape[0], activation)


def _mlp(x: Tensor, w1: Tensor, b1: Tensor | None, w2: Tensor, b2: Tensor | None,
         activation: str, autotune: bool | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """``(out, h, aux)``: ``h = act(x @ w1.T + b1)`` with its auxiliary output, ``out = h @ w2.T + b2``."""
    check_activation(activation, _ACTIVATED)
    recorded = _mlp_plans.forward(x, w1, b1, w2, b2, activation, autotune)
    if recorded is not None:
        return recorded
    h, aux = _dispatch.forward(x, w1, b1, activation, True, autotune)
    out, _ = _dispatch.forward(h, w2, b2, "none", False, autotune)
    _mlp_plans.record_forward(x, w1, b1, w2, b2, h, activation, autotune)
    return out, h, aux


mlp = torch.library.custom_op("nvmathx::mlp", _mlp, mutates_args=())


@mlp.register_fake
def _mlp_fake(x, w1, b1, w2, b2, activation, autotune=None):
    check_activation(activation, _ACTIVATED)
    m = x.shape[0]
    return x.new_empty((m, w2.shape[0])), x.new_empty((m, w1.shape[0])), _aux_like(x, w1.shape[0], activation)


# -- gradient ops ----------------------------------------------------------------------------------


def _grad_input(grad: Tensor, weight: Tensor, autotune: bool | None = None) -> Tensor:
    """``grad @ weight``."""
    return _dispatch.grad_input(grad, weight, autotune)


grad_input = torch.library.custom_op("nvmathx::grad_input", _grad_input, mutates_args=())


@grad_input.register_fake
def _grad_input_fake(grad, weight, autotune=None):
    return grad.new_empty((grad.shape[0], weight.shape[1]))


def _with_bias_grad(main: Tensor, bias_grad: Tensor | None) -> list:
    return [main] if bias_grad is None else [main, bias_grad]


def _grad_weight(grad: Tensor, x: Tensor, bias_grad: bool, autotune: bool | None = None) -> list[Tensor]:
    """``[grad.T @ x]``, and ``grad.sum(0)`` after it when ``bias_grad``."""
    return _with_bias_grad(*_dispatch.grad_weight(grad, x, bias_grad, autotune))


grad_weight = torch.library.custom_op("nvmathx::grad_weight", _grad_weight, mutates_args=())


@grad_weight.register_fake
def _grad_weight_fake(grad, x, bias_grad, autotune=None):
    n = grad.shape[1]
    return [grad.new_empty((n, x.shape[1]))] + ([grad.new_empty((n,))] if bias_grad else [])


def _grad_activation(grad: Tensor, weight: Tensor, aux: Tensor, activation: str, bias_grad: bool,
                     autotune: bool | None = None) -> list[Tensor]:
    """``[dz]`` with ``dz = (grad @ weight) * act'(z)``, and ``dz.sum(0)`` after it when ``bias_grad``."""
    check_activation(activation, _ACTIVATED)
    return _with_bias_grad(*_dispatch.grad_activation(grad, weight, aux, activation, bias_grad, autotune))


grad_activation = torch.library.custom_op("nvmathx::grad_activation", _grad_activation, mutates_args=())


@grad_activation.register_fake
def _grad_activation_fake(grad, weight, aux, activation, bias_grad, autotune=None):
    check_activation(activation, _ACTIVATED)
    n = weight.shape[1]
    return [grad.new_empty((grad.shape[0], n))] + ([grad.new_empty((n,))] if bias_grad else [])


# -- autograd --------------------------------------------------------------------------------------


def _no_grads(ctx, first: int) -> tuple:
    """None for the op's arguments from ``first`` on (what a backward returns for non-tensors)."""
    return (None,) * (len(ctx.needs_input_grad) - first)


def _linear_grads(needs: tuple, grad: Tensor, x: Tensor, weight: Tensor, autotune: bool | None,
                  direct: bool | None = None) -> tuple:
    """(dx, dweight, dbias) of ``x @ weight.T + bias`` for the gradient ``grad`` of that product;
    ``direct``: :func:`eager` of ``grad`` where the caller knows it."""
    need_x, need_weight, need_bias = needs
    if direct is None:
        direct = eager(grad)
    dx = (_grad_input if direct else grad_input)(grad, weight, autotune) if need_x else None
    dweight = dbias = None
    if need_weight or need_bias:
        grads = (_grad_weight if direct else grad_weight)(grad, x, need_bias, autotune)
        dweight = grads[0] if need_weight else None
        dbias = grads[1] if need_bias else None
    return dx, dweight, dbias


def _setup_linear(ctx, inputs, output):
    x, weight, bias, activation, *autotune = inputs  # autotune is left out when defaulted
    ctx.activation, ctx.autotune = activation, (autotune or [None])[0]
    # ReLU's derivative comes from the output; GELU's needs the pre-activation, recomputed from bias.
    ctx.save_for_backward(x, weight, bias, output if activation == "relu" else None)


def _backward_linear(ctx, grad):
    x, weight, bias, output = ctx.saved_tensors
    grad = as_matrix(grad)
    if ctx.activation == "relu":
        grad = torch.ops.aten.threshold_backward(grad, output, 0)
    elif ctx.activation == "gelu":
        z = (_linear if eager(grad) else linear)(x, weight, bias, "none", ctx.autotune)
        grad = torch.ops.aten.gelu_backward(grad, z, approximate="tanh")
    return *_linear_grads(ctx.needs_input_grad[:3], grad, x, weight, ctx.autotune), *_no_grads(ctx, 3)


def _setup_linear_aux(ctx, inputs, output):
    x, weight, bias, activation, *autotune = inputs
    ctx.activation, ctx.autotune = activation, (autotune or [None])[0]
    ctx.mark_non_differentiable(output[1])
    ctx.set_materialize_grads(False)
    ctx.save_for_backward(x, weight, bias, output[1])


def _backward_linear_aux(ctx, grad, _aux_grad):
    if grad is None:
        return _no_grads(ctx, 0)
    x, weight, _, aux = ctx.saved_tensors
    grad = activation_backward(as_matrix(grad), aux, ctx.activation)
    return *_linear_grads(ctx.needs_input_grad[:3], grad, x, weight, ctx.autotune), *_no_grads(ctx, 3)


def _setup_mlp(ctx, inputs, output):
    x, w1, b1, w2, b2, activation, *autotune = inputs
    _, h, aux = output
    ctx.activation, ctx.autotune = activation, (autotune or [None])[0]
    ctx.mark_non_differentiable(h, aux)
    ctx.set_materialize_grads(False)  # no zero-filled gradients for h and aux
    ctx.save_for_backward(x, w1, b1, w2, b2, h, aux)


def _backward_mlp(ctx, grad, _h_grad, _aux_grad):
    if grad is None:
        return _no_grads(ctx, 0)
    x, w1, _, w2, _, h, aux = ctx.saved_tensors
    needs = ctx.needs_input_grad[:5]
    need_x, need_w1, need_b1, need_w2, need_b2 = needs
    grad = as_matrix(grad)
    direct = eager(grad)  # (dz is made as grad is: eagerly or traced)
    if direct:
        recorded = _mlp_plans.backward(grad, x, w1, w2, h, aux, ctx.activation, ctx.autotune, needs)
        if recorded is not None:
            return *recorded, *_no_grads(ctx, 5)
    dx = dw1 = db1 = dz = None
    if need_x or need_w1 or need_b1:
        # The bias-1 gradient comes from dW1's GEMM (BGRADA), not from DGELU_BGRAD / DRELU_BGRAD,
        # which cuBLASLt ran several times slower than DGELU alone.
        (dz,) = (_grad_activation if direct else grad_activation)(grad, w2, aux, ctx.activation, False,
                                                                  ctx.autotune)
        dx, dw1, db1 = _linear_grads((need_x, need_w1, need_b1), dz, x, w1, ctx.autotune, direct)
    _, dw2, db2 = _linear_grads((False, need_w2, need_b2), grad, h, w2, ctx.autotune, direct)
    if direct:
        _mlp_plans.record_backward(grad, x, w1, w2, h, aux, dz, ctx.activation, ctx.autotune, needs)
    return dx, dw1, db1, dw2, db2, *_no_grads(ctx, 5)


def _linear_composition(ctx, x, weight, bias) -> Tensor:
    return _reference.forward(x, weight, bias, ctx.activation, False)[0]


def _mlp_composition(ctx, x, w1, b1, w2, b2) -> Tensor:
    h = _reference.forward(x, w1, b1, ctx.activation, False)[0]
    return _reference.forward(h, w2, b2, "none", False)[0]


# What the layers call in eager mode (see eager()): the ops' implementations and autograd formulas.
EagerLinear = differentiable("EagerLinear", linear, _linear, _setup_linear, _backward_linear, _linear_composition, 3)
EagerLinearAux = differentiable("EagerLinearAux", linear_aux, _linear_aux, _setup_linear_aux, _backward_linear_aux,
                                _linear_composition, 3)
EagerMLP = differentiable("EagerMLP", mlp, _mlp, _setup_mlp, _backward_mlp, _mlp_composition, 5)
