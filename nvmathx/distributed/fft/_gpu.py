"""The GPU execution space of the distributed FFT: cuFFT for the local passes, NCCL for the moves,
all on the call's stream with buffers planned once.

Buffers: the operand (read only), the result (allocated by the operand's library on each call) and
at most two work buffers from the memory resource. A move that leaves this rank's piece where it
is (world size 1 without ``loopback``) is no step at all: the next pass reads the previous pass's
output, so the forced distributed path at world size 1 costs what its passes cost.
"""

from __future__ import annotations

import numpy as np

from ..._bindings import cuda_driver
from ..._core.logs import get_logger
from ..._core.memory import Workspace
from ..._core.streams import CallStreams
from ..._core.tensor import c_strides
from ..._fftcore.layout import plan_layout, real_input_aligned
from ..._fftcore.plan import CufftPlan, precision_dtypes
from .._device_exchange import DeviceExchange
from .._distributions import Box, slab_extents
from .._exchange_plan import plan_exchange
from ._algorithm import LocalPass, SlabSplit, decomposition_boxes

__all__ = ["GpuPipeline", "assign_buffers", "choose_chunks", "INPUT", "RESULT", "WORK0", "WORK1"]

INPUT, RESULT, WORK0, WORK1 = "input", "result", "work0", "work1"
CHUNK_BYTES = 64 << 20  # about this much of a rank's piece per chunk of the pipelined first pass and move
MAX_CHUNKS = 8


def choose_chunks(world_size: int, fewest_planes: int, bytes_per_rank: int, *, chunk_bytes: int = CHUNK_BYTES,
                  limit: int = MAX_CHUNKS) -> int:
    """In how many chunks the first pass and the move after it are pipelined (the exchange of one
    chunk overlapping the transform of the next). Pure, and the same on every rank: 1 at world size
    1 (nothing to overlap), else about one chunk per ``chunk_bytes`` of the average piece, at most
    ``limit`` and never more than the planes of the rank that has fewest."""
    if world_size == 1:
        return 1
    return max(1, min(limit, fewest_planes, round(bytes_per_rank / chunk_bytes)))


def assign_buffers(kinds) -> list:
    """(source, target) buffer of each step, from the steps' kinds ("C2C", "R2C", "C2R" passes or
    "move"). The first step reads the operand. The step after which only C2C passes remain writes
    the result, and those passes work on it in place; before it, C2C passes work in place and the
    other steps alternate between two work buffers. Pure (tested on the CPU)."""
    first_of_result = len(kinds) - 1
    while first_of_result > 0 and kinds[first_of_result] == "C2C":
        first_of_result -= 1
    assigned, current = [], INPUT
    for index, kind in enumerate(kinds):
        if index >= first_of_result:
            target = RESULT
        elif kind == "C2C" and current in (WORK0, WORK1):
            target = current
        else:
            target = WORK1 if current == WORK0 else WORK0
        assigned.append((current, target))
        current = target
    return assigned


class _PassStep:
    def __init__(self, stage: LocalPass, problem, source, target, input_dtype, device_id, memory_resource,
                 input_aligned: bool):
        boxes_in = decomposition_boxes(stage.split, stage.shape_in, problem.world_size)
        boxes_out = decomposition_boxes(stage.split, stage.shape_out, problem.world_size)
        shape_in, shape_out = boxes_in[problem.rank].shape, boxes_out[problem.rank].shape
        inplace = source == target
        layout = plan_layout(stage.fft_type, stage.axes, stage.lengths, shape_in, c_strides(shape_in),
                             c_strides(shape_out), inplace=inplace, overwrite_input=source != INPUT,
                             input_aligned=input_aligned)
        self.plan = CufftPlan(layout, input_dtype, device_id, memory_resource, inplace=inplace)
        self.source, self.target = source, target
        self.output_bytes = int(np.prod(shape_out)) * self.plan.output_dtype.itemsize
        self.empty = 0 in shape_in or 0 in shape_out

    def run(self, pointers, sign, stream, factor):
        if not self.empty:
            self.plan.run(pointers[self.source], pointers[self.target], sign, stream, factor)

    def free(self):
        self.plan.free()


class _MoveStep:
    def __init__(self, exchange: DeviceExchange, source, target):
        self.exchange, self.source, self.target = exchange, source, target
        plan = exchange.plan
        self.output_bytes = plan.target.size * exchange.itemsize

    def run(self, pointers, sign, stream, factor):
        self.exchange.run(pointers[self.source], pointers[self.target], stream)

    def free(self):
        self.exchange.free()


