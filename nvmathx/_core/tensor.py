"""Operands: the one module that knows which array library an array came from.

:func:`wrap_operand` views any DLPack, CUDA Array Interface or array-interface object as an
:class:`Operand` (pointer, shape, strides in elements, numpy dtype, device). Each array library has a
small adapter, found by a lookup cached on ``type(obj)``, that also allocates results in that
library (torch and cupy use their own allocators; other DLPack producers such as jax get a
:class:`DeviceArray` through their ``from_dlpack``) and reports the library's current stream.
"""

from __future__ import annotations

import numbers

import numpy as np

from .device_array import DeviceArray
from .dtypes import numpy_dtype
from .errors import OperandError, UnsupportedOperandError

__all__ = [
    "Operand",
    "wrap_operand",
    "adapter_for",
    "c_strides",
    "f_strides",
    "allocate_like",
    "stage_to_device",
    "copy_to_host",
    "host_array",
    "is_read_only",
]


def c_strides(shape) -> tuple:
    """Row-major strides, in elements, of a dense array of ``shape``."""
    strides, step = [], 1
    for extent in reversed(shape):
        strides.append(step)
        step *= max(extent, 1)
    return tuple(reversed(strides))


def f_strides(shape) -> tuple:
    """Column-major strides, in elements, of a dense array of ``shape``."""
    strides, step = [], 1
    for extent in shape:
        strides.append(step)
        step *= max(extent, 1)
    return tuple(strides)


class Operand:
    """A view of one array: where its data is and how it is laid out.

    Attributes
    ----------
    obj : object
        The array as the caller passed it.
    ptr : int
        Address of element 0.
    shape, strides : tuple of int
        Extents and strides in elements (never None).
    dtype : numpy.dtype
        Element type (ml_dtypes types for bfloat16 and float8).
    device_id : int
        CUDA device ordinal, or -1 for host memory.
    adapter : _Adapter
        The array library's adapter (``adapter.name`` is ``"numpy"``, ``"torch"``, ``"cupy"``,
        ``"nvmathx"`` or the package name of another DLPack producer).
    """

    __slots__ = ("obj", "ptr", "shape", "strides", "dtype", "device_id", "adapter")

    def __init__(self, obj, ptr, shape, strides, dtype, device_id, adapter):
        self.obj = obj
        self.ptr = ptr
        self.shape = shape
        self.strides = strides
        self.dtype = dtype
        self.device_id = device_id
        self.adapter = adapter

    @property
    def package(self) -> str:
        return self.adapter.name

    @property
    def is_device(self) -> bool:
        return self.device_id >= 0

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def is_c_contiguous(self) -> bool:
        return _dense_matches(self.shape, self.strides, c_strides(self.shape))

    def is_f_contiguous(self) -> bool:
        return _dense_matches(self.shape, self.strides, f_strides(self.shape))

    def __repr__(self):
        return (
            f"Operand({self.package}, shape={self.shape}, strides={self.strides}, dtype={self.dtype}, "
            f"device_id={self.device_id})"
        )


def _dense_matches(shape, strides, expected) -> bool:
    return all(extent <= 1 or stride == want for extent, stride, want in zip(shape, strides, expected))


# --------------------------------------------------------------------------------------------------
# Adapters, one per array library.


class _Adapter:
    """How one array library's arrays are viewed, allocated and converted."""

    name = "dlpack"

    def view(self, obj, argument: str) -> Operand:
        from cuda.core.utils import StridedMemoryView

        try:
            view = StridedMemoryView.from_any_interface(obj, -1)
        except Exception as error:
            # Some producers (jax) reject -1 ("no synchronisation"); 1 is the legacy default stream,
            # which every blocking stream is ordered with.
            try:
                view = StridedMemoryView.from_any_interface(obj, 1)
            except Exception:
                raise UnsupportedOperandError(argument, f"cannot view {type(obj).__name__} as an array: {error}") from None
        shape = tuple(view.shape)
        strides = tuple(view.strides) if view.strides is not None else c_strides(shape)
        device_id = view.device_id if view.is_device_accessible and view.device_id >= 0 else -1
        return Operand(obj, int(view.ptr), shape, strides, numpy_dtype(view.dtype), device_id, self)

    def signature(self, obj) -> tuple:
        """A hashable description of ``obj``'s layout (shape, strides, dtype, device), without its
        address: equal signatures mean a plan made for one array serves the other."""
        operand = self.view(obj, "operand")
        return (operand.shape, operand.strides, operand.dtype.str, operand.device_id)

    def pointer(self, obj) -> int:
        """Address of element 0."""
        return self.view(obj, "operand").ptr

    def current_stream(self, device_id: int):
        """The library's current stream handle on a device, or None when it has no such notion."""
        return None

    def empty(self, shape, dtype, device_id, stream, strides=None, memory_resource=None):
        """A new array of this library; ``device_id`` -1 means host memory."""
        array = _device_array(shape, dtype, device_id, stream, strides, memory_resource)
        return self.from_device_array(array)

    def from_device_array(self, array: DeviceArray):
        """Hand a DeviceArray to this library (zero-copy, through DLPack)."""
        module = _dlpack_module(self.name)
        return module.from_dlpack(array)


