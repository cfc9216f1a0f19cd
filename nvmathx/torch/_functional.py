"""The functional forms: :func:`fused_linear` and :func:`fused_mlp`.

Each checks its arguments (typed errors naming them), applies ``torch.autocast`` as ``nn.Linear``
does (the ops themselves have no autocast rule), views the input as a matrix and calls one custom
op of :mod:`._ops`: the op that keeps what the backward pass needs when gradients are wanted, the
one that keeps nothing otherwise.
"""

from __future__ import annotations

import torch

from .._core.errors import OperandError, OptionsError, UnsupportedOperandError
from ._float8 import dispatch as float8
from ._float8.recipe import Float8Recipe
from ._float8.state import Float8State
from ._fused import check_autotune
from ._ops import EagerLinear, EagerLinearAux, EagerMLP, as_matrix, eager

__all__ = ["fused_linear", "fused_mlp"]

_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
_AUTOCAST_ELIGIBLE = (torch.float16, torch.bfloat16, torch.float32)  # autocast leaves float64 alone


def _activation(activation, allow_none: bool) -> str:
    """The op's activation name ("none", "relu", "gelu") for the user's (None, "relu", "gelu")."""
    allowed = (None, "relu", "gelu") if allow_none else ("relu", "gelu")
    if not (activation is None or isinstance(activation, str)) or activation not in allowed:
        raise OptionsError("activation", f"expected one of {list(allowed)} (got {activation!r})")
    return activation or "none"


def _check_tensor(t, name: str, optional: bool = False) -> None:
    if t is None and optional:
        return
    if not isinstance(t, torch.Tensor):
        raise UnsupportedOperandError(name, f"expected a torch.Tensor (got {type(t).__name__})")


def _autocast_enabled(device_type: str) -> bool:
    try:
        return torch.is_autocast_enabled(device_type)
    except RuntimeError:  # a device type autocast does not know (meta): nothing is cast, as for nn.Linear
        return False


def _autocast(x, *tensors):
    """The operands as ``nn.Linear`` sees them under ``torch.autocast``: cast to its dtype."""
    device_type = "cuda" if x.is_cuda else x.device.type  # (x.device makes a new object per call)
    if not _autocast_enabled(device_type):
        return (x, *tensors)
    dtype = torch.get_autocast_dtype(device_type)
    return tuple(t.to(dtype) if t is not None and t.dtype in _AUTOCAST_ELIGIBLE else t for t in (x, *tensors))


def _check_weight(weight, bias, x, names: tuple) -> None:
    """``weight`` 2-D and ``bias`` (out,), both of x's dtype and on x's device."""
    weight_name, bias_name = names
    if weight.dim() != 2:
        raise OperandError(weight_name,
                           f"expected a 2-D (out_features, in_features) tensor (got shape {tuple(weight.shape)})")
    if bias is not None and tuple(bias.shape) != (weight.shape[0],):
        raise OperandError(bias_name, f"expected shape ({weight.shape[0]},) (got {tuple(bias.shape)})")
    for name, t in ((weight_name, weight), (bias_name, bias)):
        if t is not None and t.dtype != x.dtype:
            raise OperandError(name, f"dtype {t.dtype} differs from the input's {x.dtype}; cast one of them")
        if t is not None and t.device != x.device:
            raise OperandError(name, f"lives on {t.device} but the input lives on {x.device}")


def _weights_fit(x, *weights) -> bool:
    """Whether every ``(weight, bias)`` pair passes :func:`_check_weight` for ``x``: the per-call
    check, which says only yes or no (and makes no device objects on CUDA); :func:`_check_weight`
    finds the error."""
    dtype, cuda, index = x.dtype, x.is_cuda, x.get_device()
    for weight, bias in weights:
        if weight.dim() != 2 or weight.dtype != dtype:
            return False
        if bias is not None and (bias.dim() != 1 or bias.shape[0] != weight.shape[0] or bias.dtype != dtype):
            return False
        for t in (weight, bias):
            if t is not None and not (t.is_cuda and t.get_device() == index if cuda else t.device == x.device):
                return False
    return True


def _check_features(x, weight, weight_name: str) -> None:
    if x.dim() < 1 or x.shape[-1] != weight.shape[1]:
        raise OperandError("x", f"last dimension must be in_features={weight.shape[1]} of {weight_name} "
                           f"(got shape {tuple(x.shape)})")


