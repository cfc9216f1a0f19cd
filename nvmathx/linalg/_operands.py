"""Operands of one matmul: viewing them, checking they live together, staging host arrays for CUDA
execution, and host numpy views for CPU execution."""

from __future__ import annotations

import numbers
from typing import overload

import numpy as np

from .._core.errors import NvmathxError, OperandError, OptionsError
from .._core.tensor import Operand, resolve_operand, stage_to_device, wrap_operand
from ._layout import matrix_layout
from ._problem import OperandInfo

__all__ = ["info", "wrap_all", "wrap_factor", "copied", "check_together", "stage", "array_like", "array_likes",
           "input_argument", "inputs_as_arrays", "has_array_likes"]

# What numpy.matmul converts with numpy.asarray: nested sequences and scalars (Python's or numpy's).
_ARRAY_LIKES = (list, tuple, numbers.Number, np.generic)


def array_like(value, argument: str):
    """``value`` as a numpy array when it is a list, a tuple or a Python or numpy scalar (as
    numpy.matmul converts them), else as it is."""
    if not isinstance(value, _ARRAY_LIKES):
        return value
    try:
        return np.asarray(value)
    except (ValueError, TypeError) as error:  # ragged nesting; arrays numpy will not convert implicitly
        raise OperandError(argument, f"could not be converted to an array with numpy.asarray ({error})") from None


def array_likes(a, b, c) -> tuple:
    """``a``, ``b`` and ``c`` through :func:`array_like`."""
    return array_like(a, "a"), array_like(b, "b"), array_like(c, "c") if c is not None else None


def input_argument(name: str) -> str:
    """How errors (and per-argument records) name epilog input ``name``: ``"epilog_inputs['bias']"``."""
    return f"epilog_inputs[{name!r}]"


def inputs_as_arrays(epilog_inputs):
    """The epilog inputs with array-likes converted (anything but a dict as it is, for the check)."""
    if not isinstance(epilog_inputs, dict):
        return epilog_inputs
    return {name: array_like(value, input_argument(name)) for name, value in epilog_inputs.items()}


def has_array_likes(a, b, c, epilog_inputs) -> bool:
    """Whether any operand or epilog input is one that :func:`array_like` converts."""
    values = [a, b, c] + (list(epilog_inputs.values()) if isinstance(epilog_inputs, dict) else [])
    return any(isinstance(value, _ARRAY_LIKES) for value in values)


@overload
def info(operand: Operand) -> OperandInfo: ...
@overload
def info(operand: None) -> None: ...
@overload
def info(operand: Operand | None) -> OperandInfo | None: ...
def info(operand: Operand | None) -> OperandInfo | None:
    if operand is None:
        return None
    return OperandInfo(tuple(operand.shape), tuple(operand.strides), operand.dtype.name, operand.conj)


def conj_is_free(operand: Operand, argument: str) -> bool:
    """Whether cuBLASLt can read a lazily conjugated ``a`` or ``b`` as it is: its CUBLAS_OP_C
    conjugates only a matrix it transposes, and under ``D^T = B^T A^T`` the operands it transposes
    are the column-major ones (a conjugate transpose such as ``x.mH`` of a row-major ``x``)."""
    try:
        layout = matrix_layout(operand.shape, operand.strides, tuple(operand.shape[:-2]), argument, argument)
    except NvmathxError:  # the layout is for planning to reject, on the materialised copy
        return False
    return layout.order == "col"


def wrap_factor(x, argument: str) -> Operand:
    """View ``a`` or ``b``: a lazily conjugated device operand stays lazy where cuBLASLt conjugates it
    for free (see :func:`conj_is_free`), every other lazy view is materialised once."""
    operand = wrap_operand(x, argument, keep_conj=True)
    if operand.conj and not conj_is_free(operand, argument):
        operand = resolve_operand(operand, argument)
    return operand


def wrap_all(a, b, c, epilog_inputs) -> tuple[Operand, Operand, Operand | None, dict]:
    """View every operand (typed errors name ``a``, ``b``, ``c`` or ``epilog_inputs[...]``)."""
    if epilog_inputs is not None and not isinstance(epilog_inputs, dict):
        raise OptionsError("epilog_inputs", f"expected a dict of arrays or None (got {type(epilog_inputs).__name__})")
    a_op = wrap_factor(a, "a")
    b_op = wrap_factor(b, "b")
    c_op = wrap_operand(c, "c") if c is not None else None
    inputs = {name: wrap_operand(value, input_argument(name)) for name, value in (epilog_inputs or {}).items()}
    check_together(a_op, [("b", b_op), ("c", c_op)] + [(f"epilog_inputs[{k!r}]", v) for k, v in inputs.items()])
    return a_op, b_op, c_op, inputs


def copied(*pairs) -> bool:
    """Whether any ``(Operand, array given)`` pair views a copy of the array: a lazy view (torch's
    conjugate or negative bit) materialised, on the library's current stream."""
    return any(operand is not None and operand.obj is not value for operand, value in pairs)


def check_together(a: Operand, others) -> None:
    """Every operand must come from a's array library and live on a's device."""
    for name, operand in others:
        if operand is None:
            continue
        if operand.package != a.package:
            raise OperandError(name, f"is a {operand.package} array but a is a {a.package} array; use one library")
        if operand.device_id != a.device_id:
            where = lambda d: "host memory" if d < 0 else f"GPU {d}"  # noqa: E731
            raise OperandError(name, f"lives in {where(operand.device_id)} but a lives in {where(a.device_id)}")


@overload
def stage(operand: Operand, device_id: int, stream, memory_resource) -> Operand: ...
@overload
def stage(operand: Operand | None, device_id: int, stream, memory_resource) -> Operand | None: ...
def stage(operand: Operand | None, device_id: int, stream, memory_resource) -> Operand | None:
    """A device copy of a host operand (device operands pass through)."""
    if operand is None or operand.device_id >= 0:
        return operand
    return stage_to_device(operand, device_id, stream, memory_resource)
