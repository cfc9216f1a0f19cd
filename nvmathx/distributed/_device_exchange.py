"""An exchange on the GPU: pieces packed by a strided copy kernel, moved by NCCL point-to-point
calls in one group, unpacked by the same kernel, all on one stream (no host synchronisation, so
an execution can be captured in a CUDA graph).

A piece that is contiguous where it lives is sent from (or received into) its place directly; the
rank's own piece is copied locally, never through NCCL, unless ``loopback`` asks for it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._core.memory import Workspace
from .._core.tensor import c_strides
from ._exchange_plan import ExchangePlan

__all__ = ["DeviceExchange", "contiguous_offset"]


def contiguous_offset(box, shape) -> int | None:
    """The element offset of ``box`` (local coordinates) in a C-order array of ``shape`` when the
    box's elements are contiguous there (every axis inside the innermost partial one is whole, every
    axis outside it has extent 1), else None."""
    extents = box.shape
    partial = [axis for axis in range(len(shape)) if extents[axis] != shape[axis]]
    if partial and any(extents[axis] != 1 for axis in range(partial[-1])):
        return None
    return sum(low * stride for low, stride in zip(box.lower, c_strides(shape)))


@dataclass(frozen=True)
class _Piece:
    peer: int
    count: int  # elements
    local_offset: int | None  # where it is contiguous in the local array, else None
    packed_offset: int  # where it goes in the staging buffer (when not contiguous)
    shape: tuple
    strides: tuple  # of the piece inside the local array
    start: int  # element offset of the piece's first element in the local array


class DeviceExchange:
    """One rank's part of one exchange on its GPU.

    Parameters
    ----------
    plan : ExchangePlan
    context : the distributed Context (its NCCL communicator and device)
    dtype : the elements' dtype
    memory_resource : cuda.core MemoryResource or None
        For the staging buffers of pieces that are not contiguous.
    loopback : bool
        Send the rank's own piece through NCCL too.
    """

    def __init__(self, plan: ExchangePlan, context, dtype, *, memory_resource=None, loopback: bool = False):
        self.plan = plan
        self.guard = context.nccl_guard
        self.device_id = context.device_id
        self.dtype = np.dtype(dtype)
        self.itemsize = self.dtype.itemsize
        source_shape, target_shape = plan.source_frame.shape, plan.target.shape
        self._self_copies = []
        sends, receives = [], []
        for item in plan.sends:
            piece = _piece(item, source_shape)
            if item.peer == plan.rank and not loopback:
                target = _piece(plan.receives[[r.peer for r in plan.receives].index(plan.rank)], target_shape)
                self._self_copies.append((piece, target))
            else:
                sends.append(piece)
        receives = [_piece(item, target_shape) for item in plan.receives if loopback or item.peer != plan.rank]
        self.sends = _assign_staging(sends)
        self.receives = _assign_staging(receives)
        self.send_bytes = sum(p.count for p in self.sends if p.local_offset is None) * self.itemsize
        self.receive_bytes = sum(p.count for p in self.receives if p.local_offset is None) * self.itemsize
        # their sizes follow each call's data; no graph captures the exchange
        self._send_buffer = Workspace(self.device_id, memory_resource, keep_outgrown=False)
        self._receive_buffer = Workspace(self.device_id, memory_resource, keep_outgrown=False)
        self.moves_bytes = bool(self.sends or self.receives or self._self_copies)

    @property
    def is_identity(self) -> bool:
        """Nothing moves on this rank: the source array is already the target (an alias will do)."""
        return self.plan.is_identity and not self.sends and not self.receives

    def run(self, source: int, target: int, stream) -> None:
        """Move the piece at ``source`` (device pointer) into ``target`` on ``stream`` (a StreamHolder)."""
        from .._bindings import nccl
        from .._codegen.elementwise import copy_nd

        itemsize, dtype = self.itemsize, self.dtype
        send_staging = self._send_buffer.ensure(self.send_bytes, stream)
        receive_staging = self._receive_buffer.ensure(self.receive_bytes, stream)
        for piece in self.sends:
            if piece.local_offset is None:
                copy_nd(source + piece.start * itemsize, send_staging + piece.packed_offset * itemsize, piece.shape,
                        piece.strides, c_strides(piece.shape), dtype, dtype, 1.0, False, stream, self.device_id)
        if self.sends or self.receives:
            comm = self.guard.comm

            def enqueue() -> None:
                for piece in self.sends:
                    pointer = (source + piece.local_offset * itemsize if piece.local_offset is not None
                               else send_staging + piece.packed_offset * itemsize)
                    nccl.send_bytes(pointer, piece.count * itemsize, piece.peer, comm, stream.handle)
                for piece in self.receives:
                    pointer = (target + piece.local_offset * itemsize if piece.local_offset is not None
                               else receive_staging + piece.packed_offset * itemsize)
                    nccl.recv_bytes(pointer, piece.count * itemsize, piece.peer, comm, stream.handle)

            self.guard.exchange("all_to_all", enqueue, stream.handle)
        for piece, place in self._self_copies:
            copy_nd(source + piece.start * itemsize, target + place.start * itemsize, piece.shape, piece.strides,
                    place.strides, dtype, dtype, 1.0, False, stream, self.device_id)
        for piece in self.receives:
            if piece.local_offset is None:
                copy_nd(receive_staging + piece.packed_offset * itemsize, target + piece.start * itemsize, piece.shape,
                        c_strides(piece.shape), piece.strides, dtype, dtype, 1.0, False, stream, self.device_id)

    def prepare_new(self, operand, stream_argument) -> tuple:
        """The part of :meth:`run_to_new` that can fail locally (the stream, the new result array),
        done before any rank enqueues the exchange: (stream, result, its pointer)."""
        from .._core.streams import CallStreams

        streams = getattr(self, "_streams", None)
        if streams is None:
            streams = self._streams = CallStreams(self.device_id, operand.adapter.current_stream)
            self._allocate = operand.adapter.result_allocator(self.plan.target.shape, self.dtype, self.device_id)
        holder = streams(stream_argument)
        result, pointer = self._allocate(holder, operand.obj)
        return holder, result, pointer

    def run_to_new(self, operand, prepared: tuple, *, blocking: bool = False):
        """Run into the new array of :meth:`prepare_new` (the target piece's shape); returns it."""
        holder, result, pointer = prepared
        self.run(operand.ptr, pointer, holder)
        if blocking:
            self.guard.synchronize("all_to_all", holder.handle)
        return result

    def free(self) -> None:
        self._send_buffer.release()
        self._receive_buffer.release()


def _piece(item, local_shape) -> _Piece:
    strides = c_strides(local_shape)
    start = sum(low * stride for low, stride in zip(item.local.lower, strides))
    return _Piece(item.peer, item.count, contiguous_offset(item.local, local_shape), item.offset, item.local.shape,
                  tuple(strides), start)


def _assign_staging(pieces) -> list:
    """The pieces with staging offsets packed one after another (for those not contiguous)."""
    offset, placed = 0, []
    for piece in pieces:
        if piece.local_offset is None:
            placed.append(_Piece(piece.peer, piece.count, None, offset, piece.shape, piece.strides, piece.start))
            offset += piece.count
        else:
            placed.append(piece)
    return placed
