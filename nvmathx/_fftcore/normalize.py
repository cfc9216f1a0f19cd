"""The ``norm`` and ``direction`` arguments: which scale a transform's result gets, which way it runs
(pure)."""

from __future__ import annotations

import math
from typing import Literal, Optional

from .._core.errors import OptionsError
from .._core.options import as_index

__all__ = ["Norm", "NORMS", "DIRECTIONS", "check_norm", "scale_factor", "swap_direction", "normalize_direction"]

NORMS = ("backward", "ortho", "forward")
DIRECTIONS = {"forward": -1, "inverse": +1, -1: -1, +1: +1}

Norm = Optional[Literal["backward", "ortho", "forward"]]
"""A ``norm=`` argument (None is "backward")."""


def check_norm(norm) -> str:
    """``"backward"`` for None, else ``norm`` when it is one of :data:`NORMS`."""
    if norm is None:
        return "backward"
    if norm not in NORMS:
        raise OptionsError("norm", f'expected None, "backward", "ortho" or "forward" (got {norm!r})')
    return norm


def scale_factor(norm: str, direction: int, lengths) -> float:
    """The factor that multiplies an unnormalised transform of ``lengths`` points per axis.

    ``"backward"`` scales the inverse by 1/N, ``"forward"`` the forward transform by 1/N, and
    ``"ortho"`` both by 1/sqrt(N) (N is the product of the logical lengths).
    """
    if norm == "ortho":
        return 1.0 / math.sqrt(math.prod(lengths))
    if (norm == "backward") == (direction > 0):
        return 1.0 / math.prod(lengths)
    return 1.0


def swap_direction(norm: str) -> str:
    """The norm that scales the opposite direction alike (used by hfft/ihfft, as in scipy)."""
    return {"backward": "forward", "forward": "backward", "ortho": "ortho"}[norm]


def normalize_direction(direction, fft_type: str, argument: str = "direction") -> int:
    """-1 (forward) or +1 (inverse); None picks the transform's natural direction. Integers of any
    kind (numpy's, 0-d arrays) count; bools and floats do not."""
    if direction is None:
        return +1 if fft_type == "C2R" else -1
    key = direction.lower() if isinstance(direction, str) else as_index(direction)
    if key not in DIRECTIONS:
        raise OptionsError(argument, f"expected 'forward', 'inverse', -1 or +1 (got {direction!r})")
    value = DIRECTIONS[key]
    if fft_type == "R2C" and value != -1 or fft_type == "C2R" and value != +1:
        raise OptionsError(
            argument, f"a {fft_type} transform runs only {'forward' if fft_type == 'R2C' else 'inverse'}"
        )
    return value
