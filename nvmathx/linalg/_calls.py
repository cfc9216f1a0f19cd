"""A batch that one cuBLASLt call cannot cover (see :mod:`._batching`), on the runner: the byte
offsets of each call's pointers (:func:`launch_offsets`, for :meth:`GpuRunner.set_launch_offsets`)
and the inputs copied to the full batch before the calls (:class:`BatchCopies`).

Copies are refreshed on every run, since their sources may have changed in place.
"""

from __future__ import annotations

import numpy as np

from .._codegen import elementwise
from .._core.dtypes import numpy_dtype
from .._core.memory import allocate
from .._matmulcore.epilogs import RELU_AUX_NAME
from ._batching import LAUNCH_OPERANDS, aligned_strides

__all__ = ["BatchCopies", "launch_offsets", "set_up_calls"]


def _itemsizes(problem) -> dict:
    result = numpy_dtype(problem.result_dtype).itemsize
    relu = problem.epilog is not None and RELU_AUX_NAME in (problem.epilog.aux_input, problem.epilog.aux_output)
    return {"a": numpy_dtype(problem.a_dtype).itemsize, "b": numpy_dtype(problem.b_dtype).itemsize,
            "c": numpy_dtype(problem.lt_c_dtype).itemsize, "d": result, "bias": result, "bgrad": result,
            "aux": 1 if relu else result}


def launch_offsets(problem, batches) -> tuple:
    """Per call of ``batches``, the byte offset of every pointer in ``LAUNCH_OPERANDS`` order (up
    to the last one the batch moves; the runner reads the length)."""
    sizes = _itemsizes(problem)
    width = max(4, 1 + max(LAUNCH_OPERANDS.index(name) for name in batches.names))
    positions = [LAUNCH_OPERANDS.index(name) for name in batches.names]
    result = []
    for call in batches.offsets:
        entry = [0] * width
        for name, position, offset in zip(batches.names, positions, call):
            entry[position] = offset * sizes[name]
        result.append(tuple(entry))
    return tuple(result)


class _Copy:
    """One input copied to the full batch: its buffer and the copy's geometry."""

    def __init__(self, source, target, batch, stream, device_id, memory_resource):
        self.dtype = numpy_dtype(target.dtype)
        matrix_ndim = len(target.shape) - len(batch)
        own = len(source.shape) - matrix_ndim
        self.shape = target.shape
        self.source_strides = aligned_strides(batch, source.shape[:own], source.strides[:own]) + source.strides[own:]
        self.target_strides = target.strides
        self.buffer = allocate(int(np.prod(target.shape, dtype=np.int64)) * self.dtype.itemsize, stream, device_id,
                               memory_resource)
        self.ptr = int(self.buffer.handle)

    def copy(self, source: int, stream, device_id: int) -> None:
        elementwise.copy_nd(source, self.ptr, self.shape, self.source_strides, self.target_strides, self.dtype,
                            self.dtype, 1.0, False, stream, device_id)


class BatchCopies:
    """The inputs a plan reads as copies to the full batch (``traits.expansions``)."""

    def __init__(self, plan, stream):
        problem = plan.problem
        self.device_id = plan.device_id
        self.copies = {}  # position in LAUNCH_OPERANDS -> _Copy
        try:
            for name, source, target in plan.traits.expansions:
                self.copies[LAUNCH_OPERANDS.index(name)] = _Copy(source, target, problem.shape.batch_shape, stream,
                                                                 plan.device_id, plan.options.memory_resource)
        except BaseException:
            self.free(stream)
            raise

    @property
    def names(self) -> tuple:
        return tuple(LAUNCH_OPERANDS[position] for position in self.copies)

    def copy(self, sources: list, stream) -> list:
        """Copy every expanded input from its address in ``sources`` (LAUNCH_OPERANDS order) and
        return the addresses with the copies in their place."""
        bases = list(sources)
        for position, copy in self.copies.items():
            copy.copy(sources[position], stream, self.device_id)
            bases[position] = copy.ptr
        return bases

    def free(self, stream) -> None:
        for copy in self.copies.values():
            copy.buffer.close(stream.core if stream is not None else None)
        self.copies = {}


def set_up_calls(runner, stream) -> None:
    """Give ``runner`` the launch offsets and copies of its plan's batch, where it needs more than
    one cuBLASLt call on the operands as they are."""
    plan = runner.plan
    batches = plan.traits.batches
    if batches is None or batches.single:
        return
    copies = BatchCopies(plan, stream) if plan.traits.expansions else None
    runner.set_launch_offsets(launch_offsets(plan.problem, batches), copies)
