"""The fused engine's plan of a transform over several axes: one plan per axis, run in order.

It stands where a :class:`~nvmathx._fftcore.plan.CufftPlan` would (``run``, ``free``,
``memory_bytes``). Each axis of the :class:`~nvmathx._fftcore.axis_passes.AxisPlan` is a
:class:`~nvmathx.fft._fused.FusedPlan` where its rows fit a thread block, a cuFFT plan where they do
not; the first pass carries the load callback, the last the store callback, the norm's factor and
the conjugation of ``ihfftn``.
"""

from __future__ import annotations

import math

import numpy as np

from .._core.errors import InvalidStateError, OptionsError
from .._core.memory import Workspace
from .._fftcore.axis_passes import AxisPlan
from .._fftcore.layout import C2R, INPUT, OUTPUT, SCRATCH

__all__ = ["AxisPlans"]


class AxisPlans:
    """``plans``: ``(engine, plan)`` for each pass of ``split``, in order (``"fused"`` and a
    FusedPlan, or ``"cufft"`` and a CufftPlan), and the scratch buffer of a C2R split, whose
    elements are ``complex_dtype`` (the transform's complex precision).
    """

    simple = False

    def __init__(self, split: AxisPlan, plans, device_id: int, complex_dtype, memory_resource=None):
        self.split = split
        self.engines = tuple((item.axis, engine) for item, (engine, _) in zip(split.passes, plans))
        self._plans = [plan for _, plan in plans]
        self._steps = tuple(zip(split.passes, self._plans))
        self._last = len(self._plans) - 1
        self.scratch_bytes = 0
        if split.scratch_shape is not None:  # dense
            self.scratch_bytes = math.prod(split.scratch_shape) * np.dtype(complex_dtype).itemsize
        self._scratch = Workspace(device_id, memory_resource)
        self.workspace_bytes = max((plan.workspace_bytes for plan in self._plans), default=0)
        self.memory_bytes = sum(plan.memory_bytes for plan in self._plans) + self.scratch_bytes
        self.valid = True

    def run(self, source: int, target: int, direction: int, stream, factor: float = 1.0, conj: bool = False,
            fuse: bool = False) -> None:
        """Run the passes from the operand at ``source`` into the result at ``target`` on ``stream``
        (a StreamHolder); the last pass multiplies by ``factor`` and conjugates (``conj``: the result
        of an R2C or C2C transform; a C2R of the conjugated operand is refused)."""
        if not self.valid:
            raise InvalidStateError("this transform has been freed")
        if conj and self.split.fft_type == C2R:
            raise OptionsError("plan", "the fused engine does not conjugate a C2R operand (hfftn); plan it with "
                                       "engine='cufft'")
        buffers = {INPUT: source, OUTPUT: target, SCRATCH: self._scratch.ensure(self.scratch_bytes, stream)}
        for index, (item, plan) in enumerate(self._steps):
            sign = direction if item.direction is None else item.direction
            if index == self._last:
                plan.run(buffers[item.source], buffers[item.target], sign, stream, factor, conj, fuse)
            else:
                plan.run(buffers[item.source], buffers[item.target], sign, stream)

    def free(self) -> None:
        for plan in self._plans:
            plan.free()
        self._plans, self._steps = [], ()
        self._scratch.release()
        self.valid = False
