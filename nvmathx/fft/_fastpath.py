"""A cheaper look at torch CUDA tensors for the function forms' cache hits.

``wrap_operand`` builds a full Operand (about 2 us for torch). A cache hit needs only the pointer,
shape, strides, dtype and device, which torch hands out directly; a miss still goes through
``wrap_operand``. (A candidate for nvmathx._core.tensor as an adapter method.)
"""

from __future__ import annotations

from .._core.tensor import wrap_operand

__all__ = ["describe"]

_torch_adapters: dict = {}  # tensor type -> its adapter, once one such tensor has been wrapped


def describe(x) -> tuple:
    """(obj, pointer, shape, strides, dtype, device_id, package, adapter) of an operand; ``dtype`` is
    the library's dtype object on the torch path and a numpy dtype otherwise."""
    adapter = _torch_adapters.get(type(x))
    if adapter is not None:
        device_id = x.get_device()
        if device_id >= 0:
            if x.is_conj() or x.is_neg():  # as wrap_operand does: the memory holds the unflagged values
                x = x.resolve_conj().resolve_neg()
            return x, x.data_ptr(), x.shape, x.stride(), x.dtype, device_id, "torch", adapter
    operand = wrap_operand(x, "x", array_like=True)
    if operand.package == "torch":
        _torch_adapters[type(operand.obj)] = operand.adapter
    return (operand.obj, operand.ptr, operand.shape, operand.strides, operand.dtype, operand.device_id,
            operand.package, operand.adapter)
