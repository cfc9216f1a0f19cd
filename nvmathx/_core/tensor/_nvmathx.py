"""nvmathx's own DeviceArray (host operands staged to a device, results for other DLPack users)."""

from __future__ import annotations

from ..dtypes import numpy_dtype
from ._adapter import Adapter, device_array
from ._operand import Operand

__all__ = ["NvmathxAdapter"]


class NvmathxAdapter(Adapter):
    name = "nvmathx"

    def view(self, obj, argument, *, keep_conj=False):
        return Operand(obj, obj.ptr, obj.shape, obj.strides, obj.dtype, obj.device_id, self)

    def key(self, obj):
        device_id = obj.device_id
        return (self.name, obj.shape, obj.strides, obj.dtype, device_id), obj.ptr, device_id

    def result_allocator(self, shape, dtype, device_id, *, strides=None, memory_resource=None, like=None):
        shape = tuple(shape)
        dtype = numpy_dtype(dtype)
        from_device_array = self.from_device_array

        def allocate_result(stream, operand=None):
            array = device_array(shape, dtype, device_id, stream, strides, memory_resource)
            return from_device_array(array), array.ptr  # the array itself: no copy, no view needed

        return allocate_result

    def empty(self, shape, dtype, device_id, stream, strides=None, memory_resource=None):
        return device_array(shape, dtype, device_id, stream, strides, memory_resource)

    def from_host(self, array):
        return array  # DeviceArrays live on devices: host results are numpy's

    def from_device_array(self, array):
        return array
