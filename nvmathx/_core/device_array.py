"""DeviceArray: a strided view of a cuda.core Buffer that other array libraries can import.

nvmathx uses it where no operand package can allocate device memory: numpy operands staged on the
GPU, and results for DLPack producers such as jax, which receive it through their ``from_dlpack``.
It exports ``__dlpack__``/``__dlpack_device__`` (a legacy ``dltensor`` capsule made with ctypes) and
``__cuda_array_interface__``.
"""

from __future__ import annotations

import ctypes

import numpy as np

from .._bindings import cuda_driver

__all__ = ["DeviceArray"]


class DeviceArray:
    """A device array backed by a cuda.core ``Buffer`` (or any pointer kept alive by ``owner``).

    ``strides`` are in elements. ``stream`` (a StreamHolder) is the stream that last wrote the data:
    exports to another stream are ordered after it.
    """

    __slots__ = ("buffer", "ptr", "shape", "strides", "dtype", "device_id", "stream", "__weakref__")

    def __init__(self, buffer, ptr, shape, strides, dtype, device_id, stream):
        self.buffer = buffer
        self.ptr = int(ptr)
        self.shape = tuple(shape)
        self.strides = tuple(strides)
        self.dtype = np.dtype(dtype)
        self.device_id = device_id
        self.stream = stream

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def __cuda_array_interface__(self):
        itemsize = self.dtype.itemsize
        return {
            "shape": self.shape,
            "strides": tuple(s * itemsize for s in self.strides),
            "typestr": self.dtype.str if self.dtype.kind != "V" else f"|V{itemsize}",
            "data": (self.ptr, False),
            "version": 3,
            "stream": self.stream.handle if self.stream is not None and self.stream.handle > 2 else 1,
        }

    def __dlpack_device__(self):
        return (_KDL_CUDA, self.device_id)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        if copy:
            raise BufferError("DeviceArray exports without copies")
        _order_for_consumer(self.stream, stream)
        return _make_capsule(self)

    def __repr__(self):
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype}, device_id={self.device_id})"


def _order_for_consumer(producer, consumer_stream) -> None:
    """Make the consumer's stream see the producer's writes (DLPack stream semantics)."""
    if producer is None or consumer_stream == -1:
        return
    if consumer_stream is None:
        cuda_driver.stream_synchronize(producer.handle)
    elif int(consumer_stream) != producer.handle:
        cuda_driver.stream_wait_stream(int(consumer_stream), producer.handle)


# DLPack structures (dlpack.h, legacy unversioned ABI).
_KDL_CUDA = 2


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class _DLManagedTensor(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(_DLManagedTensor))
_DLManagedTensor._fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _DELETER)]

# DLDataTypeCode: kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4, kDLComplex 5, kDLBool 6,
# kDLFloat8_e4m3fn 10, kDLFloat8_e5m2 12 (DLPack 1.1).
_DL_CODES = {"i": 0, "u": 1, "f": 2, "c": 5, "b": 6}
_DL_NAMED_CODES = {"bfloat16": 4, "float8_e4m3fn": 10, "float8_e5m2": 12}

# Exported tensors stay alive here until the consumer calls the deleter (keyed by address).
_exported: dict[int, tuple] = {}


@_DELETER
def _deleter(managed):
    _exported.pop(ctypes.addressof(managed.contents), None)


_CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_pythonapi = ctypes.pythonapi
_pythonapi.PyCapsule_New.restype = ctypes.py_object
_pythonapi.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, _CAPSULE_DESTRUCTOR]
_pythonapi.PyCapsule_IsValid.restype = ctypes.c_int
# The destructor sees a capsule whose refcount is already zero: pass it as a raw address, never
# as a Python object (that would resurrect it).
_pythonapi.PyCapsule_IsValid.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_pythonapi.PyCapsule_GetPointer.restype = ctypes.c_void_p
_pythonapi.PyCapsule_GetPointer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_CAPSULE_NAME = b"dltensor"


@_CAPSULE_DESTRUCTOR
def _capsule_destructor(capsule_address):
    # A capsule still named "dltensor" was never consumed: release the tensor ourselves.
    if _pythonapi.PyCapsule_IsValid(capsule_address, _CAPSULE_NAME):
        address = _pythonapi.PyCapsule_GetPointer(capsule_address, _CAPSULE_NAME)
        _exported.pop(address, None)


def _dl_dtype(dtype: np.dtype) -> _DLDataType:
    code = _DL_NAMED_CODES.get(dtype.name, _DL_CODES.get(dtype.kind))
    if code is None:
        raise BufferError(f"dtype {dtype} has no DLPack code")
    return _DLDataType(code, dtype.itemsize * 8, 1)


def _make_capsule(array: DeviceArray, device_type: int = _KDL_CUDA):
    ndim = len(array.shape)
    shape = (ctypes.c_int64 * max(ndim, 1))(*array.shape)
    strides = (ctypes.c_int64 * max(ndim, 1))(*array.strides)
    managed = _DLManagedTensor()
    managed.dl_tensor = _DLTensor(
        array.ptr, _DLDevice(device_type, max(array.device_id, 0)), ndim, _dl_dtype(array.dtype),
        ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64)), ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64)), 0,
    )
    managed.deleter = _deleter
    address = ctypes.addressof(managed)
    _exported[address] = (managed, shape, strides, array)
    return _pythonapi.PyCapsule_New(address, _CAPSULE_NAME, _capsule_destructor)
