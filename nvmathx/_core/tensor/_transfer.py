"""Results for a host or device operand, and copies between host and device."""

from __future__ import annotations

import ctypes

import numpy as np

from ..._bindings import cuda_driver
from ..errors import OperandError
from ._adapter import device_array
from ._lookup import adapter_for, adapter_named, wrap_operand
from ._operand import Operand, may_overlap, span_bytes

__all__ = ["allocate_like", "stage_to_device", "copy_to_host", "host_array", "is_read_only", "in_place_problem"]


def allocate_like(operand: Operand, shape, dtype, device_id: int, stream, *, strides=None,
                  memory_resource=None) -> Operand:
    """A new array for a result: the operand's own library where it lives on ``device_id``,
    else (host operand, device result) a DeviceArray on ``device_id``."""
    adapter = adapter_named("nvmathx") if operand.device_id < 0 and device_id >= 0 else operand.adapter
    obj = adapter.empty(tuple(shape), dtype, device_id, stream, strides, memory_resource)
    return adapter_for(obj).view(obj, "result")


def stage_to_device(operand: Operand, device_id: int, stream, memory_resource=None) -> Operand:
    """Copy a host operand to ``device_id`` (one copy, ordered on ``stream``).

    A dense operand (C- or Fortran-ordered) keeps its layout; any other is made C-contiguous
    first.
    """
    host = operand
    if not (operand.is_c_contiguous() or operand.is_f_contiguous()):
        array = np.asarray(operand.obj, order="C")
        host = wrap_operand(array, "operand")
    device = device_array(host.shape, host.dtype, device_id, stream, host.strides, memory_resource)
    nbytes = span_bytes(host.shape, host.strides, host.dtype.itemsize)
    if nbytes:
        cuda_driver.memcpy_async(device.ptr, host.ptr, nbytes, stream.handle)
    # A copy from pageable memory returns once the source has been read, so `array` may go.
    return adapter_for(device).view(device, "operand")


def copy_to_host(device: Operand, like: Operand, stream):
    """Copy a dense device result into a new host array of ``like``'s library and wait for it."""
    host_obj = like.adapter.empty(device.shape, device.dtype, -1, stream, device.strides)
    host = like.adapter.view(host_obj, "result")
    if host.strides != device.strides:
        raise OperandError("result", f"host layout {host.strides} differs from device layout {device.strides}")
    nbytes = span_bytes(device.shape, device.strides, device.dtype.itemsize)
    if nbytes:
        cuda_driver.memcpy_async(host.ptr, device.ptr, nbytes, stream.handle)
    cuda_driver.stream_synchronize(stream.handle)
    return host_obj


def host_array(operand: Operand, *, writeable: bool = False) -> np.ndarray:
    """A numpy view of a host operand of any library, bfloat16 and float8 included (numpy arrays
    are returned as they are). The view does not keep ``operand.obj`` alive: hold the operand."""
    if isinstance(operand.obj, np.ndarray):
        return operand.obj
    if operand.device_id >= 0:
        raise OperandError("operand", f"lives on GPU {operand.device_id}, not in host memory")
    dtype, shape, strides = operand.dtype, tuple(operand.shape), tuple(operand.strides)
    if any(extent == 0 for extent in shape):
        return np.empty(shape, dtype)
    # The span the strides reach, from the lowest element (negative strides go below ptr) up.
    low = sum((extent - 1) * stride for extent, stride in zip(shape, strides) if stride < 0)
    high = sum((extent - 1) * stride for extent, stride in zip(shape, strides) if stride > 0)
    memory = (ctypes.c_char * ((high - low + 1) * dtype.itemsize)).from_address(operand.ptr + low * dtype.itemsize)
    first = np.frombuffer(memory, dtype=dtype)[-low:]
    byte_strides = tuple(stride * dtype.itemsize for stride in strides)
    return np.lib.stride_tricks.as_strided(first, shape, byte_strides, writeable=writeable)


def is_read_only(operand: Operand) -> bool:
    """Whether the operand's memory must not be written (a read-only numpy array, a torch tensor
    that requires grad, whose writes autograd would not see, or a DLPack producer that exports
    read-only memory, such as jax)."""
    obj = operand.obj
    if isinstance(obj, np.ndarray):
        return not obj.flags.writeable
    if operand.adapter.name == "torch":
        return bool(obj.requires_grad)
    if operand.adapter.name in ("cupy", "nvmathx"):
        return False
    # only for other DLPack producers (cuda.core is not imported by nvmathx)
    from cuda.core.utils import StridedMemoryView

    try:
        return bool(StridedMemoryView.from_any_interface(obj, -1).readonly)
    except Exception:  # noqa: BLE001  (a producer that rejects the -1 stream, jax: ask on the legacy default stream)
        return bool(StridedMemoryView.from_any_interface(obj, 1).readonly)


def in_place_problem(obj, operand: Operand) -> str | None:
    """Why writing values into ``operand``'s memory would not make them the values of ``obj``, the
    array the caller passed (``operand`` is its view), or None when it would.

    A lazy view (whose memory does not hold its values) and an array-like that was converted to a
    new array are viewed through a copy; read-only memory must not be written; elements that share
    memory (a broadcast or overlapping stride) cannot hold distinct values. The reason is a phrase
    that follows the argument's name in an error message.
    """
    if operand.obj is not obj:
        lazy = operand.adapter.lazy_view(obj)
        if lazy is not None:
            return f"is {lazy}: its memory does not hold its values"
        return f"is a {type(obj).__name__}, which is converted to a new array"
    if is_read_only(operand):
        if getattr(obj, "requires_grad", False):
            return "requires grad: autograd would not see values written into its memory"
        return "is read-only"
    if may_overlap(operand.shape, operand.strides):
        return f"has elements that share memory (a zero or overlapping stride: strides {tuple(operand.strides)})"
    return None
