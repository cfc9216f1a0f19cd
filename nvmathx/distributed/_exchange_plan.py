"""Exchange planning: which piece of its local array each rank sends to each other rank, and where
each piece it receives goes, when the global array moves from one box decomposition to another.

Pure functions of the boxes, shared by the CPU space (exchanged through the host group) and the
GPU space (packed by a strided copy kernel, exchanged through NCCL), so the CPU tests exercise the
GPU path's logic. Every slab transpose of the distributed FFT is such an exchange too.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._core.errors import OptionsError
from ._distributions import Box

__all__ = ["Transfer", "ExchangePlan", "plan_exchange", "check_tiling", "box_slices"]


@dataclass(frozen=True)
class Transfer:
    """One piece between this rank and ``peer``: ``box`` in global coordinates, ``local`` in the
    coordinates of this rank's local array, ``offset`` (elements) into the packed buffer."""

    peer: int
    box: Box
    local: Box
    offset: int

    @property
    def count(self) -> int:
        return self.box.size


@dataclass(frozen=True)
class ExchangePlan:
    """This rank's part of one exchange (global shapes in elements, peers in rank order)."""

    rank: int
    world_size: int
    source: Box  # this rank's piece before
    target: Box  # and after
    sends: tuple  # Transfer per peer that gets a non-empty piece, self included
    receives: tuple  # Transfer per peer that sends a non-empty piece, self included
    frame: Box | None = None  # the array the sends' local coordinates refer to (default: source)

    @property
    def source_frame(self) -> Box:
        return self.source if self.frame is None else self.frame

    @property
    def send_counts(self) -> list:
        """Elements sent to each rank (rank order)."""
        counts = [0] * self.world_size
        for item in self.sends:
            counts[item.peer] = item.count
        return counts

    @property
    def receive_counts(self) -> list:
        counts = [0] * self.world_size
        for item in self.receives:
            counts[item.peer] = item.count
        return counts

    @property
    def is_identity(self) -> bool:
        """Whether nothing moves: this rank keeps exactly its piece."""
        return self.source == self.target and all(item.peer == self.rank for item in self.sends + self.receives)


def box_slices(box: Box) -> tuple:
    """The numpy slices of ``box`` (in local coordinates)."""
    return tuple(slice(low, high) for low, high in zip(box.lower, box.upper))


def check_tiling(boxes, argument: str, global_shape=None) -> tuple:
    """The global shape that ``boxes`` (one per rank) tile exactly, or an OptionsError naming
    ``argument`` when they overlap, leave a gap, or leave the global shape.

    Without ``global_shape`` the global array is the smallest that holds every box.
    """
    ndim = boxes[0].ndim
    if any(box.ndim != ndim for box in boxes):
        raise OptionsError(argument, f"every rank's box needs {ndim} dimensions (got {[box.ndim for box in boxes]})")
    if global_shape is None:
        global_shape = tuple(max(box.upper[axis] for box in boxes) for axis in range(ndim))
    global_shape = tuple(global_shape)
    if len(global_shape) != ndim:
        raise OptionsError(argument, f"the boxes have {ndim} dimensions, the global array {len(global_shape)}")
    for rank, box in enumerate(boxes):
        if any(high > extent for high, extent in zip(box.upper, global_shape)):
            raise OptionsError(argument, f"rank {rank}'s {box} reaches outside the global shape {global_shape}")
    for rank, box in enumerate(boxes):
        for other in range(rank + 1, len(boxes)):
            if box.size and boxes[other].size and box.intersect(boxes[other]) is not None:
                raise OptionsError(argument, f"the boxes of ranks {rank} and {other} overlap ({box}, {boxes[other]})")
    total = 1
    for extent in global_shape:
        total *= extent
    covered = sum(box.size for box in boxes)
    if covered != total:
        raise OptionsError(argument, f"the boxes cover {covered} of the global shape's {total} elements "
                                     f"{global_shape}: they must tile it exactly")
    return global_shape


def plan_exchange(source_boxes, target_boxes, rank: int, *, frame: Box | None = None) -> ExchangePlan:
    """``rank``'s sends and receives when the global array moves from ``source_boxes`` to
    ``target_boxes`` (one box per rank each, both tiling the same global array).

    ``source_boxes`` may also be parts of the ranks' pieces (one chunk of a pipelined exchange):
    ``frame`` is then this rank's whole piece, whose local coordinates the sends use.
    """
    source, target = source_boxes[rank], target_boxes[rank]
    origin = source if frame is None else frame
    sends, receives = [], []
    offset = 0
    for peer, box in enumerate(target_boxes):
        common = source.intersect(box) if source.size and box.size else None
        if common is not None:
            sends.append(Transfer(peer, common, common.relative_to(origin), offset))
            offset += common.size
    offset = 0
    for peer, box in enumerate(source_boxes):
        common = box.intersect(target) if box.size and target.size else None
        if common is not None:
            receives.append(Transfer(peer, common, common.relative_to(target), offset))
            offset += common.size
    return ExchangePlan(rank, len(source_boxes), source, target, tuple(sends), tuple(receives), frame)
