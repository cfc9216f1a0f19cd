"""The ``norm`` argument: which scale a transform's result gets (pure)."""

from __future__ import annotations

import math

from .._core.errors import OptionsError

__all__ = ["NORMS", "check_norm", "scale_factor", "swap_direction"]

NORMS = ("backward", "ortho", "forward")


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