class _NumpyAdapter(_Adapter):
    name = "numpy"

    def view(self, obj, argument):
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

    def signature(self, obj):
        return (obj.shape, obj.strides, obj.dtype, -1)

    def pointer(self, obj):
        return obj.__array_interface__["data"][0]

    def empty(self, shape, dtype, device_id, stream, strides=None, memory_resource=None):
        if device_id >= 0:
            raise OperandError("device_id", "numpy arrays live in host memory")
        if strides is not None and strides == f_strides(shape) and strides != c_strides(shape):
            return np.empty(shape, dtype, order="F")
        return np.empty(shape, dtype)

    def from_device_array(self, array):
        raise OperandError("result", "numpy cannot hold device memory; copy to host instead")


class _TorchAdapter(_Adapter):
    name = "torch"

    def __init__(self):
        import torch

        self.torch = torch
        self.to_numpy = {}
        self.to_torch = {}
        for name in ("float16", "bfloat16", "float32", "float64", "complex64", "complex128", "int8",
                     "uint8", "int16", "int32", "int64", "bool", "float8_e4m3fn", "float8_e5m2"):
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
        self._raw_stream = raw

    def view(self, obj, argument):
        dtype = self.to_numpy.get(obj.dtype)
        if dtype is None:
            raise UnsupportedOperandError(argument, f"torch dtype {obj.dtype} is not supported")
        if obj.is_conj() or obj.is_neg():
            # Lazy conjugate/negative views: the memory holds the unconjugated values.
            obj = obj.resolve_conj().resolve_neg()
        device_id = obj.get_device()  # -1 on the CPU; cheaper than obj.device.type
        if device_id < 0 and not obj.is_cpu:
            raise UnsupportedOperandError(argument, f"torch device {obj.device} is not supported (cuda or cpu)")
        return Operand(obj, obj.data_ptr(), obj.shape, obj.stride(), dtype, device_id, self)  # torch.Size is a tuple

    def signature(self, obj):
        # A lazy conjugate/negative view differs from plain memory of the same layout.
        return (obj.shape, obj.stride(), obj.dtype, obj.get_device(), obj.is_conj() or obj.is_neg())

    def pointer(self, obj):
        return obj.data_ptr()

    def torch_device(self, device_id):
        device = self._devices.get(device_id)
        if device is None:
            device = self._devices[device_id] = self.torch.device("cuda", device_id) if device_id >= 0 else self.torch.device("cpu")
        return device

    def current_stream(self, device_id):
        if self._raw_stream is not None:
            return self._raw_stream(device_id)
        return self.torch.cuda.current_stream(device_id).cuda_stream

    def empty(self, shape, dtype, device_id, stream, strides=None, memory_resource=None):
        torch_dtype = self.to_torch[numpy_dtype(dtype)]
        device = self.torch_device(device_id)
        if strides is None or strides == c_strides(shape):
            return self.torch.empty(shape, dtype=torch_dtype, device=device)
        return self.torch.empty_strided(shape, strides, dtype=torch_dtype, device=device)

    def from_device_array(self, array):
        return self.torch.from_dlpack(array)


