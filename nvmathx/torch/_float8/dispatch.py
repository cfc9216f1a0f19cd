"""Whether a call with a float8 recipe runs in float8, the state it runs with, and its op call.

Float8 needs CUDA tensors of float16 or bfloat16 (the dtype the GEMMs write and the bias is in;
float32 layers get there under ``torch.autocast``) on a GPU of compute capability 8.9 or
newer (Ada, Hopper and later) and every GEMM dimension (tokens and features) a non-zero multiple
of 16; anything else runs the layer's unquantised path, as without a recipe, leaving the scaling
state untouched, and the reason is logged once at INFO on the ``nvmathx`` logger. A layer
(``FusedLinear``, ``FusedMLP``) whose recipe can never run on its input's device (CPU tensors, a GPU
older than 8.9) also warns once, with a ``UserWarning``: asking for float8 there is a mistake to see.
"""

from __future__ import annotations

import logging
import warnings

import torch

from ..._core.errors import NvmathxError, OperandError, OptionsError
from .._dispatch import _is_refusal
from .ops import EagerFloat8Linear, EagerFloat8MLP
from .recipe import check_recipe
from .state import Float8State

__all__ = ["fallback_reason", "linear", "log_fallback", "mlp", "refused", "resolve_state", "row_major",
           "warn_unquantised_layer"]

_DTYPES = (torch.float16, torch.bfloat16)
_logger = logging.getLogger("nvmathx")
_logged: set = set()
refused: set = set()  # signatures of the float8 problems cuBLASLt refused
_capabilities: dict = {}


@torch.compiler.assume_constant_result  # a fact of the machine: traced as a constant, no graph break
def _capability(device: torch.device) -> tuple:
    index = device.index if device.index is not None else torch.cuda.current_device()
    capability = _capabilities.get(index)
    if capability is None:
        capability = _capabilities[index] = torch.cuda.get_device_capability(index)
    return capability


def device_reason(x: torch.Tensor) -> str | None:
    """Why ``x``'s device runs no float8 GEMMs, or None."""
    if not x.is_cuda:
        return f"{x.device.type} tensors"
    capability = _capability(x.device)
    if capability < (8, 9):
        return f"compute capability {capability[0]}.{capability[1]} (float8 needs 8.9 or newer)"
    return None


def fallback_reason(x: torch.Tensor, *weights: torch.Tensor) -> tuple[str, str] | None:
    """Why a float8 call on ``x`` (tokens x features) and ``weights`` runs unquantised, as
    ``(topic, message)`` (:func:`log_fallback`), or None."""
    if x.dtype not in _DTYPES:
        return str(x.dtype), f"dtype {x.dtype} (float8 layers run in float16 or bfloat16, e.g. under torch.autocast)"
    dimensions = (x.shape[0], *(d for w in weights for d in w.shape))
    if any(d == 0 or d % 16 for d in dimensions):
        return "dimensions", f"GEMM dimensions {dimensions} (float8 GEMMs need non-zero multiples of 16)"
    reason = device_reason(x)
    return (reason, reason) if reason is not None else None


def warn_unquantised_layer(layer: torch.nn.Module, x: torch.Tensor) -> None:
    """Warn once per ``layer`` (a ``UserWarning``) when its float8 recipe cannot run on ``x``'s device."""
    if layer.__dict__.get("_fp8_device_warned") or torch.compiler.is_compiling():
        return
    reason = device_reason(x)
    if reason is not None:
        layer.__dict__["_fp8_device_warned"] = True
        warnings.warn(f"{type(layer).__name__}(fp8=...): float8 GEMMs cannot run on {reason}; this layer runs "
                      "unquantised (in its own dtype) there", UserWarning, stacklevel=3)


def log_fallback(topic: object, message: str) -> None:
    """Log ``message`` the first time a call falls back for ``topic``: once for every shape float8
    cannot take (sequence lengths vary from call to call), once per dtype, device reason or refused
    problem."""
    if topic not in _logged and not torch.compiler.is_compiling():  # dynamo would break the graph here
        _logged.add(topic)
        _logger.info("nvmathx.torch: float8 recipe not applied for %s; running unquantised", message)