class _PipelinedStart:
    """The first pass and the move after it, in chunks of the planes along the split axis (an axis
    the pass does not transform): chunk ``c + 1`` is transformed on the call's stream while chunk
    ``c`` is exchanged on a side stream; the side stream forks from and joins the call's stream, so
    a graph capture takes both."""

    def __init__(self, pass_stage, move_stage, problem, context, element, chunks, buffers, options, operand):
        (self.source, self.target), (_, self.move_target) = buffers
        axis = pass_stage.split.axis
        rank, world_size = problem.rank, problem.world_size
        boxes_in = decomposition_boxes(pass_stage.split, pass_stage.shape_in, world_size)
        boxes_out = decomposition_boxes(pass_stage.split, pass_stage.shape_out, world_size)
        targets = decomposition_boxes(move_stage.target, move_stage.shape, world_size)
        shape_in, shape_out = boxes_in[rank].shape, boxes_out[rank].shape
        strides_in, strides_out = c_strides(shape_in), c_strides(shape_out)
        _, real, complex_ = precision_dtypes(element)
        output = real if pass_stage.fft_type == "C2R" else complex_
        self.parts = []
        plans = {}
        try:
            for chunk in range(chunks):
                chunk_boxes = [_chunk_of(box, axis, chunk, chunks) for box in boxes_out]
                low, high = chunk_boxes[rank].lower[axis] - boxes_out[rank].lower[axis], \
                    chunk_boxes[rank].upper[axis] - boxes_out[rank].lower[axis]
                extent = high - low
                # cuFFT reads reals only from complex-aligned addresses: chunks at other offsets differ
                aligned = real_input_aligned(pass_stage.fft_type, operand.ptr + low * strides_in[axis]
                                             * element.itemsize, element.itemsize)
                key = (extent, aligned)
                if extent and key not in plans:
                    part_in = tuple(extent if i == axis else e for i, e in enumerate(shape_in))
                    layout = plan_layout(pass_stage.fft_type, pass_stage.axes, pass_stage.lengths, part_in, strides_in,
                                         strides_out, input_aligned=aligned)
                    plans[key] = CufftPlan(layout, element, context.device_id, options.memory_resource)
                exchange = DeviceExchange(plan_exchange(chunk_boxes, targets, rank, frame=boxes_out[rank]), context,
                                          output, memory_resource=options.memory_resource, loopback=options.loopback)
                self.parts.append((plans.get(key), low * strides_in[axis] * element.itemsize,
                                   low * strides_out[axis] * output.itemsize, exchange))
        except BaseException:
            self.free(plans.values())
            raise
        self._plans = list(plans.values())
        self.output_bytes = int(np.prod(shape_out)) * output.itemsize
        self.move_bytes = targets[rank].size * output.itemsize
        self._side = None
        self.device_id = context.device_id

    def run(self, pointers, sign, stream, factor):
        side = self._side if self._side is not None else self._make_side_stream()
        source, target, moved = pointers[self.source], pointers[self.target], pointers[self.move_target]
        cuda_driver.stream_wait_stream(side.handle, stream.handle)  # fork: the side stream joins this call
        for plan, offset_in, offset_out, exchange in self.parts:
            if plan is not None:
                plan.run(source + offset_in, target + offset_out, sign, stream, factor)
            cuda_driver.stream_wait_stream(side.handle, stream.handle)  # this chunk is transformed
            exchange.run(target, moved, side)
        cuda_driver.stream_wait_stream(stream.handle, side.handle)  # join

    def _make_side_stream(self):
        self._side = side_stream(self.device_id)
        return self._side

    def free(self, plans=None):
        for plan in plans if plans is not None else self._plans:
            plan.free()
        for part in getattr(self, "parts", ()):
            part[3].free()
        self.parts = []


def side_stream(device_id: int):
    """A stream of nvmathx's own for the exchanges of a pipelined start (made once per pipeline)."""
    from ..._core import device
    from ..._core.streams import resolve_stream

    stream = device.ensure_device(device_id).create_stream()
    return resolve_stream(stream, device_id)


def _chunk_of(box, axis, chunk, chunks):
    """Chunk ``chunk`` of ``chunks`` of ``box``'s planes along ``axis`` (possibly empty)."""
    start, stop = slab_extents(box.upper[axis] - box.lower[axis], chunks)[chunk]
    lower = tuple(box.lower[axis] + start if i == axis else value for i, value in enumerate(box.lower))
    upper = tuple(box.lower[axis] + stop if i == axis else value for i, value in enumerate(box.upper))
    return Box(lower, upper)