class _CupyAdapter(_Adapter):
    name = "cupy"

    def __init__(self):
        import cupy

        self.cupy = cupy

    def view(self, obj, argument):
        dtype = obj.dtype
        itemsize = dtype.itemsize
        strides = tuple(stride // itemsize for stride in obj.strides)
        return Operand(obj, obj.data.ptr, obj.shape, strides, dtype, obj.device.id, self)

    def signature(self, obj):
        return (obj.shape, obj.strides, obj.dtype, obj.device.id)

    def pointer(self, obj):
        return obj.data.ptr

    def current_stream(self, device_id):
        with self.cupy.cuda.Device(device_id):
            return self.cupy.cuda.get_current_stream().ptr

    def empty(self, shape, dtype, device_id, stream, strides=None, memory_resource=None):
        if device_id < 0:
            return np.empty(shape, dtype)
        order = "F" if strides is not None and strides == f_strides(shape) and strides != c_strides(shape) else "C"
        with self.cupy.cuda.Device(device_id):
            return self.cupy.empty(shape, dtype, order=order)

    def from_device_array(self, array):
        return self.cupy.from_dlpack(array)


class _NvmathxAdapter(_Adapter):
    """Our own DeviceArray (staged numpy operands)."""

    name = "nvmathx"

    def view(self, obj, argument):
        return Operand(obj, obj.ptr, obj.shape, obj.strides, obj.dtype, obj.device_id, self)

    def empty(self, shape, dtype, device_id, stream, strides=None, memory_resource=None):
        return _device_array(shape, dtype, device_id, stream, strides, memory_resource)

    def from_device_array(self, array):
        return array


_DLPACK_MODULES = {"jaxlib": "jax.numpy", "jax": "jax.numpy"}


def _dlpack_module(package: str):
    import importlib

    name = _DLPACK_MODULES.get(package, package)
    try:
        module = importlib.import_module(name)
    except ImportError:
        raise UnsupportedOperandError("operand", f"cannot import {name!r} to create its arrays") from None
    if not hasattr(module, "from_dlpack"):
        raise UnsupportedOperandError("operand", f"{name} has no from_dlpack to receive results")
    return module


_ADAPTER_CLASSES = {"numpy": _NumpyAdapter, "torch": _TorchAdapter, "cupy": _CupyAdapter, "nvmathx": _NvmathxAdapter}
_adapters: dict[str, _Adapter] = {}
_adapter_by_type: dict[type, _Adapter] = {}


def _adapter_named(package: str) -> _Adapter:
    adapter = _adapters.get(package)
    if adapter is None:
        cls = _ADAPTER_CLASSES.get(package)
        if cls is None:
            adapter = _Adapter()
            adapter.name = package
        else:
            adapter = cls()
        _adapters[package] = adapter
    return adapter


def adapter_for(obj, argument: str = "operand") -> _Adapter:
    """The adapter of ``obj``'s array library (cached on ``type(obj)``)."""
    cls = type(obj)
    adapter = _adapter_by_type.get(cls)
    if adapter is not None:
        return adapter
    if cls is DeviceArray:
        package = "nvmathx"
    else:
        package = cls.__module__.partition(".")[0]
        if package not in _ADAPTER_CLASSES and not any(
            hasattr(cls, protocol) for protocol in ("__dlpack__", "__cuda_array_interface__", "__array_interface__")
        ):
            raise UnsupportedOperandError(
                argument,
                f"expected an array with DLPack, the CUDA Array Interface or the array interface "
                f"(numpy, cupy, torch, jax, ...) (got {cls.__module__}.{cls.__name__})",
            )
    if package == "numpy" and not issubclass(cls, np.ndarray):
        raise UnsupportedOperandError(argument, f"expected an array (got numpy scalar {cls.__name__})")
    adapter = _adapter_by_type[cls] = _adapter_named(package)
    return adapter


def wrap_operand(obj, argument: str, *, array_like: bool = False) -> Operand:
    """View ``obj`` as an :class:`Operand`.

    Parameters
    ----------
    obj : array
        numpy, cupy, torch (CPU or CUDA), jax or any DLPack / CUDA Array Interface / array
        interface producer.
    argument : str
        The argument's name, used in error messages.
    array_like : bool
        Also accept lists, tuples and Python or numpy scalars (converted with ``numpy.asarray``), as
        numpy and scipy functions do.

    Raises
    ------
    UnsupportedOperandError
        When ``obj`` is not an array nvmathx can view, or its dtype is not supported.
    """
    if array_like and (isinstance(obj, (list, tuple, numbers.Number)) or isinstance(obj, np.generic)):
        obj = np.asarray(obj)
    return adapter_for(obj, argument).view(obj, argument)


# --------------------------------------------------------------------------------------------------
# Results and staging.


def _device_array(shape, dtype, device_id, stream, strides=None, memory_resource=None) -> DeviceArray:
    from .memory import allocate

    dtype = np.dtype(dtype)
    shape = tuple(shape)
    strides = c_strides(shape) if strides is None else tuple(strides)
    nbytes = _span_bytes(shape, strides, dtype.itemsize)
    buffer = allocate(nbytes, stream, device_id, memory_resource)
    return DeviceArray(buffer, int(buffer.handle), shape, strides, dtype, device_id, stream)


def _span_bytes(shape, strides, itemsize) -> int:
    if any(extent == 0 for extent in shape):
        return 0
    return (sum((extent - 1) * abs(stride) for extent, stride in zip(shape, strides)) + 1) * itemsize


def allocate_like(operand: Operand, shape, dtype, device_id: int, stream, *, strides=None, memory_resource=None) -> Operand:
    """A new array for a result: the operand's own library where it lives on ``device_id``,
    else (host operand, device result) a DeviceArray on ``device_id``."""
    if operand.device_id < 0 and device_id >= 0:
        adapter = _adapter_named("nvmathx")
    else:
        adapter = operand.adapter
    obj = adapter.empty(tuple(shape), dtype, device_id, stream, strides, memory_resource)
    return adapter_for(obj).view(obj, "result")


def stage_to_device(operand: Operand, device_id: int, stream, memory_resource=None) -> Operand:
    """Copy a host operand to ``device_id`` (one copy, ordered on ``stream``).

    A dense operand (C- or Fortran-ordered) keeps its layout; any other is made C-contiguous
    first.
    """
    from .._bindings.cuda_driver import memcpy_async

    host = operand
    if not (operand.is_c_contiguous() or operand.is_f_contiguous()):
        array = np.ascontiguousarray(np.asarray(operand.obj))
        host = wrap_operand(array, "operand")
    device = _device_array(host.shape, host.dtype, device_id, stream, host.strides, memory_resource)
    nbytes = _span_bytes(host.shape, host.strides, host.dtype.itemsize)
    if nbytes:
        memcpy_async(device.ptr, host.ptr, nbytes, stream.handle)
    # A copy from pageable memory returns once the source has been read, so `array` may go.
    return adapter_for(device).view(device, "operand")


def copy_to_host(device: Operand, like: Operand, stream):
    """Copy a dense device result into a new host array of ``like``'s library and wait for it."""
    from .._bindings.cuda_driver import memcpy_async, stream_synchronize

    host_obj = like.adapter.empty(device.shape, device.dtype, -1, stream, device.strides)
    host = like.adapter.view(host_obj, "result")
    if host.strides != device.strides:
        raise OperandError("result", f"host layout {host.strides} differs from device layout {device.strides}")
    nbytes = _span_bytes(device.shape, device.strides, device.dtype.itemsize)
    if nbytes:
        memcpy_async(host.ptr, device.ptr, nbytes, stream.handle)
    stream_synchronize(stream.handle)
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
    import ctypes

    # The span the strides reach, from the lowest element (negative strides go below ptr) up.
    low = sum((extent - 1) * stride for extent, stride in zip(shape, strides) if stride < 0)
    high = sum((extent - 1) * stride for extent, stride in zip(shape, strides) if stride > 0)
    memory = (ctypes.c_char * ((high - low + 1) * dtype.itemsize)).from_address(operand.ptr + low * dtype.itemsize)
    first = np.frombuffer(memory, dtype=dtype)[-low:]
    byte_strides = tuple(stride * dtype.itemsize for stride in strides)
    return np.lib.stride_tricks.as_strided(first, shape, byte_strides, writeable=writeable)


def is_read_only(operand: Operand) -> bool:
    """Whether the operand's memory must not be written (a read-only numpy array, or a DLPack
    producer that exports read-only memory, such as jax)."""
    obj = operand.obj
    if isinstance(obj, np.ndarray):
        return not obj.flags.writeable
    if operand.adapter.name in ("torch", "cupy", "nvmathx"):
        return False
    from cuda.core.utils import StridedMemoryView

    try:
        return bool(StridedMemoryView.from_any_interface(obj, -1).readonly)
    except Exception:  # noqa: BLE001  (a producer that rejects the -1 stream, jax: ask on the legacy default stream)
        return bool(StridedMemoryView.from_any_interface(obj, 1).readonly)
