"""The float8 custom ops (namespace ``nvmathx``), their fake implementations and autograd.

===================================================  ==========================================
op                                                   computes
===================================================  ==========================================
``float8_linear(x, weight, bias, activation, ...)``  ``(y, x8t, w8t, aux, scale_inv)``: ``y =
                                                     act(x @ weight.T + bias)`` with float8
                                                     operands, and what the backward pass needs
``float8_linear_backward(grad, saved..., ...)``      ``[dx, dweight, dbias]``
``float8_mlp(x, w1, b1, w2, b2, activation, ...)``   ``(out, x8t, w1_8t, z, h8t, w2_8t, scale_inv)``
``float8_mlp_backward(grad, saved..., ...)``         ``[dx, dw1, db1, dw2, db2]``
===================================================  ==========================================

Each also takes the scaling state's three buffers (``amax_history``, ``scale``, ``scale_inv``),
which the kernels it launches update in place. The ops do not declare that mutation: torch
registers no autograd formula for a mutating op, and a functionalised copy would send the writes
to a temporary instead of the state; the forward op's outputs order its backward op after it, and
each layer has its own state. Each also takes the state's ``id`` (its recipe and weight cache:
ops take no Python objects) and ``use_cache``: eager mode reuses the float8 weights of earlier
calls; compiled graphs recast them on each call (op outputs must be fresh tensors). Tensors a
call does not produce are empty. Gradients of gradients are refused (a float8 layer has no exact torch composition).
"""

from __future__ import annotations

import torch
from torch import Tensor

from .._autograd import differentiable
from .._ops import eager
from . import gemms
from .state import SCALE_STRIDE, state_by_id

__all__ = ["EagerFloat8Linear", "EagerFloat8MLP", "float8_linear", "float8_linear_backward", "float8_mlp",
           "float8_mlp_backward"]

def _empty(like: Tensor) -> Tensor:
    return like.new_empty((0,))


def _or_empty(t: Tensor | None, like: Tensor) -> Tensor:
    return _empty(like) if t is None else t


# -- linear ----------------------------------------------------------------------------------------


def _float8_linear(x: Tensor, weight: Tensor, bias: Tensor | None, activation: str, amax_history: Tensor,
                   scale: Tensor, scale_inv: Tensor, state_id: int, need_grad: bool, use_cache: bool,
                   autotune: bool | None = None) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    state = state_by_id(state_id)
    y, saved = gemms.linear_forward(state, (amax_history, scale, scale_inv), x, weight, bias, activation, need_grad,
                                    use_cache, autotune)
    if saved is None:
        return y, _empty(x), _empty(x), _empty(x), _empty(scale_inv)
    x8t, w8t, aux, saved_scale_inv = saved
    # ReLU's derivative reads y itself (saved from the output: outputs may not alias each other).
    return y, x8t, w8t, aux if activation == "gelu" else _empty(x), saved_scale_inv


float8_linear = torch.library.custom_op("nvmathx::float8_linear", _float8_linear, mutates_args=())


@float8_linear.register_fake
def _float8_linear_fake(x, weight, bias, activation, amax_history, scale, scale_inv, state_id, need_grad, use_cache,
                        autotune=None):
    m, n, k = x.shape[0], weight.shape[0], x.shape[1]
    if not need_grad:
        return x.new_empty((m, n)), _empty(x), _empty(x), _empty(x), _empty(scale_inv)
    fp8 = torch.float8_e4m3fn
    aux = x.new_empty((m, n)) if activation == "gelu" else _empty(x)
    return (x.new_empty((m, n)), x.new_empty((k, m), dtype=fp8), x.new_empty((k, n), dtype=fp8), aux,
            scale_inv.new_empty(scale_inv.shape[0] * SCALE_STRIDE))


def _float8_linear_backward(grad: Tensor, x8t: Tensor, w8t: Tensor, aux: Tensor, saved_scale_inv: Tensor,
                            activation: str, amax_history: Tensor, scale: Tensor, scale_inv: Tensor, state_id: int,
                            need_x: bool, need_weight: bool, need_bias: bool,
                            autotune: bool | None = None) -> list[Tensor]:
    state = state_by_id(state_id)
    grads = gemms.linear_backward(state, (amax_history, scale, scale_inv), grad, (x8t, w8t, aux, saved_scale_inv),
                                  activation, (need_x, need_weight, need_bias), autotune)
    return [_or_empty(g, grad) for g in grads]


float8_linear_backward = torch.library.custom_op("nvmathx::float8_linear_backward", _float8_linear_backward,
                                                 mutates_args=())


@float8_linear_backward.register_fake
def _float8_linear_backward_fake(grad, x8t, w8t, aux, saved_scale_inv, activation, amax_history, scale, scale_inv,
                                 state_id, need_x, need_weight, need_bias, autotune=None):
    m, n, k = grad.shape[0], grad.shape[1], x8t.shape[0]
    return [grad.new_empty((m, k)) if need_x else _empty(grad), grad.new_empty((n, k)) if need_weight else _empty(grad),
            grad.new_empty((n,)) if need_bias else _empty(grad)]


def _setup_linear(ctx, inputs, output):
    _, _, _, activation, amax_history, scale, scale_inv, state_id, _, _, *autotune = inputs
    y, x8t, w8t, aux, saved_scale_inv = output
    ctx.activation, ctx.state_id = activation, state_id
    ctx.autotune = (autotune or [None])[0]  # left out of inputs when defaulted
    ctx.mark_non_differentiable(x8t, w8t, aux, saved_scale_inv)
    ctx.set_materialize_grads(False)
    # The state's buffers too (the kernels write them without a version bump, so autograd's check of
    # saved tensors holds): torch.compile traces saved tensors, not tensors kept on ctx.
    ctx.save_for_backward(x8t, w8t, y if activation == "relu" else aux, saved_scale_inv, amax_history, scale,
                          scale_inv)


