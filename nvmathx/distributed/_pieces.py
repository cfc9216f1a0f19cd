"""Each rank's piece of a distributed array: its box, shape and offset, and a local array to hold it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from .._core.dtypes import numpy_dtype
from .._core.errors import OptionsError, UnsupportedOperandError
from .._core.options import as_index
from ..typing import AnyArray
from ._context import current
from ._distributions import Box, Slab, slab_boxes, split_axis

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

__all__ = ["local_box", "local_shape", "local_offset", "allocate"]


def _rank_and_size(rank, world_size):
    if rank is None or world_size is None:
        context = current("rank")
        rank = context.rank if rank is None else rank
        world_size = context.world_size if world_size is None else world_size
    if not 0 <= rank < world_size:
        raise OptionsError("rank", f"expected 0 <= rank < world_size ({world_size}) (got {rank})")
    return rank, world_size


def _global_shape(global_shape) -> tuple:
    """``global_shape`` as a tuple of ints >= 0 (bools and floats refused), else OptionsError."""
    try:
        extents = tuple(as_index(extent) for extent in global_shape)
    except TypeError:
        extents = (None,)
    if isinstance(global_shape, (str, bytes)) or any(extent is None or extent < 0 for extent in extents):
        raise OptionsError("global_shape", f"expected a sequence of ints >= 0 (got {global_shape!r})")
    return extents


def _element_dtype(dtype) -> np.dtype:
    """``dtype`` as a numpy dtype of numbers (bool, integers, floating or complex, ml_dtypes' included)."""
    try:
        result = numpy_dtype(dtype)
    except (TypeError, ValueError, UnsupportedOperandError):
        raise OptionsError("dtype", f"expected a numpy dtype (got {dtype!r})") from None
    if result.kind not in "biufc" and result.name not in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        raise OptionsError("dtype", f"expected a dtype of numbers: bool, integer, floating or complex (got {result})")
    return result


def local_box(global_shape: Sequence[int], distribution: Slab = Slab.X, *, axes: Sequence[int] | None = None,
              rank: int | None = None, world_size: int | None = None) -> Box:
    """This rank's :class:`Box` of the global array (the FFT and reshape slab rule).

    Parameters
    ----------
    global_shape : sequence of int
    distribution : Slab.X or Slab.Y
        Slabs of the first or second transformed axis; the first ``n % P`` ranks hold one plane more.
    axes : sequence of int, optional
        The transformed axes (default: all); a slab splits ``axes[0]`` (X) or ``axes[1]`` (Y).
    rank, world_size : int, optional
        Default: the distributed context's.
    """
    shape = _global_shape(global_shape)
    if not isinstance(distribution, Slab):
        raise OptionsError("distribution", f"expected Slab.X or Slab.Y (got {distribution!r})")
    transformed = tuple(range(len(shape))) if axes is None else tuple(axis % len(shape) for axis in axes)
    if len(transformed) < 2:
        raise OptionsError("axes", f"a slab needs at least two transformed axes (got {transformed})")
    rank, world_size = _rank_and_size(rank, world_size)
    return slab_boxes(shape, split_axis(distribution, transformed), world_size)[rank]


def local_shape(global_shape: Sequence[int], distribution: Slab = Slab.X, *, axes: Sequence[int] | None = None,
                rank: int | None = None, world_size: int | None = None) -> tuple:
    """The shape of this rank's piece (see :func:`local_box`)."""
    return local_box(global_shape, distribution, axes=axes, rank=rank, world_size=world_size).shape


def local_offset(global_shape: Sequence[int], distribution: Slab = Slab.X, *, axes: Sequence[int] | None = None,
                 rank: int | None = None, world_size: int | None = None) -> tuple:
    """The global index of this rank's piece's first element (see :func:`local_box`)."""
    return local_box(global_shape, distribution, axes=axes, rank=rank, world_size=world_size).lower


def allocate(global_shape: Sequence[int], dtype: DTypeLike, distribution: Slab | Box = Slab.X, *,
             axes: Sequence[int] | None = None, package: str = "numpy") -> AnyArray:
    """An uninitialised local piece of the distributed array, of this rank's shape.

    Parameters
    ----------
    global_shape, distribution, axes
        As :func:`local_box`; ``distribution`` may also be a :class:`Box` (this rank's piece).
    dtype : numpy dtype or name
        A dtype of numbers: bool, an integer, floating (bfloat16 and float8 included) or complex.
    package : {"numpy", "cupy", "torch", ...}
        The array library; GPU libraries allocate on the context's device, on their current stream.

    Raises
    ------
    OptionsError
        Naming ``dtype`` for any other dtype, ``global_shape`` for extents that are not ints >= 0,
        or the argument of :func:`local_box` it refuses.
    """
    dtype = _element_dtype(dtype)
    shape = distribution.shape if isinstance(distribution, Box) else local_shape(global_shape, distribution, axes=axes)
    if package == "numpy":
        return np.empty(shape, dtype)
    from .._core.streams import resolve_stream
    from .._core.tensor._lookup import adapter_named

    context = current("allocate")
    device_id = context.require_gpu("package")
    adapter = adapter_named(package)
    stream = resolve_stream(None, device_id, adapter.current_stream)
    return adapter.empty(shape, dtype, device_id, stream)
