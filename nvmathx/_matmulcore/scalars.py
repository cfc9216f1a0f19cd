"""alpha and beta: the scalars of ``alpha * a @ b + beta * c``, checked alike by every matmul."""

from __future__ import annotations

import numbers

import numpy as np

from .._core.errors import OptionsError

__all__ = ["check_scalar", "check_beta", "check_scalars"]


def check_scalar(value, argument: str, complex_ok: bool):
    """alpha / beta: a real (or, for complex operands, complex) Python or numpy number, or a numpy
    0-d array of one (returned as its numpy scalar)."""
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iufc":
        value = value[()]
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Number):
        raise OptionsError(argument, f"expected a number (got {type(value).__name__})")
    if isinstance(value, numbers.Complex) and not isinstance(value, numbers.Real) and not complex_ok:
        raise OptionsError(argument, f"a complex value needs complex operands (got {value!r})")
    return value


def check_beta(beta, has_c: bool) -> None:
    """beta scales c: a nonzero beta needs c."""
    if beta != 0 and not has_c:
        raise OptionsError("beta", f"beta={beta!r} needs c")


def check_scalars(alpha, beta, *, complex_ok: bool, has_c: bool) -> tuple:
    """(alpha, beta) checked: numbers (complex ones for complex operands), and beta only with c.
    A 0-d array comes back as its value, read now."""
    alpha = check_scalar(alpha, "alpha", complex_ok)
    beta = check_scalar(beta, "beta", complex_ok)
    check_beta(beta, has_c)
    return alpha, beta
