"""The float8 training recipe: :class:`Float8Recipe`."""

from __future__ import annotations

import dataclasses
from typing import Any

from ..._core.errors import OptionsError

__all__ = ["Float8Recipe"]

_SCALINGS = ("delayed", "dynamic")
_FORMATS = ("hybrid", "e4m3")
MAX_MARGIN = 16  # see Float8Recipe.margin
_AMAX_ALGORITHMS = ("max", "most_recent")


@dataclasses.dataclass(frozen=True)
class Float8Recipe:
    """How :class:`FusedLinear` and :class:`FusedMLP` run their GEMMs in float8 (Hopper and Ada).

    Each tensor that enters a GEMM (the input, each weight, the hidden activation, the gradients)
    is cast to float8 with a per-tensor scale in one kernel that also writes its transposed copy
    (Hopper's float8 GEMMs take both operands K-major) and records its amax. The GEMMs
    dequantise with the inverse scales and write the layer's dtype (bfloat16 or float16), bias
    and ReLU / GELU fused as in the unquantised layers.

    Parameters
    ----------
    scaling : "delayed" or "dynamic"
        "delayed" (default; TransformerEngine's delayed scaling): a tensor is cast with the scale
        computed before the step from its amax history, so the cast is the only pass over it and
        records this step's amax. "dynamic" (per-tensor current scaling): the scale comes from
        this step's amax, at the cost of one more read of each tensor. The first step of a fresh
        scaling state (no history yet) scales dynamically in both, so it is not quantised with
        the initial scale of 1.
    format : "hybrid" or "e4m3"
        "hybrid" (default): e4m3 for the forward GEMMs' operands, e5m2 for gradients; "e4m3":
        e4m3 everywhere.
    amax_history_len : int
        Steps of amax history kept per tensor (delayed scaling; default 1024, as
        TransformerEngine's ``DelayedScaling``).
    amax_compute_algo : "max" or "most_recent"
        The amax a delayed scale is computed from: the largest in the history, or the latest.
    margin : int
        The scale is ``fp8_max / amax / 2**margin`` (default 0; at most 16: a larger margin leaves
        most of float8's range unused, and the product of two operands' inverse scales, which
        the GEMM multiplies by, overflows float32 for large amaxes).
    process_group : torch.distributed.ProcessGroup or None
        When given, each amax is max-reduced over it before a scale is computed from it (the
        data-parallel group, as TransformerEngine does), so every rank uses the same scales. Under
        ``DistributedDataParallel`` pass ``broadcast_buffers=False``: DDP's broadcast of rank 0's
        buffers before each forward would replace the other ranks' amaxes before they are reduced.
    fast_accumulation : bool
        Forward GEMMs accumulate in cuBLASLt's fast float8 mode (default True, as
        TransformerEngine); the gradient GEMMs never do.

    Notes
    -----
    A zero amax (an empty or all-zero tensor) or a non-finite one never gives an infinite or NaN
    scale: delayed scaling keeps the previous scale, dynamic scaling uses 1. A scale whose
    quotient overflows is the largest float32.

    Examples
    --------
    >>> from nvmathx.torch import Float8Recipe
    >>> Float8Recipe(scaling="dynamic").backward_dtype_name
    'float8_e5m2'
    >>> Float8Recipe(format="e4m3", amax_history_len=16).history_rows
    16
    """

    scaling: str = "delayed"
    format: str = "hybrid"
    amax_history_len: int = 1024
    amax_compute_algo: str = "max"
    margin: int = 0
    process_group: Any = dataclasses.field(default=None, compare=False)
    fast_accumulation: bool = True

    def __post_init__(self) -> None:
        for name, allowed in (("scaling", _SCALINGS), ("format", _FORMATS), ("amax_compute_algo", _AMAX_ALGORITHMS)):
            value = getattr(self, name)
            if not isinstance(value, str) or value not in allowed:
                raise OptionsError(name, f"expected one of {list(allowed)} (got {value!r})")
        for name, low, high in (("amax_history_len", 1, None), ("margin", 0, MAX_MARGIN)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low or (high and value > high):
                bounds = f">= {low}" if high is None else f"in [{low}, {high}]"
                raise OptionsError(name, f"expected an int {bounds} (got {value!r})")
        if not isinstance(self.fast_accumulation, bool):
            raise OptionsError("fast_accumulation", f"expected a bool (got {type(self.fast_accumulation).__name__})")
        if self.process_group is not None and not hasattr(self.process_group, "size"):
            raise OptionsError("process_group", f"expected a torch.distributed ProcessGroup or None "
                                                f"(got {type(self.process_group).__name__})")

    def __deepcopy__(self, memo) -> Float8Recipe:
        # Immutable: a copy of a layer shares its recipe (a ProcessGroup cannot be deep-copied).
        return self

    @property
    def forward_dtype_name(self) -> str:
        """The float8 format of the forward GEMMs' operands (torch's dtype name)."""
        return "float8_e4m3fn"

    @property
    def backward_dtype_name(self) -> str:
        """The float8 format of the gradients."""
        return "float8_e5m2" if self.format == "hybrid" else "float8_e4m3fn"

    @property
    def history_rows(self) -> int:
        """Rows of the amax history a scaling state keeps: the history length, 1 for dynamic scaling."""
        return self.amax_history_len if self.scaling == "delayed" else 1


def check_recipe(recipe) -> Float8Recipe | None:
    """``fp8`` as the layers take it: None or a :class:`Float8Recipe`."""
    if recipe is not None and not isinstance(recipe, Float8Recipe):
        raise OptionsError("fp8", f"expected None or a Float8Recipe (got {type(recipe).__name__})")
    return recipe