def _check_input(x) -> None:
    if x.dtype not in _DTYPES:
        raise UnsupportedOperandError("x", f"dtype {x.dtype} is not supported; expected one of {list(_DTYPES)}")


def _as_rows(x: torch.Tensor) -> torch.Tensor:
    """``x`` as the (tokens, features) matrix the ops take; a view when the layout allows."""
    if x.dim() == 2:  # already one: no view (and no view node in the backward graph)
        return as_matrix(x)
    features = x.shape[-1]
    # With no features, reshape cannot infer the token count (-1) from zero elements.
    rows = x.reshape(-1, features) if features else x.reshape(x.shape[:-1].numel(), 0)
    return as_matrix(rows)


def _as_input_shape(y: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """The op's ``(tokens, out_features)`` result in x's leading shape."""
    return y if x.dim() == 2 else y.view(x.shape[:-1] + (y.shape[-1],))


def _grad_needed(*tensors) -> bool:
    return torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors)


def _all_tensors(*tensors) -> bool:
    return all(t is None or isinstance(t, torch.Tensor) for t in tensors)


def _float8(recipe, state, kind: str, x2, weights: tuple, run):
    """``run(state, rows)`` (the float8 op on the row-major matrix) for a call with a float8
    ``recipe``, or None when the call runs unquantised: no recipe, a problem float8 cannot take
    (logged once), or one cuBLASLt refused."""
    if recipe is None:
        if state is not None:
            raise OptionsError("fp8_state", "given without an fp8 recipe")
        return None
    state = float8.resolve_state(recipe, state, kind, x2.device)
    fallback = float8.fallback_reason(x2, *weights)
    if fallback is not None:
        float8.log_fallback(*fallback)
        return None
    return run(state, float8.row_major(x2))