def resolve_state(recipe, state, kind: str, device: torch.device) -> Float8State:
    """The scaling state of a functional call: the user's (checked against the recipe, the layer
    kind and the device), or a fresh one for dynamic scaling, which keeps nothing across steps."""
    recipe = check_recipe(recipe)
    assert recipe is not None
    if state is None:
        if recipe.scaling == "delayed":
            raise OptionsError("fp8_state", f"delayed scaling keeps an amax history across calls: pass "
                                            f"fp8_state=Float8State(recipe, kind={kind!r}) on every call")
        return Float8State(recipe, kind, device=device)
    if not isinstance(state, Float8State):
        raise OptionsError("fp8_state", f"expected a Float8State or None (got {type(state).__name__})")
    if state.kind != kind:
        raise OptionsError("fp8_state", f"made for kind={state.kind!r}; this call needs kind={kind!r}")
    if state.recipe is not recipe and (state.recipe != recipe
                                       or state.recipe.process_group is not recipe.process_group):
        # (process_group is left out of the recipe's equality; the passes reduce over the state's)
        raise OptionsError("fp8_state", f"made for {state.recipe!r}, not for the fp8 recipe given")
    if state.amax_history.device != device:
        raise OperandError("fp8_state", f"lives on {state.amax_history.device} but the input lives on {device}")
    return state


def _state_args(state: Float8State) -> tuple:
    return state.amax_history, state.scale, state.scale_inv, id(state)


def _signature(kind: str, tensors: tuple) -> tuple:
    return (kind, *((tuple(t.shape), t.dtype, t.device) for t in tensors if t is not None))


def _run_forward(kind: str, call, tensors: tuple, direct: bool):
    """``call()``'s output, or None when cuBLASLt refuses the float8 problem (remembered by shape,
    dtype and device, logged once): the caller then runs the unquantised layer. A refusal can only
    be caught in eager mode; compiled graphs raise it."""
    if refused and _signature(kind, tensors) in refused:  # (made only once something was refused)
        return None
    try:
        return call()
    except NvmathxError as error:
        if not direct or not _is_refusal(error):
            raise
        signature = _signature(kind, tensors)
        refused.add(signature)
        log_fallback(signature, f"{kind} {[tuple(t.shape) for t in tensors if t is not None]} {tensors[0].dtype} "
                                f"(cuBLASLt refused it: {type(error).__name__}: {error})")
        return None


def linear(x2, weight, bias, activation: str, state: Float8State, need_grad: bool, direct: bool, autotune):
    """``act(x2 @ weight.T + bias)`` through the float8 op (eager Function or compiled op), or None
    when cuBLASLt refuses the problem."""
    args = (x2, weight.contiguous(), bias, activation, *_state_args(state), need_grad)
    if direct:
        return _run_forward("linear", lambda: EagerFloat8Linear.apply(*args, True, autotune)[0], (x2, weight, bias),
                            direct)
    return torch.ops.nvmathx.float8_linear.default(*args, False, autotune)[0]


def mlp(x2, w1, b1, w2, b2, activation: str, state: Float8State, need_grad: bool, direct: bool, autotune):
    """``act(x2 @ w1.T + b1) @ w2.T + b2`` through the float8 op, or None when cuBLASLt refuses it."""
    args = (x2, w1.contiguous(), b1, w2.contiguous(), b2, activation, *_state_args(state), need_grad)
    if direct:
        return _run_forward("mlp", lambda: EagerFloat8MLP.apply(*args, True, autotune)[0], (x2, w1, b1, w2, b2),
                            direct)
    return torch.ops.nvmathx.float8_mlp.default(*args, False, autotune)[0]


def row_major(x2: torch.Tensor) -> torch.Tensor:
    """The matrix with unit column stride, as the cast kernels read it (a copy only when column-major)."""
    return x2 if x2.stride(1) == 1 else x2.contiguous()
