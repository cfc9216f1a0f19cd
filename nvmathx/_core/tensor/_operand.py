"""The library-neutral view of one array: :class:`Operand`, and dense strides."""

from __future__ import annotations

import math

__all__ = ["Operand", "c_strides", "f_strides", "may_overlap", "span_bytes"]


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


def span_bytes(shape, strides, itemsize) -> int:
    """Bytes from the lowest to the highest element of an array (0 when it is empty)."""
    if any(extent == 0 for extent in shape):
        return 0
    return (sum((extent - 1) * abs(stride) for extent, stride in zip(shape, strides)) + 1) * itemsize


def may_overlap(shape, strides) -> bool:
    """Whether two elements of an array of ``shape`` and ``strides`` may share memory.

    False is proven: taken by increasing magnitude, every stride steps past all the elements that
    the smaller ones reach. Every dense array and every slice, transpose or reversal of one passes;
    a zero (broadcast) stride or an overlapping one fails, and so may an interleaving that
    ``as_strided`` can make without overlap (the test is conservative there).
    """
    if 0 in shape:
        return False  # no element at all
    reach = 1  # elements spanned by the axes taken so far, plus one
    for stride, extent in sorted((abs(stride), extent) for extent, stride in zip(shape, strides) if extent > 1):
        if stride < reach:
            return True
        reach += (extent - 1) * stride
    return False


class Operand:
    """A view of one array: where its data is and how it is laid out.

    Attributes
    ----------
    obj : object
        The array as the caller passed it (or its materialised copy, see :func:`wrap_operand`).
    ptr : int
        Address of element 0.
    shape, strides : tuple of int
        Extents and strides in elements (never None).
    dtype : numpy.dtype
        Element type (ml_dtypes types for bfloat16 and float8).
    device_id : int
        CUDA device ordinal, or -1 for host memory.
    adapter : Adapter
        The array library's adapter (``adapter.name`` is ``"numpy"``, ``"torch"``, ``"cupy"``,
        ``"nvmathx"`` or the package name of another DLPack producer).
    conj : bool
        The values are the complex conjugates of the memory at ``ptr`` (a lazily conjugated view,
        kept only where the caller asked for it).
    """

    __slots__ = ("obj", "ptr", "shape", "strides", "dtype", "device_id", "adapter", "conj")

    def __init__(self, obj, ptr, shape, strides, dtype, device_id, adapter, conj=False):
        self.obj = obj
        self.ptr = ptr
        self.shape = shape
        self.strides = strides
        self.dtype = dtype
        self.device_id = device_id
        self.adapter = adapter
        self.conj = conj

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
        return math.prod(self.shape)

    def is_c_contiguous(self) -> bool:
        return _dense_matches(self.shape, self.strides, c_strides(self.shape))

    def is_f_contiguous(self) -> bool:
        return _dense_matches(self.shape, self.strides, f_strides(self.shape))

    def __repr__(self):
        conj = ", conj" if self.conj else ""
        return (
            f"Operand({self.package}, shape={self.shape}, strides={self.strides}, dtype={self.dtype}, "
            f"device_id={self.device_id}{conj})"
        )


def _dense_matches(shape, strides, expected) -> bool:
    return all(extent <= 1 or stride == want for extent, stride, want in zip(shape, strides, expected))