def fused_linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None,
                 activation: str | None = None, *, autotune: bool | None = None, fp8: Float8Recipe | None = None,
                 fp8_state: Float8State | None = None) -> torch.Tensor:
    """``act(x @ weight.T + bias)``: ``torch.nn.functional.linear`` followed by an activation, in
    one cuBLASLt GEMM forward and two backward.

    Parameters
    ----------
    x : torch.Tensor
        Input of shape ``(..., in_features)``, any strides (a matrix view is taken when the
        layout allows, else one copy is made).
    weight : torch.Tensor
        ``(out_features, in_features)``, as ``nn.Linear.weight``.
    bias : torch.Tensor or None
        ``(out_features,)``.
    activation : None, "relu" or "gelu"
        Applied after the bias; "gelu" is the tanh approximation,
        ``F.gelu(z, approximate="tanh")``.
    autotune : None, True or False
        Whether this call's GEMMs (forward, and the backward's) time cuBLASLt's candidates on a
        new problem and keep the fastest; None (default) follows :func:`set_autotune`.
    fp8 : Float8Recipe or None
        Run the GEMMs in float8 with this recipe (see :class:`Float8Recipe`): forward with e4m3
        operands, backward with e5m2 gradients (``format="hybrid"``), results in x's dtype.
        Problems float8 cannot take (not CUDA, a GPU older than compute capability 8.9, a GEMM
        dimension that is not a multiple of 16, float32 or float64 operands outside
        ``torch.autocast``) run unquantised, logged once at INFO. ``autotune`` applies to the
        float8 GEMMs as to the others. Under ``torch.autocast`` the weight is cast to float8
        from its own dtype (a float32 master weight directly, not autocast's bfloat16 copy),
        and that cast is reused until the weight changes (an optimizer step, a load).
    fp8_state : Float8State or None
        The scaling state (``kind="linear"``, made for the same recipe, on x's device), passed on
        every call: its amax history and scales are updated in place. May be None for dynamic
        scaling only. Layers keep their own (:class:`FusedLinear` ``fp8=``).

    Returns
    -------
    torch.Tensor
        Shape ``(..., out_features)``, x's dtype (the autocast dtype under ``torch.autocast``).

    Raises
    ------
    OperandError
        Shapes that do not fit, or operands of different dtypes or devices (message starts with
        the argument's name).
    UnsupportedOperandError
        Operands that are not tensors, or dtypes other than float16, bfloat16, float32, float64.
    OptionsError
        An unknown ``activation``, an ``autotune`` other than None, True or False, an ``fp8``
        that is no :class:`Float8Recipe`, or an ``fp8_state`` that does not fit it.

    Notes
    -----
    CUDA float16, bfloat16 and float32 tensors run on cuBLASLt: the forward GEMM fuses the bias
    and the activation (keeping the pre-activation for GELU when gradients are needed), the
    backward computes the weight gradient with the bias gradient fused (BGRADA; for gradients of
    2^24 elements or more, one column-sum pass over the gradient, faster on Hopper) and the input
    gradient, after one elementwise kernel for the activation's derivative (which
    :func:`fused_mlp` fuses too). Everything else (CPU, float64, a problem cuBLASLt refuses) runs
    the same computation as torch ops, logged at DEBUG on the ``nvmathx`` logger.

    As for ``torch.nn.functional.linear``: a backward pass with ``create_graph=True``
    differentiates the torch composition (recomputed from the saved inputs) instead of running the
    fused GEMMs, so gradients of gradients are torch's (under ``torch.compile`` with AOTAutograd,
    torch refuses them with a ``RuntimeError`` naming double backward); empty problems (``x``
    with no rows, ``in_features`` or ``out_features`` of 0) return torch's results without a
    cuBLASLt call; meta tensors give a meta result of the right shape.

    Examples
    --------
    >>> import torch
    >>> from nvmathx.torch import fused_linear
    >>> x, w, b = torch.ones(2, 3), torch.ones(4, 3), torch.arange(4.0) - 4
    >>> fused_linear(x, w, b, activation="relu")
    tensor([[0., 0., 1., 2.],
            [0., 0., 1., 2.]])
    """
    op_activation = _activation(activation, allow_none=True)
    check_autotune(autotune)
    if not (isinstance(x, torch.Tensor) and isinstance(weight, torch.Tensor) and _all_tensors(bias)):
        _check_tensor(x, "x")
        _check_tensor(weight, "weight")
        _check_tensor(bias, "bias", optional=True)
    master_weight = weight  # float8 casts it as it is: autocast's copy is a new tensor every call
    x, weight, bias = _autocast(x, weight, bias)
    _check_input(x)
    if not _weights_fit(x, (weight, bias)):
        _check_weight(weight, bias, x, ("weight", "bias"))
    _check_features(x, weight, "weight")
    x2 = _as_rows(x)
    direct = eager(x2)
    if fp8 is not None or fp8_state is not None:
        y = _float8(fp8, fp8_state, "linear", x2, (weight,), lambda state, rows: float8.linear(
            rows, master_weight, bias, op_activation, state, _grad_needed(x2, weight, bias), direct, autotune))
        if y is not None:
            return _as_input_shape(y, x)
    if op_activation == "gelu" and _grad_needed(x2, weight, bias):
        if direct:
            y = EagerLinearAux.apply(x2, weight, bias, op_activation, autotune)[0]
        else:
            y = torch.ops.nvmathx.linear_aux.default(x2, weight, bias, op_activation, autotune)[0]
    elif direct:
        y = EagerLinear.apply(x2, weight, bias, op_activation, autotune)
    else:
        y = torch.ops.nvmathx.linear.default(x2, weight, bias, op_activation, autotune)
    return _as_input_shape(y, x)


