"""numpy arrays: host memory, viewed through the array interface."""

from __future__ import annotations

import numpy as np

from ..errors import OperandError
from ._adapter import Adapter
from ._operand import Operand, c_strides, f_strides

__all__ = ["NumpyAdapter"]


class NumpyAdapter(Adapter):
    name = "numpy"

    def view(self, obj, argument, *, keep_conj=False):
        interface = obj.__array_interface__
        dtype = obj.dtype
        itemsize = dtype.itemsize
        shape = obj.shape
        strides = interface["strides"]
        if strides is None:
            strides = c_strides(shape)
        else:
            if any(stride % itemsize for stride in strides):
                raise OperandError(argument, f"strides {strides} are not multiples of the item size {itemsize}")
            strides = tuple(stride // itemsize for stride in strides)
        return Operand(obj, interface["data"][0], shape, strides, dtype, -1, self)

    def key(self, obj):
        return ("numpy", obj.shape, obj.strides, obj.dtype, -1), obj.__array_interface__["data"][0], -1

    def empty(self, shape, dtype, device_id, stream, strides=None, memory_resource=None):
        if device_id >= 0:
            raise OperandError("device_id", "numpy arrays live in host memory")
        if strides is not None and strides == f_strides(shape) and strides != c_strides(shape):
            return np.empty(shape, dtype, order="F")
        return np.empty(shape, dtype)

    def from_host(self, array):
        return array

    def from_device_array(self, array):
        raise OperandError("result", "numpy cannot hold device memory; copy to host instead")
