"""What every array library's adapter provides, and the adapter of any other DLPack producer.

The hot paths (a cached plan run again) use four methods and nothing else of an array: :meth:`key`
(what a cached plan depends on, the address and the device), :meth:`resolve` (materialise a lazy
view), :meth:`result_allocator` (results of one shape, bound once) and :meth:`current_stream`.
"""

from __future__ import annotations

import importlib

import numpy as np

from ..device_array import DeviceArray
from ..dtypes import numpy_dtype
from ..errors import UnsupportedOperandError
from ..memory import allocate
from ._operand import Operand, c_strides, span_bytes

__all__ = ["Adapter", "device_array", "dlpack_module"]


def device_array(shape, dtype, device_id, stream, strides=None, memory_resource=None) -> DeviceArray:
    """A new DeviceArray ordered on ``stream`` (a StreamHolder), from ``memory_resource`` or the
    device's default resource."""
    dtype = np.dtype(dtype)
    shape = tuple(shape)
    strides = c_strides(shape) if strides is None else tuple(strides)
    buffer = allocate(span_bytes(shape, strides, dtype.itemsize), stream, device_id, memory_resource)
    return DeviceArray(buffer, int(buffer.handle), shape, strides, dtype, device_id, stream)


class Adapter:
    """How one array library's arrays are viewed, keyed, allocated and converted.

    This class serves any DLPack / CUDA Array Interface / array interface producer (jax, ...)
    through cuda.core's ``StridedMemoryView``; the libraries nvmathx knows well subclass it.
    """

    name = "dlpack"

    def view(self, obj, argument: str, *, keep_conj: bool = False) -> Operand:
        """The :class:`Operand` of ``obj``.

        A lazy view (torch's conjugate and negative bits) is materialised, except a conjugate
        view when ``keep_conj`` is set and ``obj`` lives on a device: its memory is then viewed as
        it is, with ``Operand.conj`` set.
        """
        from cuda.core.utils import StridedMemoryView

        try:
            view = StridedMemoryView.from_any_interface(obj, -1)
        except Exception as error:
            # Some producers (jax) reject -1 ("no synchronisation"); 1 is the legacy default stream,
            # which every blocking stream is ordered with.
            try:
                view = StridedMemoryView.from_any_interface(obj, 1)
            except Exception:
                message = f"cannot view {type(obj).__name__} as an array: {error}"
                raise UnsupportedOperandError(argument, message) from None
        shape = tuple(view.shape)
        strides = tuple(view.strides) if view.strides is not None else c_strides(shape)
        device_id = view.device_id if view.is_device_accessible and view.device_id >= 0 else -1
        return Operand(obj, int(view.ptr), shape, strides, numpy_dtype(view.dtype), device_id, self)

    def key(self, obj) -> tuple:
        """``(signature, pointer, device_id)`` of ``obj``, as cheaply as the library allows.

        ``signature`` is hashable and holds everything of ``obj`` that a cached plan depends on:
        the library, shape, strides, dtype, device and any lazy-view flag (torch's conjugate and
        negative bits); equal signatures mean a plan made for one array serves the other. ``pointer`` is
        the address of the memory (for a lazy view, of the memory it views).
        """
        operand = self.view(obj, "operand")
        device_id = operand.device_id
        return (self.name, operand.shape, operand.strides, operand.dtype.str, device_id), operand.ptr, device_id

    def resolve(self, obj):
        """``obj`` with any lazy view materialised (``obj`` itself when it is none)."""
        return obj

    def lazy_view(self, obj) -> str | None:
        """What kind of lazy view ``obj`` is (an array whose memory does not hold its values, such as
        torch's conjugate and negative views), or None for an ordinary array."""
        return None

    def current_stream(self, device_id: int):
        """The library's current stream handle on a device, or None when it has no such notion."""
        return None

    def result_allocator(self, shape, dtype, device_id: int, *, strides=None, memory_resource=None, like=None):
        """A function ``allocate(stream, operand=None) -> (array, pointer)`` making results of one
        shape, dtype and layout (C order unless ``strides`` says otherwise) in this library on a
        device.

        ``stream`` is the StreamHolder the result is ordered on; ``memory_resource`` serves
        libraries without an allocator of their own. ``like`` is an Operand whose shape, strides
        and dtype every call's ``operand`` (an array of this library) shares: where the results
        share them too, a library may make each one like that call's operand (torch: empty_like).
        """
        shape = tuple(shape)
        dtype = numpy_dtype(dtype)
        from_device_array, view = self.from_device_array, self.view

        def allocate_result(stream, operand=None):
            result = from_device_array(device_array(shape, dtype, device_id, stream, strides, memory_resource))
            return result, view(result, "result").ptr  # where the library put it (its from_dlpack may copy)

        return allocate_result

    def empty(self, shape, dtype, device_id, stream, strides=None, memory_resource=None):
        """A new array of this library; ``device_id`` -1 means host memory."""
        return self.from_device_array(device_array(shape, dtype, device_id, stream, strides, memory_resource))

    def from_device_array(self, array: DeviceArray):
        """Hand a DeviceArray to this library (zero-copy, through DLPack)."""
        return dlpack_module(self.name).from_dlpack(array)

    def from_host(self, array: np.ndarray):
        """A host array of this library holding ``array``'s values (a result computed on the CPU)."""
        return dlpack_module(self.name).from_dlpack(np.asarray(array, order="C"))  # (0-d stays 0-d)


_DLPACK_MODULES = {"jaxlib": "jax.numpy", "jax": "jax.numpy"}


def dlpack_module(package: str):
    """The module whose ``from_dlpack`` makes ``package``'s arrays."""
    name = _DLPACK_MODULES.get(package, package)
    try:
        module = importlib.import_module(name)
    except ImportError:
        raise UnsupportedOperandError("operand", f"cannot import {name!r} to create its arrays") from None
    if not hasattr(module, "from_dlpack"):
        raise UnsupportedOperandError("operand", f"{name} has no from_dlpack to receive results")
    return module

