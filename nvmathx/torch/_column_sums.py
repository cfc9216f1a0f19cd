"""Bias gradients as column sums in one read of the gradient, for the unquantised layers' large GEMMs.

cuBLASLt's BGRADA epilog runs its sum as a second kernel after the GEMM, and on Hopper that costs
more than reading the gradient once (figures in docs/guide/torch.rst, "Performance notes"). So from
:data:`MIN_ELEMENTS` elements on, the weight-gradient GEMM runs plain and the bias gradient comes
from one column-sum pass (``column_partials`` of :mod:`._float8.kernels`, sums over bands of rows,
then ``add_rows``; a fixed order, so the result is deterministic); smaller gradients keep BGRADA,
which costs no extra launch.
"""

from __future__ import annotations

import numpy as np
import torch

from .._codegen.float_formats import FORMAT_CODES
from .._core.streams import StreamHolder, resolve_stream
from .._core.tensor import adapter_for
from ._float8 import kernels

__all__ = ["MIN_ELEMENTS", "TARGET_BLOCKS", "bands", "column_sums", "current_stream_handle", "dtype_name", "in_kernel",
           "sum_partials", "torch_stream", "vector_aligned", "vector_aligned_at"]

MIN_ELEMENTS = 1 << 24  # gradients from this size on take their bias gradient from the kernel
TARGET_BLOCKS = 512  # blocks of column_partials: four a multiprocessor on Hopper, each reading 128 rows or more
_FORMATS = ("float16", "bfloat16", "float32")


def in_kernel(rows: int, cols: int, column_stride: int, dtype_name: str) -> bool:
    """Whether the bias gradient of a ``rows x cols`` gradient of ``dtype_name`` comes from
    :func:`column_sums` (else from cuBLASLt's BGRADA epilog): large enough, rows of unit stride,
    whole groups of eight columns (a thread's 16-byte read), a format the kernel reads.

    >>> in_kernel(16384, 4096, 1, "bfloat16"), in_kernel(16384, 4100, 1, "bfloat16"), in_kernel(256, 256, 1, "float16")
    (True, False, False)
    """
    return rows * cols >= MIN_ELEMENTS and column_stride == 1 and cols % 8 == 0 and dtype_name in _FORMATS


def dtype_name(dtype: torch.dtype) -> str:
    """A torch dtype's name without its module, as the kernels' names and format codes spell it."""
    return str(dtype).removeprefix("torch.")


# add_rows' result format per result dtype (a kernel argument, made once)
_FORMAT_CODES = {getattr(torch, name): np.int32(FORMAT_CODES[name]) for name in _FORMATS}


def vector_aligned(t: torch.Tensor) -> bool:
    """16-byte vector loads: an aligned base and a row stride of whole 16-byte units (16-bit types)."""
    return vector_aligned_at(t.data_ptr(), t.stride(0), t.element_size())


def vector_aligned_at(ptr: int, row_stride: int, itemsize: int) -> bool:
    """:func:`vector_aligned` of a matrix at ``ptr`` whose rows are ``row_stride`` elements apart."""
    return itemsize == 2 and not (ptr | 2 * row_stride) % 16


def torch_stream(device: torch.device) -> tuple[StreamHolder, int]:
    """torch's current stream on ``device`` and the device's index."""
    index = device.index if device.index is not None else torch.cuda.current_device()
    return resolve_stream(current_stream_handle(index), index), index


def current_stream_handle(index: int) -> int:
    """The handle of torch's current stream on device ``index``, as nvmathx's torch adapter asks for
    it (torch's C function where it has one: ``torch.cuda.current_stream`` makes a Stream object
    per call, several microseconds)."""
    return _TORCH_CURRENT_STREAM(index)


_TORCH_CURRENT_STREAM = adapter_for(torch.empty(0)).current_stream


def bands(rows: int, cols: int) -> int:
    """Bands of rows that :func:`column_sums` sums apart: about :data:`TARGET_BLOCKS` blocks of one
    256-column strip and one band each, every band at least 128 rows (16 per warp).

    >>> bands(16384, 4096), bands(32768, 768), bands(100, 64)
    (32, 171, 1)
    """
    strips = -(-cols // kernels.PARTIAL_STRIP)
    return max(1, min(rows // 128, -(-TARGET_BLOCKS // strips)))


def column_sums(t: torch.Tensor) -> torch.Tensor:
    """``t.sum(0)`` in ``t``'s dtype (accumulated in float32, in a fixed order) for a 2-D CUDA
    tensor that :func:`in_kernel` takes, on torch's current stream: column sums over bands of rows
    (``column_partials``), then the bands added up (``add_rows``): two launches."""
    rows, cols = t.shape
    stream, device_id = torch_stream(t.device)
    splits = bands(rows, cols)
    partials = t.new_empty((splits, cols), dtype=torch.float32)
    strips = -(-cols // kernels.PARTIAL_STRIP)
    kernels.launch(stream, device_id, kernels.column_partials_name(dtype_name(t.dtype)),
                   strips * splits * kernels.PARTIAL_THREADS, t.data_ptr(), t.stride(0), rows, cols, splits,
                   np.int32(vector_aligned(t)), partials.data_ptr())
    return sum_partials(partials, t.dtype, stream, device_id)


def sum_partials(partials: torch.Tensor, dtype: torch.dtype, stream: StreamHolder, device_id: int,
                 second: torch.Tensor | None = None):
    """The column sums of ``partials`` (float32 rows of partial sums) in ``dtype``, in one launch
    (``add_rows``: 32 columns a block, a fixed order). With ``second`` (partial sums with as many
    rows), both in the same launch: ``(sums of partials, sums of second)``."""
    parts, cols = partials.shape
    result = partials.new_empty(cols, dtype=dtype)
    if second is None:
        second_ptr = cols2 = result2_ptr = 0
        result2 = None
    else:
        assert second.shape[0] == parts
        cols2 = second.shape[1]
        result2 = second.new_empty(cols2, dtype=dtype)
        second_ptr, result2_ptr = second.data_ptr(), result2.data_ptr()
    groups = -(-cols // kernels.ADD_COLUMNS) + -(-cols2 // kernels.ADD_COLUMNS)
    kernels.launch(stream, device_id, "add_rows", groups * kernels.PARTIAL_THREADS, partials.data_ptr(), parts, cols,
                   result.data_ptr(), second_ptr, cols2, result2_ptr, _FORMAT_CODES[dtype])
    return result if result2 is None else (result, result2)
