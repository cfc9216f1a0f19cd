"""The GEMMs of the layers on cuBLASLt, through :func:`nvmathx.linalg.matmul` with fused epilogs.

``forward`` and the three gradients implement :class:`._layer_gemms.LayerGemms`: each computes
what its namesake in :mod:`._reference` computes, in one ``matmul`` call
(its plan cached by shape, strides, dtype and alignment; on CUDA tensors found and run by address,
:mod:`._gemm_calls`), in the user's row-major frame with
``nn.Linear``'s weight layout ``(out_features, in_features)``:

========================  ==========================================  ==========================
function                  product                                     epilog
========================  ==========================================  ==========================
forward                   ``x @ weight.T`` (weight.T: a transpose     [RELU|GELU][_AUX][_BIAS]
                          flag, no copy)                              or BIAS
grad_input                ``grad @ weight``                           none
grad_weight               ``grad.T @ x`` (grad.T: a transpose flag)   BGRADA (bias gradient =
                                                                      ``grad.T`` summed over K);
                                                                      large gradients: none, and
                                                                      :mod:`._column_sums`
grad_activation           ``grad @ weight``                           DGELU / DRELU [_BGRAD]
========================  ==========================================  ==========================
"""

from __future__ import annotations

from .._core.errors import OptionsError
from .._matmulcore.epilogs import GELU_AUX_NAME, RELU_AUX_NAME
from ..linalg import MatmulPlanPreferences
from . import _column_sums
from ._gemm_calls import gemm

__all__ = ["aux_read", "backward_epilog", "bias_from_column_sums", "check_autotune", "forward", "forward_epilog",
           "grad_activation", "grad_input", "grad_weight", "preferences_for", "set_autotune"]

_AUX_NAMES = {"relu": RELU_AUX_NAME, "gelu": GELU_AUX_NAME}
_AUTOTUNED = MatmulPlanPreferences(autotune=True)
_preferences = None  # the default plan preferences (set_autotune): None takes the heuristic's first pick


def set_autotune(enabled: bool) -> bool:
    """Whether the layers' GEMMs autotune: each new problem (shape, layout, dtype, epilog) times
    cuBLASLt's candidates on its first call and keeps the fastest (see
    :class:`nvmathx.linalg.MatmulPlanPreferences` ``autotune``).

    The heuristic's first pick can be 10-30% slower than the fastest candidate for the epilog
    GEMMs; autotuning costs about a second per GEMM of a new shape (six per ``FusedMLP`` shape),
    once per process. Off by default. Returns the previous setting.

    >>> from nvmathx.torch import set_autotune
    >>> previous = set_autotune(True)
    >>> set_autotune(previous)
    True
    """
    global _preferences
    if not isinstance(enabled, bool):
        raise OptionsError("enabled", f"expected a bool (got {type(enabled).__name__})")
    previous = _preferences is not None
    _preferences = _AUTOTUNED if enabled else None
    return previous


def check_autotune(autotune) -> bool | None:
    """``autotune`` as the layers take it: None (the :func:`set_autotune` default), True or False."""
    if autotune is not None and not isinstance(autotune, bool):
        raise OptionsError("autotune", f"expected None, True or False (got {type(autotune).__name__})")
    return autotune


def preferences_for(autotune: bool | None):
    """The plan preferences of a GEMM for the layers' ``autotune`` (None: :func:`set_autotune`'s default)."""
    if autotune is None:
        return _preferences
    return _AUTOTUNED if autotune else None


def forward_epilog(activation: str, bias: bool, keep_aux: bool) -> str | None:
    """The epilog of the forward GEMM: activation, then ``_AUX`` when kept, then ``_BIAS``.

    >>> forward_epilog("gelu", True, True), forward_epilog("none", True, False), forward_epilog("relu", False, False)
    ('GELU_AUX_BIAS', 'BIAS', 'RELU')
    """
    parts = [] if activation == "none" else [activation.upper()] + (["AUX"] if keep_aux else [])
    if bias:
        parts.append("BIAS")
    return "_".join(parts) or None


def backward_epilog(activation: str, bias_grad: bool) -> str:
    """The epilog of ``grad @ weight`` through the activation: DGELU / DRELU, ``_BGRAD`` with a bias gradient.

    >>> backward_epilog("gelu", True), backward_epilog("relu", False)
    ('DGELU_BGRAD', 'DRELU')
    """
    return f"D{activation.upper()}" + ("_BGRAD" if bias_grad else "")


