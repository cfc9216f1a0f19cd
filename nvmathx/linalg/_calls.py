"""A batch that one cuBLASLt call cannot cover (see :mod:`._batching`): the calls of one plan at
their pointer offsets, after the inputs planned as full-batch copies are copied.

The runner holds a :class:`BatchCalls` only for such batches; a batch of one call never meets it.
Base pointers are read when the calls run: ``a``, ``b`` and ``c`` from the plan's pointer slots
(which the caller set for this call), epilog inputs from the runner's bound operands, outputs
from the runner's latest allocation. Copies are refreshed on every run, since their sources may
have changed in place.
"""

from __future__ import annotations

import numpy as np

from .._bindings import cublaslt as lt
from .._core.dtypes import numpy_dtype
from .._core.memory import allocate
from ._batching import aligned_strides

__all__ = ["BatchCalls"]

_D = lt.MatmulDescAttribute
# Plan slots of the user's operands (cuBLASLt's A is the user's b) and descriptor pointers of the rest.
_SLOTS = {"a": "b_ptr", "b": "a_ptr", "c": "c_ptr", "d": "d_ptr"}
_ATTRIBUTES = {"bias": _D.BIAS_POINTER, "aux": _D.EPILOGUE_AUX_POINTER, "bgrad": _D.BIAS_POINTER}


def _itemsizes(problem) -> dict:
    result = numpy_dtype(problem.result_dtype).itemsize
    relu = problem.epilog is not None and "relu_aux" in (problem.epilog.aux_input, problem.epilog.aux_output)
    return {"a": numpy_dtype(problem.a_dtype).itemsize, "b": numpy_dtype(problem.b_dtype).itemsize,
            "c": numpy_dtype(problem.lt_c_dtype).itemsize, "d": result, "bias": result, "bgrad": result,
            "aux": 1 if relu else result}


class _Expansion:
    """One input copied to the full batch before the calls: its buffer and the copy's geometry."""

    def __init__(self, name, source, target, batch, stream, device_id, memory_resource):
        self.name = name
        self.dtype = numpy_dtype(target.dtype)
        matrix_ndim = len(target.shape) - len(batch)
        own = len(source.shape) - matrix_ndim
        self.shape = target.shape
        self.source_strides = aligned_strides(batch, source.shape[:own], source.strides[:own]) + source.strides[own:]
        self.target_strides = target.strides
        self.buffer = allocate(int(np.prod(target.shape, dtype=np.int64)) * self.dtype.itemsize, stream, device_id,
                               memory_resource)
        self.ptr = int(self.buffer.handle)
        self.source = 0  # the address last copied from

    def copy(self, source: int, stream, device_id: int) -> None:
        from ..fft import _kernels

        self.source = source
        _kernels.copy_nd(source, self.ptr, self.shape, self.source_strides, self.target_strides, self.dtype, self.dtype,
                         1.0, False, stream, device_id)


class BatchCalls:
    """The calls of one plan over a batch: byte offsets per call, and the copies made first."""

    def __init__(self, plan, stream, memory_resource):
        traits, problem = plan.traits, plan.problem
        batches = traits.batches
        sizes = _itemsizes(problem)
        self.device_id = plan.device_id
        self.names = batches.names
        # Per call, the byte offset of every operand, in ``names`` order.
        self.offsets = tuple(tuple(offset * sizes[name] for name, offset in zip(batches.names, call))
                             for call in batches.offsets)
        self.expansions = {}
        try:
            for name, source, target in traits.expansions:
                self.expansions[name] = _Expansion(name, source, target, problem.shape.batch_shape, stream,
                                                   plan.device_id, memory_resource)
        except BaseException:
            self.free(stream)
            raise
        epilog = problem.epilog
        self.aux_input = epilog.aux_input if epilog is not None else None
        self.outputs = {"aux": epilog.aux_output, "bgrad": epilog.bgrad} if epilog is not None else {}

    def _bases(self, plan, runner) -> dict:
        """The address of element 0 of every operand for this run (before any copy)."""
        bases = {}
        for name in self.names:
            if name in _SLOTS:
                value = getattr(plan, _SLOTS[name]).value or 0
                expansion = self.expansions.get(name)
                if expansion is not None and value == expansion.ptr:  # still pointed at the copy: same source
                    value = expansion.source
                bases[name] = value
            elif name == "bias":
                bases[name] = runner.kept["bias"].ptr
            elif name == "aux" and self.aux_input:
                bases[name] = runner.kept[self.aux_input].ptr
            else:  # an output: the aux buffer or the bias gradient
                bases[name] = runner.output_pointers[self.outputs[name]]
        return bases

    def _expand(self, bases: dict, stream) -> None:
        for name, expansion in self.expansions.items():
            expansion.copy(bases[name], stream, self.device_id)
            bases[name] = expansion.ptr

    def _point(self, plan, bases: dict, offsets) -> None:
        for name, offset in zip(self.names, offsets):
            if name in _SLOTS:
                getattr(plan, _SLOTS[name]).value = bases[name] + offset or None
            else:
                plan.set_pointer(_ATTRIBUTES[name], bases[name] + offset)

    def run(self, plan, runner, stream) -> None:
        """Copy the expanded inputs, then one cuBLASLt call per entry of ``offsets``.

        Afterwards the plan points at the first call's operands (the copies where expanded), so
        that a later single call (autotune) reads valid memory.
        """
        bases = self._bases(plan, runner)
        self._expand(bases, stream)
        try:
            for offsets in self.offsets:
                self._point(plan, bases, offsets)
                plan.run()
        finally:
            self._point(plan, bases, (0,) * len(self.names))

    def prepare_single(self, plan, runner, stream) -> None:
        """Copy the expanded inputs and point the plan at the first call (for autotune's timing)."""
        bases = self._bases(plan, runner)
        self._expand(bases, stream)
        self._point(plan, bases, (0,) * len(self.names))

    def free(self, stream) -> None:
        for expansion in self.expansions.values():
            expansion.buffer.close(stream.core)
        self.expansions = {}