def _backward_linear(ctx, grad, *_unused):
    if grad is None:
        return (None,) * len(ctx.needs_input_grad)
    x8t, w8t, aux, saved_scale_inv, *state_tensors = ctx.saved_tensors
    grad = grad.contiguous()
    needs = tuple(ctx.needs_input_grad[:3])
    backward = _float8_linear_backward if eager(grad) else float8_linear_backward
    grads = backward(grad, x8t, w8t, aux, saved_scale_inv, ctx.activation, *state_tensors, ctx.state_id, *needs,
                     ctx.autotune)
    return *(g if need else None for g, need in zip(grads, needs)), *(None,) * (len(ctx.needs_input_grad) - 3)


# -- the feed-forward block ------------------------------------------------------------------------


def _float8_mlp(x: Tensor, w1: Tensor, b1: Tensor | None, w2: Tensor, b2: Tensor | None, activation: str,
                amax_history: Tensor, scale: Tensor, scale_inv: Tensor, state_id: int, need_grad: bool,
                use_cache: bool, autotune: bool | None = None
                ) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor]:
    state = state_by_id(state_id)
    out, saved = gemms.mlp_forward(state, (amax_history, scale, scale_inv), x, w1, b1, w2, b2, activation, need_grad,
                                   use_cache, autotune)
    if saved is None:
        return out, _empty(x), _empty(x), _empty(x), _empty(x), _empty(x), _empty(scale_inv)
    return (out, *saved)


float8_mlp = torch.library.custom_op("nvmathx::float8_mlp", _float8_mlp, mutates_args=())


@float8_mlp.register_fake
def _float8_mlp_fake(x, w1, b1, w2, b2, activation, amax_history, scale, scale_inv, state_id, need_grad, use_cache,
                     autotune=None):
    m, d_model, hidden, d_out = x.shape[0], x.shape[1], w1.shape[0], w2.shape[0]
    out = x.new_empty((m, d_out))
    if not need_grad:
        return out, _empty(x), _empty(x), _empty(x), _empty(x), _empty(x), _empty(scale_inv)
    fp8 = torch.float8_e4m3fn
    return (out, x.new_empty((d_model, m), dtype=fp8), x.new_empty((d_model, hidden), dtype=fp8),
            x.new_empty((m, hidden)), x.new_empty((hidden, m), dtype=fp8), x.new_empty((hidden, d_out), dtype=fp8),
            scale_inv.new_empty(scale_inv.shape[0] * SCALE_STRIDE))


def _float8_mlp_backward(grad: Tensor, x8t: Tensor, w1_8t: Tensor, z: Tensor, h8t: Tensor, w2_8t: Tensor,
                         saved_scale_inv: Tensor, activation: str, amax_history: Tensor, scale: Tensor,
                         scale_inv: Tensor, state_id: int, need_x: bool, need_w1: bool, need_b1: bool, need_w2: bool,
                         need_b2: bool, autotune: bool | None = None) -> list[Tensor]:
    state = state_by_id(state_id)
    grads = gemms.mlp_backward(state, (amax_history, scale, scale_inv), grad,
                               (x8t, w1_8t, z, h8t, w2_8t, saved_scale_inv), activation,
                               (need_x, need_w1, need_b1, need_w2, need_b2), autotune)
    return [_or_empty(g, grad) for g in grads]


float8_mlp_backward = torch.library.custom_op("nvmathx::float8_mlp_backward", _float8_mlp_backward,
                                              mutates_args=())


@float8_mlp_backward.register_fake
def _float8_mlp_backward_fake(grad, x8t, w1_8t, z, h8t, w2_8t, saved_scale_inv, activation, amax_history, scale,
                              scale_inv, state_id, need_x, need_w1, need_b1, need_w2, need_b2, autotune=None):
    m, d_out, d_model, hidden = grad.shape[0], grad.shape[1], x8t.shape[0], z.shape[1]
    shapes = ((m, d_model), (hidden, d_model), (hidden,), (d_out, hidden), (d_out,))
    needs = (need_x, need_w1, need_b1, need_w2, need_b2)
    return [grad.new_empty(shape) if need else _empty(grad) for shape, need in zip(shapes, needs)]


def _setup_mlp(ctx, inputs, output):
    activation, amax_history, scale, scale_inv, state_id = inputs[5:10]
    ctx.activation, ctx.state_id = activation, state_id
    ctx.autotune = inputs[12] if len(inputs) > 12 else None  # left out of inputs when defaulted
    ctx.mark_non_differentiable(*output[1:])
    ctx.set_materialize_grads(False)
    ctx.save_for_backward(*output[1:], amax_history, scale, scale_inv)  # as _setup_linear says


def _backward_mlp(ctx, grad, *_unused):
    if grad is None:
        return (None,) * len(ctx.needs_input_grad)
    needs = tuple(ctx.needs_input_grad[:5])
    backward = _float8_mlp_backward if eager(grad) else float8_mlp_backward
    saved = ctx.saved_tensors
    grads = backward(grad.contiguous(), *saved[:6], ctx.activation, *saved[6:], ctx.state_id, *needs,
                     ctx.autotune)
    return *(g if need else None for g, need in zip(grads, needs)), *(None,) * (len(ctx.needs_input_grad) - 5)


EagerFloat8Linear = differentiable("EagerFloat8Linear", float8_linear, _float8_linear, _setup_linear,
                                   _backward_linear, None, 3)
EagerFloat8MLP = differentiable("EagerFloat8MLP", float8_mlp, _float8_mlp, _setup_mlp, _backward_mlp, None, 5)