class GpuPipeline:
    """One distributed transform on this rank's GPU: planned once, run on any stream."""

    def __init__(self, problem, context, operand, options, stream_argument=None):
        self.problem = problem
        self.device_id = device_id = context.device_id
        self.blocking = options.blocking is True
        self.guard = context.nccl_guard
        _, real, complex_ = precision_dtypes(operand.dtype)
        element = np.dtype(operand.dtype)  # what the data is at each point of the pipeline
        specs = []  # (stage, element type before it, exchange or None); moves that change nothing dropped
        for stage in problem.stages:
            if isinstance(stage, LocalPass):
                specs.append((stage, element, None))
                element = real if stage.fft_type == "C2R" else complex_
                continue
            source = decomposition_boxes(stage.source, stage.shape, problem.world_size)
            target = decomposition_boxes(stage.target, stage.shape, problem.world_size)
            exchange = DeviceExchange(plan_exchange(source, target, problem.rank), context, element,
                                      memory_resource=options.memory_resource, loopback=options.loopback)
            if not exchange.is_identity:
                specs.append((stage, element, exchange))
        kinds = [stage.fft_type if exchange is None else "move" for stage, _, exchange in specs]
        buffers = assign_buffers(kinds)
        chunks = _pipelined_chunks(specs, problem, np.dtype(operand.dtype))
        self.steps = []
        self._work = ()
        try:
            if chunks > 1:
                (first, element, _), (move, _, _) = specs[0], specs[1]
                self.steps.append(_PipelinedStart(first, move, problem, context, element, chunks, buffers[:2],
                                                  options, operand))
                get_logger(options.logger).debug("distributed FFT: first pass and move pipelined in %d chunks",
                                                 chunks)
                specs, buffers = specs[2:], buffers[2:]
            for (stage, element, exchange), (source, target) in zip(specs, buffers):
                if exchange is not None:
                    self.steps.append(_MoveStep(exchange, source, target))
                    continue
                aligned = source != INPUT or real_input_aligned(stage.fft_type, operand.ptr, element.itemsize)
                self.steps.append(_PassStep(stage, problem, source, target, element, device_id,
                                            options.memory_resource, aligned))
        except BaseException:
            self.free()
            raise
        self._last_pass = max(i for i, step in enumerate(self.steps) if isinstance(step, (_PassStep, _PipelinedStart)))
        self.work_bytes = max([step.output_bytes for step in self.steps if step.target in (WORK0, WORK1)]
                              + [step.move_bytes for step in self.steps if isinstance(step, _PipelinedStart)
                                 and step.move_target in (WORK0, WORK1)], default=0)
        self._work = (Workspace(device_id, options.memory_resource), Workspace(device_id, options.memory_resource))
        result_dtype = real if problem.fft_type == "C2R" else complex_
        self._allocate = operand.adapter.result_allocator(problem.result_box.shape, result_dtype, device_id,
                                                          memory_resource=options.memory_resource)
        self._streams = CallStreams(device_id, operand.adapter.current_stream)
        self._uses = {buffer for step in self.steps for buffer in (step.source, step.target,
                                                                   getattr(step, "move_target", step.target))}

    def prepare(self, operand, stream_argument) -> tuple:
        """This rank's part of a call that can fail locally (the stream, the result, the work
        buffers), done before any rank enqueues an exchange: (stream, result, pointers)."""
        stream = self._streams(stream_argument)
        result, result_pointer = self._allocate(stream, operand.obj)
        pointers = {INPUT: operand.ptr, RESULT: result_pointer}
        if WORK0 in self._uses:
            pointers[WORK0] = self._work[0].ensure(self.work_bytes, stream)
        if WORK1 in self._uses:
            pointers[WORK1] = self._work[1].ensure(self.work_bytes, stream)
        return stream, result, pointers

    def run(self, prepared: tuple, sign: int, factor: float):
        """Enqueue the passes and exchanges of a call made by :meth:`prepare`; returns its result piece."""
        stream, result, pointers = prepared
        for index, step in enumerate(self.steps):
            step.run(pointers, sign, stream, factor if index == self._last_pass else 1.0)
        if self.blocking:
            self.guard.synchronize("all_to_all", stream.handle)
        return result

    def free(self) -> None:
        for step in self.steps:
            step.free()
        self.steps = []
        for work in getattr(self, "_work", ()):
            work.release()


def _pipelined_chunks(specs, problem, dtype) -> int:
    """The chunk count of a pipelined start: only where the pipeline begins with a pass and a move
    out of that pass's slab."""
    if len(specs) < 2 or specs[0][2] is not None or specs[1][2] is None:
        return 1
    first, move = specs[0][0], specs[1][0]
    if move.source != first.split or not isinstance(first.split, SlabSplit):
        return 1
    boxes = decomposition_boxes(first.split, first.shape_out, problem.world_size)
    fewest = min(box.shape[first.split.axis] for box in boxes)
    _, _, complex_ = precision_dtypes(dtype)
    total = int(np.prod(first.shape_out)) * complex_.itemsize
    return choose_chunks(problem.world_size, fewest, total // problem.world_size, chunk_bytes=CHUNK_BYTES)
