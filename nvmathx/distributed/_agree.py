"""Collective agreement: every rank checks locally, then all proceed or all raise the same error.

A rank that raised while the others went on into a collective call would leave them waiting
forever. So every step that can fail on one rank (argument checks, planning, allocation) runs
inside :func:`agree`: the ranks all-gather their outcomes over the host group, and when any rank
failed every rank raises that rank's error (the lowest failing rank's, so all raise the same one).
"""

from __future__ import annotations

import math
import numbers
import pickle

from .._core.errors import InvalidStateError, OperandError

__all__ = ["agree", "check_same", "same_value"]


def _portable(error: BaseException):
    """``error`` itself when it survives pickling with its message, else an InvalidStateError that
    names its type and message (what every other rank will raise)."""
    try:
        copy = pickle.loads(pickle.dumps(error))
        if str(copy) == str(error) and type(copy) is type(error):
            return error
    except Exception:  # noqa: BLE001  (unpicklable errors are described instead)
        pass
    return InvalidStateError(f"{type(error).__name__}: {error}")


def agree(group, local):
    """Run ``local()`` on this rank and return every rank's result, in rank order.

    When ``local()`` raises on any rank, every rank raises: the failing rank its own exception, the
    others a copy of it (from the lowest failing rank), with a note saying which rank it came from.
    Everything that can raise before a collective call belongs inside ``local``: a rank that raised
    outside it would leave the others waiting in the all-gather. A group of one rank needs no
    all-gather.
    """
    if group.size == 1:
        return [local()]
    try:
        value, failure = local(), None
    except Exception as error:  # noqa: BLE001  (any failure must reach the other ranks)
        value, failure, own = None, _portable(error), error
    outcomes = group.allgather_object((value, failure))
    for rank, (_, item) in enumerate(outcomes):
        if item is None:
            continue
        if rank == group.rank:
            raise own
        if hasattr(item, "add_note"):
            item.add_note(f"(raised on rank {rank} of {group.size})")
        raise item
    return [value for value, _ in outcomes]


def same_value(x, y) -> bool:
    """Whether two ranks' values are the same: ``==``, except that NaNs (also inside complex numbers
    and tuples) equal each other, since every rank given NaN computes the same (NaN) result."""
    if isinstance(x, tuple) and isinstance(y, tuple):
        return len(x) == len(y) and all(same_value(a, b) for a, b in zip(x, y))
    if isinstance(x, numbers.Complex) and isinstance(y, numbers.Complex) and not (
            isinstance(x, numbers.Integral) and isinstance(y, numbers.Integral)):
        x, y = complex(x), complex(y)
        return all(a == b or (math.isnan(a) and math.isnan(b)) for a, b in ((x.real, y.real), (x.imag, y.imag)))
    return x == y


def check_same(values, argument: str, what: str, *, error=OperandError) -> None:
    """Raise ``error`` (OperandError, or OptionsError for arguments that are not operands) naming
    ``argument`` unless every rank's value is the same (:func:`same_value`; ``values`` is the
    all-gathered list, so every rank raises the same error)."""
    first = values[0]
    for rank, value in enumerate(values):
        if not same_value(value, first):
            raise error(argument, f"the {what} differs between ranks: rank 0 has {first}, rank {rank} has "
                                         f"{value}")
