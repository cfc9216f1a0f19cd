"""Operands of one matmul: viewing them, checking they live together, staging host arrays for CUDA
execution, host numpy views for CPU execution, and result allocators for the hot path."""

from __future__ import annotations

import ctypes

import numpy as np

from .._core.dtypes import numpy_dtype
from .._core.errors import OperandError, OptionsError
from .._core.tensor import Operand, allocate_like, stage_to_device, wrap_operand
from ._problem import OperandInfo

__all__ = ["info", "wrap_all", "check_together", "host_view", "to_package_host", "make_allocator", "stage"]


def info(operand: Operand | None) -> OperandInfo | None:
    if operand is None:
        return None
    return OperandInfo(tuple(operand.shape), tuple(operand.strides), operand.dtype.name)


def wrap_all(a, b, c, epilog_inputs) -> tuple[Operand, Operand, Operand | None, dict]:
    """View every operand (typed errors name ``a``, ``b``, ``c`` or ``epilog_inputs[...]``)."""
    if epilog_inputs is not None and not isinstance(epilog_inputs, dict):
        raise OptionsError("epilog_inputs", f"expected a dict of arrays or None (got {type(epilog_inputs).__name__})")
    a_op = wrap_operand(a, "a")
    b_op = wrap_operand(b, "b")
    c_op = wrap_operand(c, "c") if c is not None else None
    inputs = {name: wrap_operand(value, f"epilog_inputs[{name!r}]") for name, value in (epilog_inputs or {}).items()}
    check_together(a_op, [("b", b_op), ("c", c_op)] + [(f"epilog_inputs[{k!r}]", v) for k, v in inputs.items()])
    return a_op, b_op, c_op, inputs


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


def host_view(operand: Operand) -> np.ndarray:
    """A numpy view of a host operand of any library (bfloat16 and float8 included)."""
    if isinstance(operand.obj, np.ndarray):
        return operand.obj
    itemsize = operand.dtype.itemsize
    span = (sum((e - 1) * s for e, s in zip(operand.shape, operand.strides)) + 1) * itemsize
    raw = np.frombuffer((ctypes.c_char * span).from_address(operand.ptr), dtype=operand.dtype)
    return np.lib.stride_tricks.as_strided(raw, operand.shape, tuple(s * itemsize for s in operand.strides), writeable=False)


def to_package_host(array: np.ndarray, like: Operand):
    """``array`` as a new host array of ``like``'s library (numpy passes through)."""
    if like.package == "numpy":
        return array
    array = np.ascontiguousarray(array)
    obj = like.adapter.empty(array.shape, array.dtype, -1, None)
    target = like.adapter.view(obj, "result")
    ctypes.memmove(target.ptr, array.ctypes.data, array.nbytes)
    return obj


def stage(operand: Operand | None, device_id: int, stream, memory_resource) -> Operand | None:
    """A device copy of a host operand (device operands pass through)."""
    if operand is None or operand.device_id >= 0:
        return operand
    return stage_to_device(operand, device_id, stream, memory_resource)


def make_allocator(like: Operand, shape, dtype_name: str, device_id: int, memory_resource):
    """A callable ``alloc(stream) -> (array, pointer)`` for results of ``like``'s library.

    torch results come from a pre-bound ``torch.empty`` (torch's caching allocator, a few
    microseconds, capturable in CUDA graphs); other libraries go through the shared allocation path
    (staged host operands allocate from ``memory_resource``).
    """
    shape = tuple(shape)
    adapter = like.adapter
    if adapter.name == "torch":
        torch_dtype = adapter.to_torch[numpy_dtype(dtype_name)]
        # new_empty on an empty template parses one argument, not torch.empty's keywords (~1 us less).
        new_empty = adapter.torch.empty(0, dtype=torch_dtype, device=adapter.torch_device(device_id)).new_empty

        def alloc(stream):
            array = new_empty(shape)
            return array, array.data_ptr()

        return alloc
    dtype = numpy_dtype(dtype_name)

    def alloc(stream):
        result = allocate_like(like, shape, dtype, device_id, stream, memory_resource=memory_resource)
        return result.obj, result.ptr

    return alloc
