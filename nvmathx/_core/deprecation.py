"""Old public spellings kept working for a while: each use warns and names the new spelling."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable

__all__ = ["deprecated_names", "warn_deprecated"]


def warn_deprecated(old: str, new: str, stacklevel: int = 3) -> None:
    """Warn (DeprecationWarning) that ``old`` is spelled ``new`` now."""
    warnings.warn(f"{old} is deprecated; use {new}", DeprecationWarning, stacklevel=stacklevel)


def deprecated_names(module_name: str, renamed: dict[str, str]) -> Callable[[str], object]:
    """A module ``__getattr__`` that serves each old name of ``renamed`` (old -> new) as the new
    name's value, with a warning. Old names stay out of ``__all__`` and ``dir()``."""
    module = sys.modules[module_name]

    def __getattr__(name: str) -> object:
        new = renamed.get(name)
        if new is None:
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        warn_deprecated(f"{module_name}.{name}", f"{module_name}.{new}")
        return getattr(module, new)

    return __getattr__
