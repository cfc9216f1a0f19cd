"""The GEMMs of an eager MLP training step, found by one key per pass instead of one per GEMM.

A training step of :class:`~nvmathx.torch.FusedMLP` makes the same six GEMMs on fresh tensors of
the same layouts every time. The general path (:mod:`._dispatch`, :mod:`._fused`,
:func:`._gemm_calls.gemm`) reads each GEMM's layouts off its tensors and looks its plan up; here
the layouts of what a pass is given (x, the weights and biases forward; the gradient and the saved
tensors backward) map to the plan keys of the pass's GEMMs, taken from the tensors of the first
pass of those layouts, which ran the general path (:func:`record_forward`, :func:`record_backward`).
A later pass looks each plan up by its key in :data:`nvmathx.linalg.plan_cache` and runs it by
address, as a ``matmul()`` cache hit does: the six GEMMs' host time without the per-GEMM layouts
and the layers of calls above them.

A pass takes the general path instead (and returns None here) when any of its plans is not in
the cache as ``matmul()``'s defaults run it (dropped, or left with other scalars), while cuBLASLt
has refused any problem of the layers (:data:`._dispatch.refused`), and for layouts not yet seen.
The intermediate tensors the step makes (the hidden activation, the auxiliary output, dz) come
from torch's allocator: a GEMM reading one less aligned than when it was recorded runs through
the general path (a plan made for an alignment serves any multiple of it).
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from .._core.alignment import pointer_alignment as _alignment
from . import _column_sums, _dispatch
from ._fused import (
    _AUX_NAMES,
    _BACKWARD_EPILOGS,
    _FORWARD_EPILOGS,
    _whole_buffer,
    aux_read,
    bias_from_column_sums,
    preferences_for,
)
from ._gemm_calls import cached_entry, current_stream, key_of

__all__ = ["backward", "forward", "record_backward", "record_forward"]

_LIMIT = 1024  # passes remembered; forgotten wholesale past it (token counts may vary from step to step)
_forward_passes: dict = {}
_backward_passes: dict = {}


def _layout(t) -> tuple:
    # (the device too: the op called directly may be given tensors of several)
    return t.shape, t.stride(), t.dtype, t.is_neg(), _alignment(t.data_ptr()), t.get_device()


def _bias_layout(t) -> tuple | None:
    return None if t is None else _layout(t)


def _bias_pointer(bias) -> dict:
    """The epilog input of a forward GEMM, by address (as :func:`._gemm_calls.gemm` passes it)."""
    return {} if bias is None else {"bias": bias.data_ptr()}


class _Forward(NamedTuple):
    first: tuple  # plan key of act(x @ w1.T + b1) with its auxiliary output
    second: tuple  # plan key of h @ w2.T + b2
    hidden_alignment: int  # of h when the second GEMM was recorded: the least its plan takes


class _Backward(NamedTuple):
    dz: tuple | None  # plan keys, None where the pass does not make that GEMM
    dx: tuple | None
    dw1: tuple | None
    dw2: tuple | None
    dz_alignment: int
    column_sums: tuple  # (db1, db2) from the column-sum pass rather than BGRADA


def _forward_key(x, w1, b1, w2, b2, activation, autotune, device_id) -> tuple:
    return (_layout(x), _layout(w1), _bias_layout(b1), _layout(w2), _bias_layout(b2), activation,
            id(preferences_for(autotune)), device_id)


def _eligible(x) -> int:
    """x's device index where the recorded passes may serve it (a CUDA tensor, not a subclass,
    nothing refused), else -1."""
    if _dispatch.refused or type(x) is not torch.Tensor or not _dispatch.fusable(x):
        return -1
    return x.get_device()


def _remember(passes: dict, key, value) -> None:
    if len(passes) >= _LIMIT:
        passes.clear()
    passes[key] = value


def forward(x, w1, b1, w2, b2, activation: str, autotune):
    """``(out, h, aux)`` of the MLP op from this layout's recorded plans, or None (not recorded, or a
    plan not in the cache): the caller then takes the general path and :func:`record_forward`."""
    device_id = _eligible(x)
    if device_id < 0:
        return None
    plans = _forward_passes.get(_forward_key(x, w1, b1, w2, b2, activation, autotune, device_id))
    if plans is None:
        return None
    first, second = cached_entry(device_id, plans.first), cached_entry(device_id, plans.second)
    if first is None or second is None:
        return None
    stream = current_stream(device_id)
    h, outputs = first.run_by_address(stream, x.data_ptr(), w1.data_ptr(), _bias_pointer(b1))
    aux = _whole_buffer(outputs[_AUX_NAMES[activation]])
    h_ptr = h.data_ptr()
    if h_ptr % plans.hidden_alignment:
        return _dispatch.forward(h, w2, b2, "none", False, autotune)[0], h, aux
    out = second.run_by_address(stream, h_ptr, w2.data_ptr(), _bias_pointer(b2))
    return out, h, aux


def record_forward(x, w1, b1, w2, b2, h, activation: str, autotune) -> None:
    """Remember the plan keys of a general forward pass that ran on cuBLASLt (its plans cached)."""
    device_id = _eligible(x)
    if device_id < 0 or not (x.numel() and w1.numel() and w2.numel()):
        return
    preferences = preferences_for(autotune)
    first = key_of(x, w1.T, epilog=_FORWARD_EPILOGS[activation, b1 is not None, True],
                   epilog_inputs=None if b1 is None else {"bias": b1}, preferences=preferences)
    second = key_of(h, w2.T, epilog=_FORWARD_EPILOGS["none", b2 is not None, False],
                    epilog_inputs=None if b2 is None else {"bias": b2}, preferences=preferences)
    if cached_entry(device_id, first) is not None and cached_entry(device_id, second) is not None:
        _remember(_forward_passes, _forward_key(x, w1, b1, w2, b2, activation, autotune, device_id),
                  _Forward(first, second, _alignment(h.data_ptr())))


def _backward_key(grad, x, w1, w2, h, aux, activation, autotune, needs, device_id) -> tuple:
    # (the column-sum threshold too: where the bias gradients come from is decided by it)
    return (_layout(grad), _layout(x), _layout(w1), _layout(w2), h.shape, h.stride(), _alignment(h.data_ptr()),
            aux.shape, aux.stride(), _alignment(aux.data_ptr()), activation, id(preferences_for(autotune)), needs,
            device_id, _column_sums.MIN_ELEMENTS)


def _weight_grad(entry, stream, grad, x, column_sums: bool, need_bias: bool):
    """``(grad.T @ x, its bias gradient or None)`` as :func:`._fused.grad_weight` makes them."""
    result = entry.run_by_address(stream, grad.data_ptr(), x.data_ptr(), {})
    if need_bias and not column_sums:
        return result[0], result[1]["bgrada"]
    return result, _column_sums.column_sums(grad) if need_bias else None


def backward(grad, x, w1, w2, h, aux, activation: str, autotune, needs: tuple):
    """``(dx, dw1, db1, dw2, db2)`` of the MLP op (None where ``needs`` says so) from this layout's
    recorded plans, or None: the caller then takes the general path and :func:`record_backward`."""
    device_id = _eligible(grad)
    if device_id < 0:
        return None
    plans = _backward_passes.get(_backward_key(grad, x, w1, w2, h, aux, activation, autotune, needs, device_id))
    if plans is None:
        return None
    entries = [None if key is None else cached_entry(device_id, key)
               for key in (plans.dz, plans.dx, plans.dw1, plans.dw2)]
    if any(entry is None and key is not None for entry, key in zip(entries, plans[:4])):
        return None
    dz_entry, dx_entry, dw1_entry, dw2_entry = entries
    need_x, need_w1, need_b1, need_w2, need_b2 = needs
    stream = current_stream(device_id)
    dx = dw1 = db1 = dw2 = db2 = None
    if dz_entry is not None:
        dz = dz_entry.run_by_address(stream, grad.data_ptr(), w2.data_ptr(), {_AUX_NAMES[activation]: aux.data_ptr()})
        if dz.data_ptr() % plans.dz_alignment:
            dx = _dispatch.grad_input(dz, w1, autotune) if need_x else None
            if need_w1 or need_b1:
                dw1, db1 = _dispatch.grad_weight(dz, x, need_b1, autotune)
        else:
            if dx_entry is not None:
                dx = dx_entry.run_by_address(stream, dz.data_ptr(), w1.data_ptr(), {})
            if dw1_entry is not None:
                dw1, db1 = _weight_grad(dw1_entry, stream, dz, x, plans.column_sums[0], need_b1)
    if dw2_entry is not None:
        dw2, db2 = _weight_grad(dw2_entry, stream, grad, h, plans.column_sums[1], need_b2)
    return (dx, dw1 if need_w1 else None, db1 if need_b1 else None, dw2 if need_w2 else None,
            db2 if need_b2 else None)


def _weight_grad_key(grad, x, need_bias: bool, preferences) -> tuple[tuple, bool]:
    """(plan key, whether the bias gradient comes from the column-sum pass) of :func:`._fused.grad_weight`."""
    column_sums = need_bias and bias_from_column_sums(grad)
    epilog = "BGRADA" if need_bias and not column_sums else None
    return key_of(grad.T, x, epilog=epilog, preferences=preferences), column_sums


def record_backward(grad, x, w1, w2, h, aux, dz, activation: str, autotune, needs: tuple) -> None:
    """Remember the plan keys of a general backward pass that ran on cuBLASLt (its plans cached);
    ``dz`` is the gradient through the activation it made (None where it made none)."""
    device_id = _eligible(grad)
    if device_id < 0 or not (grad.numel() and x.numel() and w1.numel() and w2.numel()):
        return
    need_x, need_w1, need_b1, need_w2, need_b2 = needs
    preferences = preferences_for(autotune)
    keys: dict = {"dz": None, "dx": None, "dw1": None, "dw2": None}
    sums = [False, False]
    if dz is not None:
        keys["dz"] = key_of(grad, w2, epilog=_BACKWARD_EPILOGS[activation, False],
                            epilog_inputs={_AUX_NAMES[activation]: aux_read(aux, activation, w2.shape[1])},
                            preferences=preferences)
        if need_x:
            keys["dx"] = key_of(dz, w1, preferences=preferences)
        if need_w1 or need_b1:
            keys["dw1"], sums[0] = _weight_grad_key(dz, x, need_b1, preferences)
    if need_w2 or need_b2:
        keys["dw2"], sums[1] = _weight_grad_key(grad, h, need_b2, preferences)
    if all(key is None or cached_entry(device_id, key) is not None for key in keys.values()):
        _remember(_backward_passes, _backward_key(grad, x, w1, w2, h, aux, activation, autotune, needs, device_id),
                  _Backward(keys["dz"], keys["dx"], keys["dw1"], keys["dw2"],
                            _alignment(dz.data_ptr()) if dz is not None else 0, tuple(sums)))