# every call's epilog names, made once
_FORWARD_EPILOGS = {(activation, bias, keep_aux): forward_epilog(activation, bias, keep_aux)
                    for activation in ("none", "relu", "gelu") for bias in (False, True) for keep_aux in (False, True)}
_BACKWARD_EPILOGS = {(activation, bias_grad): backward_epilog(activation, bias_grad)
                     for activation in ("relu", "gelu") for bias_grad in (False, True)}


def forward(x, weight, bias, activation: str, keep_aux: bool, autotune: bool | None = None):
    """``(act(x @ weight.T + bias), aux or None)`` in one GEMM (formats of :mod:`._reference`)."""
    epilog = _FORWARD_EPILOGS[activation, bias is not None, keep_aux]
    result = gemm(x, weight.T, epilog=epilog, epilog_inputs=None if bias is None else {"bias": bias},
                  preferences=preferences_for(autotune))
    if not keep_aux:
        return result, None
    y, outputs = result
    return y, _whole_buffer(outputs[_AUX_NAMES[activation]])


def _whole_buffer(aux):
    """The auxiliary output as the whole buffer cuBLASLt wrote. A GELU aux of N % 8 != 0 columns is
    the first N columns of a buffer padded to a multiple of 8: the op returns the buffer (custom-op
    outputs own their storage, and the fake kernels promise the padded shape) and the backward
    hands cuBLASLt the columns again. Where the slice is no autograd view (ops run below
    ADInplaceOrView under torch.compile, so it has no ``_base``), a tensor over the same storage is
    made instead."""
    rows, columns = aux.shape
    padded = aux.stride(0)
    if padded == columns or aux.stride(1) != 1:
        return aux
    base = aux._base
    if base is not None and tuple(base.shape) == (rows, padded) and base.data_ptr() == aux.data_ptr():
        return base
    return aux.new_empty(0).set_(aux.untyped_storage(), aux.storage_offset(), (rows, padded), (padded, 1))


def bias_from_column_sums(grad) -> bool:
    """Whether ``grad``'s bias gradient (its column sums) comes from the column-sum pass rather than
    from BGRADA (:func:`._column_sums.in_kernel`: large gradients)."""
    rows, cols = grad.shape
    return _column_sums.in_kernel(rows, cols, grad.stride(1), _column_sums.dtype_name(grad.dtype))


def aux_read(aux, activation: str, n: int):
    """The auxiliary output as the gradient GEMM of ``n`` columns reads it: a GELU aux's first ``n``
    columns (the forward GEMM pads it to a multiple of 8)."""
    return aux[:, :n] if activation == "gelu" and aux.shape[1] != n else aux


def grad_input(grad, weight, autotune: bool | None = None):
    """``grad @ weight``."""
    return gemm(grad, weight, preferences=preferences_for(autotune))


def grad_weight(grad, x, bias_grad: bool, autotune: bool | None = None):
    """``(grad.T @ x, grad.sum(0) or None)``: the bias gradient from one read of ``grad`` where
    :func:`._column_sums.in_kernel` says so (large gradients), else BGRADA (cuBLASLt's transposed A
    summed by the GEMM's epilog)."""
    preferences = preferences_for(autotune)
    if bias_grad and not bias_from_column_sums(grad):
        weight_grad, outputs = gemm(grad.T, x, epilog="BGRADA", preferences=preferences)
        return weight_grad, outputs["bgrada"]
    weight_grad = gemm(grad.T, x, preferences=preferences)
    return weight_grad, _column_sums.column_sums(grad) if bias_grad else None


def grad_activation(grad, weight, aux, activation: str, bias_grad: bool, autotune: bool | None = None):
    """``(dz, dz.sum(0) or None)``, ``dz = (grad @ weight) * act'(z)``, in one GEMM."""
    result = gemm(grad, weight, epilog=_BACKWARD_EPILOGS[activation, bias_grad],
                  epilog_inputs={_AUX_NAMES[activation]: aux_read(aux, activation, weight.shape[1])},
                  preferences=preferences_for(autotune))
    if not bias_grad:
        return result, None
    dz, outputs = result
    return dz, outputs[f"d{activation}_bgrad"]
