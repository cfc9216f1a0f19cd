"""Planning on the GPU: traits, descriptors, algorithms, workspace, and the bound runner."""

from __future__ import annotations

from .._core.logs import get_logger
from ._cublaslt_plan import LtPlan
from ._operands import info
from ._runner import GpuRunner
from ._traits import lt_traits

__all__ = ["build_runner"]


def build_runner(problem, operands: dict, inputs: dict, options, preferences, algorithms, stream, host_like, device_id,
                 keep: int | None = None) -> GpuRunner:
    """A GpuRunner for device operands (everything it allocated is released if a step fails).

    ``keep`` limits the candidates kept (and so the workspace allocated) to the best ``keep``.
    """
    a, b, c = operands["a"], operands["b"], operands["c"]
    pointers = {"a": a.ptr, "b": b.ptr, "c": c.ptr if c is not None else 0}
    if "bias" in inputs:
        pointers["bias"] = inputs["bias"].ptr
    traits = lt_traits(problem, info(a), info(b), info(c), {name: info(op) for name, op in inputs.items()}, pointers)
    if problem.shape.batch_shape:
        get_logger(options.logger).debug("matmul batch %s: %s", problem.shape.batch_shape, traits.batches.summary())
    plan = LtPlan.create(problem, traits, device_id, options)
    try:
        runner = GpuRunner(plan, a, stream, host_like, options.blocking is True)
        runner.bind(a, b, c, inputs)  # real input pointers first: the heuristic reads their alignment
        found = plan.check_algorithms(algorithms) if algorithms is not None else plan.find_algorithms(preferences)
        plan.prepare(found[:keep], stream)
    except BaseException:
        plan.free()
        raise
    return runner
