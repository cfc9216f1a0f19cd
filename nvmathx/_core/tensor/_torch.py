"""torch tensors, on the CPU or a CUDA device, including lazily conjugated or negated views."""

from __future__ import annotations

import ctypes

import numpy as np

from ..dtypes import numpy_dtype
from ..errors import UnsupportedOperandError
from ._adapter import Adapter
from ._operand import Operand, c_strides

__all__ = ["TorchAdapter"]

_DTYPE_NAMES = ("float16", "bfloat16", "float32", "float64", "complex64", "complex128", "int8", "uint8", "int16",
                "int32", "int64", "bool", "float8_e4m3fn", "float8_e5m2")


class TorchAdapter(Adapter):
    """torch's own allocator, current stream and lazy views.

    A lazy view's memory holds the unconjugated (unnegated) values: ``view()`` materialises it
    unless the caller can take a conjugate view as it is (``keep_conj``), and its key carries both
    bits, so a plan made for plain memory is never reused for a view.
    """

    name = "torch"

    def __init__(self):
        import torch

        self.torch = torch
        self.to_numpy = {}
        self.to_torch = {}
        for name in _DTYPE_NAMES:
            torch_dtype = getattr(torch, name, None)
            if torch_dtype is None:
                continue
            try:
                dtype = numpy_dtype("bool_" if name == "bool" else name)
            except Exception:  # ml_dtypes missing: those dtypes are not viewable
                continue
            self.to_numpy[torch_dtype] = dtype
            self.to_torch[dtype] = torch_dtype
        self._devices = {}
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        if raw is not None:
            # torch's C function itself, in place of the method: no Python frame on the hot path.
            self.current_stream = raw

    def view(self, obj, argument, *, keep_conj=False):
        dtype = self.to_numpy.get(obj.dtype)
        if dtype is None:
            raise UnsupportedOperandError(argument, f"torch dtype {obj.dtype} is not supported")
        device_id = obj.get_device()  # -1 on the CPU; cheaper than obj.device.type
        if device_id < 0 and not obj.is_cpu:
            raise UnsupportedOperandError(argument, f"torch device {obj.device} is not supported (cuda or cpu)")
        conj = obj.is_conj()
        if obj.is_neg() or (conj and not (keep_conj and device_id >= 0)):
            obj, conj = self.resolve(obj), False
        # (torch.Size is a tuple)
        return Operand(obj, obj.data_ptr(), obj.shape, obj.stride(), dtype, device_id, self, conj)

    def key(self, obj):
        device_id = obj.get_device()
        signature = ("torch", obj.shape, obj.stride(), obj.dtype, device_id, obj.is_conj(), obj.is_neg())
        return signature, obj.data_ptr(), device_id

    def resolve(self, obj):
        return obj.resolve_conj().resolve_neg()

    def lazy_view(self, obj):
        if obj.is_conj():
            return "a lazily conjugated view (torch's conj(); resolve_conj() materialises it)"
        if obj.is_neg():
            return "a lazily negated view (resolve_neg() materialises it)"
        return None

    def torch_device(self, device_id):
        device = self._devices.get(device_id)
        if device is None:
            torch = self.torch
            device = torch.device("cuda", device_id) if device_id >= 0 else torch.device("cpu")
            self._devices[device_id] = device
        return device

    def current_stream(self, device_id):
        return self.torch.cuda.current_stream(device_id).cuda_stream

    def result_allocator(self, shape, dtype, device_id, *, strides=None, memory_resource=None, like=None):
        shape = tuple(shape)
        dtype = numpy_dtype(dtype)
        strides = c_strides(shape) if strides is None else tuple(strides)
        if like is not None and (tuple(like.shape), tuple(like.strides), like.dtype) == (shape, strides, dtype):
            # Results laid out like each call's (dense) operand: empty_like parses no argument at all.
            empty_like = self.torch.empty_like

            def allocate_like_operand(stream, operand):
                array = empty_like(operand)
                return array, array.data_ptr()

            return allocate_like_operand
        template = self.torch.empty(0, dtype=self.to_torch[dtype], device=self.torch_device(device_id))
        # A method of a template parses neither dtype nor device, and new_empty_strided parses its
        # two tuples faster than new_empty parses one (about 0.5 us a call less on the host, measured).
        new_empty_strided = template.new_empty_strided

        def allocate_result(stream, operand=None):
            array = new_empty_strided(shape, strides)
            return array, array.data_ptr()

        return allocate_result

    def empty(self, shape, dtype, device_id, stream, strides=None, memory_resource=None):
        torch_dtype = self.to_torch[numpy_dtype(dtype)]
        device = self.torch_device(device_id)
        if strides is None or strides == c_strides(shape):
            return self.torch.empty(shape, dtype=torch_dtype, device=device)
        return self.torch.empty_strided(shape, strides, dtype=torch_dtype, device=device)

    def from_host(self, array):
        # (np.ascontiguousarray would make a 0-d result 1-d)
        array = np.asarray(array, order="C")
        if array.dtype.kind in "biufc":
            return self.torch.from_numpy(array)  # shares the memory
        # bfloat16 and float8 (ml_dtypes): torch.from_numpy does not take them; copy the bytes.
        result = self.empty(array.shape, array.dtype, -1, None)
        ctypes.memmove(result.data_ptr(), array.ctypes.data, array.nbytes)
        return result

    def from_device_array(self, array):
        return self.torch.from_dlpack(array)
