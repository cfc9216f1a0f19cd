"""cupy arrays: cupy's allocator, devices and current stream."""

from __future__ import annotations

import numpy as np

from ._adapter import Adapter
from ._operand import Operand, c_strides, f_strides

__all__ = ["CupyAdapter"]


class CupyAdapter(Adapter):
    name = "cupy"

    def __init__(self):
        import cupy

        self.cupy = cupy

    def view(self, obj, argument, *, keep_conj=False):
        dtype = obj.dtype
        itemsize = dtype.itemsize
        strides = tuple(stride // itemsize for stride in obj.strides)
        return Operand(obj, obj.data.ptr, obj.shape, strides, dtype, obj.device.id, self)

    def key(self, obj):
        device_id = obj.device.id
        return ("cupy", obj.shape, obj.strides, obj.dtype, device_id), obj.data.ptr, device_id

    def current_stream(self, device_id):
        with self.cupy.cuda.Device(device_id):
            return self.cupy.cuda.get_current_stream().ptr

    def result_allocator(self, shape, dtype, device_id, *, strides=None, memory_resource=None, like=None):
        shape = tuple(shape)
        dtype = np.dtype(dtype)
        empty = self.empty  # C order, or Fortran order when ``strides`` are Fortran's

        def allocate_result(stream, operand=None):
            array = empty(shape, dtype, device_id, stream, strides)
            return array, array.data.ptr

        return allocate_result

    def empty(self, shape, dtype, device_id, stream, strides=None, memory_resource=None):
        if device_id < 0:
            return np.empty(shape, dtype)
        order = "F" if strides is not None and strides == f_strides(shape) and strides != c_strides(shape) else "C"
        with self.cupy.cuda.Device(device_id):
            return self.cupy.empty(shape, dtype, order=order)

    def from_host(self, array):
        return array  # cupy has no host arrays: host results are numpy's

    def from_device_array(self, array):
        return self.cupy.from_dlpack(array)
