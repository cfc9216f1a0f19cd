"""The nvmathx exception hierarchy, as ``_core`` and the areas import it (defined in
:mod:`nvmathx._errors`, which the C bindings import without importing ``_core``)."""

from __future__ import annotations

from .._errors import *  # noqa: F403  (every name of the hierarchy)
from .._errors import __all__ as __all__
