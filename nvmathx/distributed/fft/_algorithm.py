"""The distributed FFT as a sequence of stages: local transforms of the axes a rank holds whole,
and moves of the global array between decompositions (the transpose algorithm of FFTW-MPI,
heFFTe and jaxDecomp). Pure: planned from the global shape, the transformed axes, the transform
kind and the input decomposition, so the CPU tests check the plan every space runs.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._distributions import Box, slab_boxes

__all__ = ["SlabSplit", "BoxSplit", "LocalPass", "Move", "plan_stages", "decomposition_boxes", "output_shape"]

C2C, R2C, C2R = "C2C", "R2C", "C2R"


@dataclass(frozen=True)
class SlabSplit:
    """The global array split into slabs along ``axis`` (a global axis index)."""

    axis: int


@dataclass(frozen=True)
class BoxSplit:
    """The global array split into one box per rank."""

    boxes: tuple


@dataclass(frozen=True)
class LocalPass:
    """Transform ``axes`` (global indices, all held whole by every rank) of the global array of
    ``shape_in``; ``fft_type`` R2C makes ``axes[-1]`` the halved axis, C2R makes it ``length``."""

    axes: tuple
    fft_type: str
    shape_in: tuple
    shape_out: tuple
    split: SlabSplit

    @property
    def lengths(self) -> tuple:
        """The logical transform lengths (the real side's extent for R2C/C2R)."""
        shape = self.shape_out if self.fft_type == C2R else self.shape_in
        return tuple(shape[axis] for axis in self.axes)


@dataclass(frozen=True)
class Move:
    """Move the global array of ``shape`` from one decomposition to another."""

    shape: tuple
    source: object  # SlabSplit or BoxSplit
    target: object


def decomposition_boxes(decomposition, shape, world_size: int) -> list:
    """Every rank's box of the global array ``shape`` in ``decomposition``."""
    if isinstance(decomposition, BoxSplit):
        return list(decomposition.boxes)
    return slab_boxes(shape, decomposition.axis, world_size)


def output_shape(shape, axes, fft_type, last_length=None) -> tuple:
    """The result's global shape: R2C halves the last transformed axis, C2R makes it ``last_length``."""
    shape = list(shape)
    if fft_type == R2C:
        shape[axes[-1]] = shape[axes[-1]] // 2 + 1
    elif fft_type == C2R:
        shape[axes[-1]] = last_length
    return tuple(shape)


def _other(split_axis, axes):
    return axes[1] if split_axis == axes[0] else axes[0]


def plan_stages(shape, axes, fft_type, source, *, reshape: bool, target=None, last_length=None) -> tuple:
    """(stages, result decomposition) of one distributed transform.

    Parameters
    ----------
    shape : tuple
        The global input shape.
    axes : tuple
        The transformed global axes, in order (2 or 3 of them; the last is the real axis of R2C/C2R).
    fft_type : {"C2C", "R2C", "C2R"}
    source : SlabSplit or BoxSplit
        The input's decomposition (a slab splits ``axes[0]`` or ``axes[1]``).
    reshape : bool
        Whether a slab input's result comes back in the input's slab (one move more when the
        algorithm ends in the other slab). Box inputs always end in ``target``.
    target : BoxSplit, optional
        The result's boxes, for box inputs.
    last_length : int, optional
        C2R: the real length of the last transformed axis.
    """
    stages: list[LocalPass | Move] = []
    split = source if isinstance(source, SlabSplit) else SlabSplit(axes[0])
    if isinstance(source, BoxSplit):
        stages.append(Move(tuple(shape), source, split))
    last = axes[-1]
    pending = list(axes)
    shape = tuple(shape)
    while pending:
        if fft_type == R2C and last in pending and split.axis == last:
            split = _move(stages, shape, split, axes)  # the real axis is transformed first, whole
        local = [axis for axis in pending if axis != split.axis]
        if fft_type == C2R and last in local and len(local) == len(pending):
            kind, done = C2R, local  # every pending axis is local: the real axis goes last
        elif fft_type == C2R:
            kind, done = C2C, [axis for axis in local if axis != last]
        elif fft_type == R2C and last in local:
            kind, done = R2C, local
        else:
            kind, done = C2C, local
        if done:
            shape_out = output_shape(shape, done, kind, last_length)
            stages.append(LocalPass(tuple(done), kind, shape, shape_out, split))
            shape = shape_out
            pending = [axis for axis in pending if axis not in done]
        if pending:
            split = _move(stages, shape, split, axes)
    if isinstance(source, BoxSplit):
        stages.append(Move(shape, split, target))
        return tuple(stages), target
    if reshape and split != source:
        stages.append(Move(shape, split, source))
        split = source
    return tuple(stages), split


def _move(stages, shape, split, axes):
    new = SlabSplit(_other(split.axis, axes))
    stages.append(Move(shape, split, new))
    return new


def box_of(decomposition, shape, world_size: int, rank: int) -> Box:
    """This rank's box of the global array ``shape`` in ``decomposition``."""
    return decomposition_boxes(decomposition, shape, world_size)[rank]
