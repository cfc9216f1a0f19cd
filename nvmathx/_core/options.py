"""Options objects: dataclasses validated in ``__post_init__``, accepted as instance, dict or None.

The rule for every options class of nvmathx (``MatmulOptions``, ``MatmulPlanPreferences``,
``FFTOptions``, ``ExecutionCUDA`` / ``ExecutionCPU``, the distributed ``FFTOptions``,
``MatmulOptions`` and ``ReshapeOptions``):

- a ``@dataclass(frozen=True)``: an object that holds options cannot be changed behind the plans
  made from it; ``dataclasses.replace`` makes a changed copy;
- validated in ``__post_init__``, so every way of making one (the constructor, a dict through
  :func:`check_or_create_options`, ``dataclasses.replace``) checks it, before any GPU work; a bad
  field raises :class:`~nvmathx.OptionsError` naming ``options.<field>``;
- every API that takes one accepts the instance, a dict of its fields or None.

And the rule for the stateful objects that take them (``Matmul``, ``FFT`` and their distributed
forms): what the plans are made for is exposed as read-only properties (``options``, the
operands' shapes and dtypes, the transform's or product's parameters, the plan key where the
function form has one); the working state (operands, handles, workspaces) is not exposed.
"""

from __future__ import annotations

import dataclasses
import operator
from typing import Any, TypeVar

from .errors import OptionsError

_Options = TypeVar("_Options", bound=Any)

__all__ = ["check_or_create_options", "check_choice", "check_positive_int", "as_index"]


def check_or_create_options(cls: type[_Options], value: object, argument: str) -> _Options:
    """Return an instance of the dataclass ``cls`` from an instance, a dict of its fields, or None.

    Raises
    ------
    OptionsError
        For another type or a dict with unknown keys (the message names ``argument``).
    """
    if value is None:
        return cls()
    if isinstance(value, cls):
        return value
    if isinstance(value, dict):
        names = {field.name for field in dataclasses.fields(cls)}
        unknown = sorted(set(value) - names)
        if unknown:
            raise OptionsError(argument, f"unknown {cls.__name__} field(s) {unknown}; valid: {sorted(names)}")
        return cls(**value)
    raise OptionsError(argument, f"expected {cls.__name__}, a dict or None (got {type(value).__name__})")


def check_choice(value, choices, argument: str):
    """``value`` if it is one of ``choices``, else an OptionsError listing them."""
    if value not in choices:
        raise OptionsError(argument, f"expected one of {list(choices)} (got {value!r})")
    return value


def as_index(value) -> int | None:
    """``value`` as a plain int when ``operator.index`` takes it (Python and numpy integers, 0-d
    integer arrays), else None; bools, Python's or numpy's, are no integers here."""
    if isinstance(value, bool) or type(value).__name__ in ("bool", "bool_"):  # numpy's without importing it
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None


def check_positive_int(value, argument: str, *, allow_none: bool = False, allow_zero: bool = False):
    """``value`` as a plain int >= 1 (>= 0 with ``allow_zero``; None passes with ``allow_none``).

    Every integer :func:`as_index` takes is accepted: numpy integer scalars and 0-d integer arrays
    as well as Python ints.

    Raises
    ------
    OptionsError
        For anything else (the message names ``argument``).
    """
    if value is None and allow_none:
        return None
    number = as_index(value)
    if number is None or number < (0 if allow_zero else 1):
        bound = ">= 0" if allow_zero else ">= 1"
        raise OptionsError(argument, f"expected an int {bound} (got {value!r})")
    return number
