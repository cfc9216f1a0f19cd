"""The one way an op of :mod:`nvmathx.torch` becomes differentiable, and its rule for higher orders.

Every forward op registers its autograd through :func:`differentiable`, which gives the custom op
(``torch.compile``) and the :class:`torch.autograd.Function` of eager mode the same backward:

- ``create_graph=False`` (autograd records nothing during the backward pass, the training step):
  the op's first-order formula, the fused GEMMs, whose results carry no autograd history.
- ``create_graph=True``: the gradient of the op's torch composition (``torch.nn.functional``
  ops, :mod:`._reference`) recomputed from the saved inputs with autograd recording. Gradients
  of these gradients (double backward: gradient penalties, Hessian-vector products,
  ``torch.autograd.gradgradcheck``) are then exactly those of torch's unfused layers, at the
  cost of the unfused computation for that backward pass. An op without an exact composition
  raises a ``RuntimeError`` naming double backward there instead.

Refusing double backward with ``torch.autograd.function.once_differentiable`` would not be safe:
it adds its error node only when an incoming gradient requires grad, so with ``create_graph=True``
from a loss the gradients come back without history and a second-order term through the saved
inputs (a weight's) is dropped without an error: for ``y = x * w``, ``d(dy/dx + w**2)/dw`` comes
out ``2w`` instead of ``1 + 2w``. Custom ops' ``register_autograd`` applies no such wrapper at all.

Under ``torch.compile`` with AOTAutograd (the default backend, ``aot_eager``) torch itself
refuses a gradient of a compiled backward ("torch.compile with aot_autograd does not currently
support double backward"); backends without AOTAutograd (``backend="eager"``) run the ops'
registered autograd, so the rule above.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

__all__ = ["differentiable"]


def _recorded_grads(ctx, grad, composition: Callable, n_inputs: int) -> tuple:
    """The input gradients of ``composition`` recomputed from the first ``n_inputs`` saved tensors
    (the op's tensor inputs) with autograd recording, as a backward formula returns them."""
    trailing = (None,) * (len(ctx.needs_input_grad) - n_inputs)
    if grad is None:  # no gradient reached the differentiable output
        return (None,) * n_inputs + trailing
    inputs = ctx.saved_tensors[:n_inputs]
    needs = ctx.needs_input_grad[:n_inputs]
    wanted = [t for t, need in zip(inputs, needs) if need]
    grads = iter(torch.autograd.grad(composition(ctx, *inputs), wanted, grad, create_graph=True, allow_unused=True))
    return *(next(grads) if need else None for need in needs), *trailing


def _backward(name: str, first_order: Callable, composition: Callable | None, n_inputs: int) -> Callable:
    def backward(ctx, *grads):
        if not torch.is_grad_enabled():  # create_graph=False: no gradient of these gradients
            return first_order(ctx, *grads)
        if composition is None:
            raise RuntimeError(f"{name}: double backward is not supported: its backward pass cannot run with "
                               "create_graph=True (for a gradient of its gradients); use torch's unfused layers")
        return _recorded_grads(ctx, grads[0], composition, n_inputs)

    return backward


def _eager_function(name: str, implementation: Callable, setup_context: Callable, backward: Callable) -> type:
    """The autograd.Function that runs ``implementation`` with the op's autograd formula (eager mode).

    Its forward takes ``ctx`` and calls ``setup_context`` itself: with a separate ``setup_context``
    staticmethod, ``Function.apply`` binds the arguments through ``inspect.signature`` on every
    call (tens of microseconds)."""

    def forward(ctx, *inputs):
        output = implementation(*inputs)
        setup_context(ctx, inputs, output)
        return output

    return type(name, (torch.autograd.Function,), {"forward": staticmethod(forward),
                                                    "backward": staticmethod(backward)})


def differentiable(name: str, op, implementation: Callable, setup_context: Callable, first_order: Callable,
                   composition: Callable | None, n_inputs: int) -> type[torch.autograd.Function]:
    """Register ``op``'s autograd and return the eager-mode autograd.Function ``name``, one backward for both.

    Parameters
    ----------
    name : str
        The Function's class name.
    op : torch.library.CustomOpDef
        The forward op; ``implementation`` is its Python implementation.
    setup_context : callable
        ``(ctx, inputs, output)``: must save the op's ``n_inputs`` tensor inputs first, in order
        (``ctx.save_for_backward(*inputs, *others)``), and any non-tensor state the composition reads.
    first_order : callable
        The backward formula used when ``create_graph=False``.
    composition : callable or None
        ``(ctx, *tensor_inputs)`` -> the op's first output, computed with differentiable torch ops.
        None for an op with no exact composition (a quantised one, say): its backward pass then
        raises a ``RuntimeError`` naming double backward when run with ``create_graph=True``,
        rather than return gradients whose own gradients would be wrong.
    n_inputs : int
        How many of the op's leading arguments are tensors (or None).

    Returns
    -------
    type
        A :class:`torch.autograd.Function` subclass that runs ``implementation``.
    """
    backward = _backward(name, first_order, composition, n_inputs)
    op.register_autograd(backward, setup_context=setup_context)
    return _eager_function(name, implementation, setup_context, backward)
