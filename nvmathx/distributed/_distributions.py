"""How a global array is split over the ranks: slabs, boxes, and (for matmul) replicated and
block-cyclic matrices. Pure: every function here is a function of shapes and ranks."""

from __future__ import annotations

import enum
import operator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Union

from .._core.errors import OptionsError

__all__ = ["Slab", "Box", "BoxLike", "MatrixDistribution", "Replicated", "BlockCyclic", "slab_extents", "slab_boxes",
           "split_axis"]


class Slab(enum.Enum):
    """A split of the global array into slabs of consecutive planes, one slab per rank.

    ``Slab.X`` splits the first transformed axis (for matmul: the rows), ``Slab.Y`` the second
    (for matmul: the columns). For the FFT and reshape, an extent ``n`` over ``P`` ranks gives the
    first ``n % P`` ranks ``n // P + 1`` planes and the others ``n // P``, as cuFFTMp does; matmul
    follows cuBLASMp's block rule instead (see :mod:`nvmathx.distributed.linalg`).
    """

    X = "X"
    Y = "Y"

    def __repr__(self) -> str:
        return f"Slab.{self.name}"


def _int_tuple(values, argument: str) -> tuple:
    try:
        return tuple(operator.index(value) for value in values)
    except TypeError:
        raise OptionsError(argument, f"expected a sequence of integers (got {values!r})") from None


@dataclass(frozen=True)
class Box:
    """A rectangular piece of the global array: ``lower`` (inclusive) to ``upper`` (exclusive)
    along every axis of the global array, batch axes included.

    Raises
    ------
    OptionsError
        Naming ``lower``/``upper`` for lengths that differ, negative corners or ``upper < lower``.
    """

    lower: tuple
    upper: tuple

    def __post_init__(self):
        lower, upper = _int_tuple(self.lower, "lower"), _int_tuple(self.upper, "upper")
        if len(lower) != len(upper) or not lower:
            raise OptionsError("lower", f"lower and upper need the same number (>= 1) of entries "
                                        f"(got {lower}, {upper})")
        if any(value < 0 for value in lower):
            raise OptionsError("lower", f"expected non-negative corners (got {lower})")
        if any(high < low for low, high in zip(lower, upper)):
            raise OptionsError("upper", f"expected upper >= lower along every axis (got lower {lower}, upper {upper})")
        object.__setattr__(self, "lower", lower)
        object.__setattr__(self, "upper", upper)

    @property
    def shape(self) -> tuple:
        """The piece's extents (its local array's shape)."""
        return tuple(high - low for low, high in zip(self.lower, self.upper))

    @property
    def size(self) -> int:
        count = 1
        for extent in self.shape:
            count *= extent
        return count

    @property
    def ndim(self) -> int:
        return len(self.lower)

    def intersect(self, other: Box) -> Box | None:
        """The common piece of two boxes, or None when they share no element."""
        lower = tuple(max(a, b) for a, b in zip(self.lower, other.lower))
        upper = tuple(min(a, b) for a, b in zip(self.upper, other.upper))
        if any(high <= low for low, high in zip(lower, upper)):
            return None
        return Box(lower, upper)

    def relative_to(self, origin: Box) -> Box:
        """This box in the local coordinates of ``origin`` (a box that contains it)."""
        return Box(tuple(a - o for a, o in zip(self.lower, origin.lower)),
                   tuple(a - o for a, o in zip(self.upper, origin.lower)))

    def __repr__(self) -> str:
        return f"Box({list(self.lower)}, {list(self.upper)})"


class Replicated:
    """Every rank holds the whole matrix (matmul only)."""

    def __eq__(self, other) -> bool:
        return isinstance(other, Replicated)

    def __hash__(self) -> int:
        return hash(Replicated)

    def __repr__(self) -> str:
        return "Replicated()"


@dataclass(frozen=True)
class BlockCyclic:
    """A 2-D block-cyclic matrix distribution (ScaLAPACK's and cuBLASMp's), matmul only.

    Blocks of ``block_shape`` are dealt round-robin over the process grid, starting at process
    (0, 0): process ``(i, j)`` holds the rows whose block index is ``i`` modulo the grid's rows and
    the columns whose block index is ``j`` modulo its columns, in order, as one C-ordered array
    (:func:`nvmathx.distributed.linalg.local_shape` gives its shape).

    Parameters
    ----------
    process_grid : (int, int)
        Rows and columns of the process grid (their product is the world size); ranks are laid out
        in row-major order over the grid: rank ``i * columns + j`` is process ``(i, j)``. (cuBLASMp
        sees the transposed matrix, on the transposed grid in column-major order.)
    block_shape : (int, int)
        Rows and columns of one block.
    """

    process_grid: tuple
    block_shape: tuple

    def __post_init__(self):
        for name in ("process_grid", "block_shape"):
            values = _int_tuple(getattr(self, name), name)
            if len(values) != 2 or min(values) < 1:
                raise OptionsError(name, f"expected two integers >= 1 (got {getattr(self, name)!r})")
            object.__setattr__(self, name, values)


def slab_extents(n: int, world_size: int) -> list:
    """``(start, stop)`` of each rank's planes when ``n`` planes are split over ``world_size`` ranks:
    the first ``n % world_size`` ranks hold one plane more."""
    base, extra = divmod(n, world_size)
    extents, start = [], 0
    for rank in range(world_size):
        stop = start + base + (1 if rank < extra else 0)
        extents.append((start, stop))
        start = stop
    return extents


def split_axis(slab: Slab, axes: tuple) -> int:
    """The global axis a slab splits: the first (X) or second (Y) of the transformed ``axes``."""
    return axes[0] if slab is Slab.X else axes[1]


def slab_boxes(global_shape, axis: int, world_size: int) -> list:
    """Every rank's :class:`Box` when ``global_shape`` is split along ``axis`` into slabs."""
    boxes = []
    for start, stop in slab_extents(global_shape[axis], world_size):
        lower = tuple(start if i == axis else 0 for i in range(len(global_shape)))
        upper = tuple(stop if i == axis else extent for i, extent in enumerate(global_shape))
        boxes.append(Box(lower, upper))
    return boxes


BoxLike = Union[Box, tuple[Sequence[int], Sequence[int]]]
"""A :class:`Box`, or its ``(lower, upper)`` corners."""

MatrixDistribution = Union[Slab, Replicated, BlockCyclic, str, type[Replicated]]
"""How a matmul operand is split: ``Slab.X``/``Slab.Y`` (or "X"/"Y"), ``Replicated()`` (or the class) or a
``BlockCyclic``."""
