"""The scaling state of a float8 layer: :class:`Float8State` (amax history, scales), and the one
place that updates it before a pass."""

from __future__ import annotations

import weakref

import torch
from torch import nn

from ..._core.errors import OptionsError
from .recipe import Float8Recipe

__all__ = ["Float8State", "LINEAR_SLOTS", "MLP_SLOTS", "SCALE_STRIDE", "is_padded", "padded_scales", "register",
           "slot_mask", "state_by_id"]

# The tensors whose scales a layer keeps, in slot order, and which of them are gradients.
LINEAR_SLOTS = ("input", "weight", "grad_output")
MLP_SLOTS = ("input", "fc1.weight", "hidden", "fc2.weight", "grad_output", "grad_hidden")
_GRADIENTS = ("grad_output", "grad_hidden")
_KINDS = {"linear": LINEAR_SLOTS, "mlp": MLP_SLOTS}
_STATES: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # id -> state, for the custom ops


def register(state: Float8State) -> None:
    """Make ``state`` findable by :func:`state_by_id`."""
    _STATES[id(state)] = state


def state_by_id(state_id: int) -> Float8State:
    """The live state a custom op names by ``id`` (ops take no Python objects)."""
    return _STATES[state_id]


class Float8State(nn.Module):
    """The float8 scaling state of one :class:`FusedLinear` (``kind="linear"``) or
    :class:`FusedMLP` (``kind="mlp"``): per tensor slot (:attr:`slots`) its amax history and its
    scale, as buffers, so they move with the module and are saved in its ``state_dict``.

    Buffers
    -------
    amax_history : (recipe.history_rows, len(slots)) float32
        Row 0 accumulates the amax of the current step; older steps follow. Before each pass its
        slots' scales are recomputed from the history, which then shifts down one row (delayed
        scaling; dynamic scaling only clears row 0).
    scale, scale_inv : (len(slots),) float32
        The scales the last casts used (``fp8 = x * scale``) and their inverses, which the GEMMs
        dequantise with. Strided views, each element 16 bytes after the previous one: cuBLASLt
        refuses a float8 scale that is not 16-byte aligned.

    The layers create their state themselves (as ``fp8_state``); create one for the functional
    forms :func:`fused_linear` / :func:`fused_mlp` and pass it with the same recipe on every call.
    The float8 copies of the weights are cached here, outside the ``state_dict``, and remade when
    a weight changes (an optimizer step, a load) or the state moves (``.to()``); under CUDA graph
    capture and in compiled graphs they are remade on every call.

    Examples
    --------
    >>> from nvmathx.torch import Float8Recipe, Float8State
    >>> state = Float8State(Float8Recipe(amax_history_len=4), kind="mlp")
    >>> state.slots[:3], tuple(state.amax_history.shape)
    (('input', 'fc1.weight', 'hidden'), (4, 6))
    """

    amax_history: torch.Tensor
    scale: torch.Tensor
    scale_inv: torch.Tensor

    def __init__(self, recipe: Float8Recipe, kind: str = "linear",
                 device: torch.device | str | int | None = None) -> None:
        super().__init__()
        if not isinstance(recipe, Float8Recipe):
            raise OptionsError("recipe", f"expected a Float8Recipe (got {type(recipe).__name__})")
        if not isinstance(kind, str) or kind not in _KINDS:
            raise OptionsError("kind", f"expected one of {list(_KINDS)} (got {kind!r})")
        self.recipe = recipe
        self.kind = kind
        self.slots = _KINDS[kind]
        count = len(self.slots)
        self.register_buffer("amax_history", torch.zeros((recipe.history_rows, count), dtype=torch.float32,
                                                         device=device))
        self.register_buffer("scale", padded_scales(torch.ones(count, dtype=torch.float32, device=device)))
        self.register_buffer("scale_inv", padded_scales(torch.ones(count, dtype=torch.float32, device=device)))
        self.e5m2_mask = sum(1 << i for i, name in enumerate(self.slots)
                             if name in _GRADIENTS and recipe.backward_dtype_name == "float8_e5m2")
        self.measured: set = set()  # slots with an amax recorded (a pass with one that has none scales dynamically)
        self.weight_cache: dict = {}  # slot -> (key, weak reference to the weight, its Cast)
        # (scale_inv, its padded storage as one vector): what a pass snapshots
        self.flat_scale_inv: tuple[torch.Tensor, torch.Tensor] | None = None
        register(self)

    def reset_parameters(self) -> None:
        """Start afresh: no amax recorded (the next pass scales dynamically), unit scales, no cached
        float8 weights. The layers' ``reset_parameters`` call it, so a layer made on the meta device
        and materialised with ``to_empty()`` (whose buffers hold whatever the memory held) is
        initialised as ``nn.Linear``'s weights are."""
        with torch.no_grad():
            self.amax_history.zero_()
            self.scale.fill_(1.0)
            self.scale_inv.fill_(1.0)
        self.measured.clear()
        self.weight_cache.clear()

    def slot(self, name: str) -> int:
        """The index of slot ``name``."""
        return self.slots.index(name)

    def dtype_of(self, slot: int) -> torch.dtype:
        """The float8 dtype slot ``slot`` is cast to."""
        return torch.float8_e5m2 if (self.e5m2_mask >> slot) & 1 else torch.float8_e4m3fn

    def __setstate__(self, state) -> None:  # copy.deepcopy and unpickling: a new state to register
        super().__setstate__(state)
        self.weight_cache = {}
        self.flat_scale_inv = None
        register(self)

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)
        history = state_dict.get(prefix + "amax_history")
        if history is not None and tuple(history.shape) == tuple(self.amax_history.shape):
            # Slots with a loaded amax scale from it on the next pass; the others start dynamically
            # (one read of the loaded tensor: loads are not on a hot path).
            seen = (history != 0).any(0).tolist()
            self.measured = {slot for slot, any_amax in enumerate(seen) if any_amax}
        self.weight_cache.clear()

    def _apply(self, fn, *args, **kwargs):
        """``.to()``, ``.cuda()``, ``.bfloat16()``, ...: the buffers move but stay float32 (the kernels
        write float32), and cached float8 weights are stale."""
        self.weight_cache.clear()
        self.flat_scale_inv = None
        originals = {name: getattr(self, name) for name in ("amax_history", "scale", "scale_inv")}
        result = super()._apply(fn, *args, **kwargs)
        for name, original in originals.items():
            buffer = getattr(self, name)
            if buffer.dtype != torch.float32:
                # From the float32 values, not fn's rounded copy: .half() would turn amaxes and
                # scales above 65504 into inf and flush small inverse scales.
                buffer = original.to(device=buffer.device)
            if name != "amax_history" and not is_padded(buffer):  # a move packs the strided views
                buffer = padded_scales(buffer)
            setattr(self, name, buffer)
        return result

    def extra_repr(self) -> str:
        return f"kind={self.kind!r}, recipe={self.recipe!r}"


SCALE_STRIDE = 4  # floats from one slot's scale to the next: 16 bytes, the alignment cuBLASLt reads scales at


def padded_scales(values: torch.Tensor) -> torch.Tensor:
    """``values`` (one float32 per slot) as a view whose elements lie 16 bytes apart, so that each
    slot's one-element view is a 16-byte aligned pointer for the float8 GEMMs."""
    storage = torch.zeros((values.shape[0], SCALE_STRIDE), dtype=torch.float32, device=values.device)
    storage[:, 0] = values
    return storage[:, 0]


def is_padded(scales: torch.Tensor) -> bool:
    return scales.stride(0) == SCALE_STRIDE and scales.data_ptr() % 16 == 0


def slot_mask(slots) -> int:
    """The bit mask of slot indices ``slots`` (fewer than 63 slots: a kernel's 64-bit argument as a Python int)."""
    return sum(1 << slot for slot in slots)
