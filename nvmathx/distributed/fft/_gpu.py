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
from ..._core.memory import Workspace
from ..._core.streams import CallStreams
from ..._core.tensor import c_strides
from ...fft._cufft_plan import CufftPlan, precision_dtypes
from ...fft._gpu import real_input_aligned
from ...fft._layout import plan_layout
from .._device_exchange import DeviceExchange
from .._exchange_plan import plan_exchange
from ._algorithm import LocalPass, decomposition_boxes

__all__ = ["GpuPipeline", "assign_buffers", "INPUT", "RESULT", "WORK0", "WORK1"]

INPUT, RESULT, WORK0, WORK1 = "input", "result", "work0", "work1"


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


class GpuPipeline:
    """One distributed transform on this rank's GPU: planned once, run on any stream."""

    def __init__(self, problem, context, operand, options, stream_argument=None):
        self.problem = problem
        self.device_id = device_id = context.device_id
        self.blocking = options.blocking is True
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
        self.steps = []
        self._work = ()
        try:
            for (stage, element, exchange), (source, target) in zip(specs, assign_buffers(kinds)):
                if exchange is not None:
                    self.steps.append(_MoveStep(exchange, source, target))
                    continue
                aligned = source != INPUT or real_input_aligned(stage.fft_type, operand.ptr, element.itemsize)
                self.steps.append(_PassStep(stage, problem, source, target, element, device_id,
                                            options.memory_resource, aligned))
        except BaseException:
            self.free()
            raise
        self._last_pass = max(i for i, step in enumerate(self.steps) if isinstance(step, _PassStep))
        self.work_bytes = max((step.output_bytes for step in self.steps if step.target in (WORK0, WORK1)), default=0)
        self._work = (Workspace(device_id, options.memory_resource), Workspace(device_id, options.memory_resource))
        result_dtype = real if problem.fft_type == "C2R" else complex_
        self._allocate = operand.adapter.result_allocator(problem.result_box.shape, result_dtype, device_id,
                                                          memory_resource=options.memory_resource)
        self._streams = CallStreams(device_id, operand.adapter.current_stream)
        self._uses = {buffer for step in self.steps for buffer in (step.source, step.target)}

    def execute(self, operand, stream_argument, sign: int, factor: float):
        """This rank's result piece (the operand's kind of array), enqueued on the call's stream."""
        stream = self._streams(stream_argument)
        result, result_pointer = self._allocate(stream, operand.obj)
        pointers = {INPUT: operand.ptr, RESULT: result_pointer}
        if WORK0 in self._uses:
            pointers[WORK0] = self._work[0].ensure(self.work_bytes, stream)
        if WORK1 in self._uses:
            pointers[WORK1] = self._work[1].ensure(self.work_bytes, stream)
        for index, step in enumerate(self.steps):
            step.run(pointers, sign, stream, factor if index == self._last_pass else 1.0)
        if self.blocking:
            cuda_driver.stream_synchronize(stream.handle)
        return result

    def free(self) -> None:
        for step in self.steps:
            step.free()
        self.steps = []
        for work in getattr(self, "_work", ()):
            work.release()