def fused_mlp(x: torch.Tensor, w1: torch.Tensor, b1: torch.Tensor | None, w2: torch.Tensor,
              b2: torch.Tensor | None, activation: str = "gelu", *, autotune: bool | None = None,
              fp8: Float8Recipe | None = None, fp8_state: Float8State | None = None) -> torch.Tensor:
    """``act(x @ w1.T + b1) @ w2.T + b2``, the transformer feed-forward block, forward and backward
    on cuBLASLt with every elementwise step fused into a GEMM.

    Parameters
    ----------
    x : torch.Tensor
        Input of shape ``(..., d_model)``, any strides.
    w1, b1 : torch.Tensor, torch.Tensor or None
        First layer, ``(hidden, d_model)`` and ``(hidden,)`` (``nn.Linear`` layout).
    w2, b2 : torch.Tensor, torch.Tensor or None
        Second layer, ``(d_out, hidden)`` and ``(d_out,)``.
    activation : "gelu" or "relu"
        Between the layers; "gelu" is the tanh approximation.
    autotune : None, True or False
        As for :func:`fused_linear`: this call's six GEMMs autotune, or not; None (default)
        follows :func:`set_autotune`.
    fp8, fp8_state : Float8Recipe or None, Float8State or None
        As for :func:`fused_linear`, with a state of ``kind="mlp"``. The hidden activation is
        cast to float8 in the kernel that applies the activation to the first GEMM's output,
        and the gradient through it in the kernel that casts it and sums the bias gradient.

    Returns
    -------
    torch.Tensor
        Shape ``(..., d_out)``.

    Raises
    ------
    OperandError, UnsupportedOperandError, OptionsError
        As for :func:`fused_linear`, naming ``x``, ``w1``, ``b1``, ``w2`` or ``b2``.

    Notes
    -----
    When gradients are needed, one op runs two GEMMs forward (GELU_AUX_BIAS or RELU_AUX_BIAS,
    keeping the pre-activation or a ReLU bitmask, then BIAS) and saves ``x``, the hidden
    activation and that auxiliary output (what torch saves for the same block, or less). Its
    backward is four GEMMs: ``grad @ w2`` with the activation's derivative fused (DGELU /
    DRELU), ``grad.T @ h`` and ``dz.T @ x`` with the bias gradients fused (BGRADA, or from one
    column-sum pass for gradients of 2^24 elements or more), and plain ``dz @ w1``. Without
    gradients it is two GEMMs that keep nothing. CPU tensors, float64 and problems cuBLASLt refuses run as torch ops.

    Double backward, empty problems (no tokens, ``d_model`` or ``hidden`` of 0) and meta tensors
    behave as for two ``torch.nn.functional.linear`` calls, as described for :func:`fused_linear`.

    Examples
    --------
    >>> import torch
    >>> from nvmathx.torch import fused_mlp
    >>> x = torch.ones(2, 3)
    >>> w1, b1, w2, b2 = torch.ones(4, 3), torch.tensor([-4.0, -3, -2, 0]), torch.ones(1, 4), torch.zeros(1)
    >>> fused_mlp(x, w1, b1, w2, b2, activation="relu")
    tensor([[4.],
            [4.]])
    """
    op_activation = _activation(activation, allow_none=False)
    check_autotune(autotune)
    if not (isinstance(x, torch.Tensor) and isinstance(w1, torch.Tensor) and isinstance(w2, torch.Tensor)
            and _all_tensors(b1, b2)):
        for name, t, optional in (("x", x, False), ("w1", w1, False), ("b1", b1, True), ("w2", w2, False),
                                  ("b2", b2, True)):
            _check_tensor(t, name, optional)
    master_w1, master_w2 = w1, w2  # as in fused_linear
    x, w1, b1, w2, b2 = _autocast(x, w1, b1, w2, b2)
    _check_input(x)
    if not _weights_fit(x, (w1, b1), (w2, b2)):
        _check_weight(w1, b1, x, ("w1", "b1"))
        _check_weight(w2, b2, x, ("w2", "b2"))
    _check_features(x, w1, "w1")
    if w2.shape[1] != w1.shape[0]:
        raise OperandError("w2",
                           f"expected {w1.shape[0]} columns, the hidden features of w1 (got shape {tuple(w2.shape)})")
    x2 = _as_rows(x)
    direct = eager(x2)
    if fp8 is not None or fp8_state is not None:
        out = _float8(fp8, fp8_state, "mlp", x2, (w1, w2), lambda state, rows: float8.mlp(
            rows, master_w1, b1, master_w2, b2, op_activation, state, _grad_needed(x2, w1, b1, w2, b2), direct,
            autotune))
        if out is not None:
            return _as_input_shape(out, x)
    if _grad_needed(x2, w1, b1, w2, b2):
        mlp = EagerMLP.apply if direct else torch.ops.nvmathx.mlp.default
        out = mlp(x2, w1, b1, w2, b2, op_activation, autotune)[0]
    else:
        linear = EagerLinear.apply if direct else torch.ops.nvmathx.linear.default
        out = linear(linear(x2, w1, b1, op_activation, autotune), w2, b2, "none", autotune)
    return _as_input_shape(out, x)
