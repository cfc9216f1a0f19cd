"""Planning on the GPU: traits, descriptors, algorithms, workspace, and the bound runner."""

from __future__ import annotations

from typing import Union

from .._core.errors import OperandError
from .._core.logs import get_logger
from ._calls import set_up_calls
from ._cublaslt_plan import LtPlan, MatmulAlgorithm
from ._degenerate import DegenerateRunner
from ._operands import info
from ._runner import GpuRunner
from ._traits import lt_traits

__all__ = ["build_runner"]

Runner = Union[GpuRunner, DegenerateRunner]
"""What runs a planned matmul on the device: cuBLASLt's, or the one for an extent of 0."""


def build_runner(problem, operands: dict, inputs: dict, *, options, preferences, stream, alpha, beta, scales: dict,
                 algorithms=None, host_like=None, keep: int | None = None) -> Runner:
    """A GpuRunner for device operands, ready to run: candidates found (or ``algorithms`` checked),
    workspace allocated on ``stream``, alpha, beta and float8 scales written. Everything it
    allocated is released if a step fails.

    ``operands`` maps ``"a"``, ``"b"``, ``"c"`` to device Operands (c may be None), ``inputs`` the
    epilog inputs; ``keep`` limits the candidates kept (and so the workspace allocated) to the
    best ``keep``. A problem with an extent of 0 gets a :class:`DegenerateRunner` (no cuBLASLt, no
    algorithms: ``algorithms`` and ``preferences`` have nothing to choose).
    """
    a, b, c = operands["a"], operands["b"], operands["c"]
    if problem.degenerate:
        _check_algorithm_types(algorithms)
        return _degenerate_runner(problem, operands, inputs, options=options, stream=stream, beta=beta,
                                  scales=scales, host_like=host_like)
    pointers = {"a": a.ptr, "b": b.ptr, "c": c.ptr if c is not None else 0}
    if "bias" in inputs:
        pointers["bias"] = inputs["bias"].ptr
    traits = lt_traits(problem, info(a), info(b), info(c), {name: info(op) for name, op in inputs.items()}, pointers)
    if problem.shape.batch_shape:
        get_logger(options.logger).debug("matmul batch %s: %s", problem.shape.batch_shape, traits.batches.summary())
    plan = LtPlan.create(problem, traits, stream.device_id, options)
    try:
        runner = GpuRunner(plan, a, stream, host_like=host_like, blocking=options.blocking is True)
    except BaseException:
        plan.free()
        raise
    try:
        set_up_calls(runner, stream)
        runner.bind(a, b, c, inputs)  # real input pointers first: the heuristic reads their alignment
        found = plan.check_algorithms(algorithms) if algorithms is not None else plan.find_algorithms(preferences)
        runner.prepare(found[:keep])
        runner.set_scalars(alpha, beta)
        runner.set_scales(scales)
    except BaseException:
        runner.free()
        raise
    return runner


def _degenerate_runner(problem, operands: dict, inputs: dict, *, options, stream, beta, scales: dict,
                       host_like) -> DegenerateRunner:
    infos = {name: info(operand) for name, operand in {**operands, **inputs}.items()}
    get_logger(options.logger).debug("matmul with an extent of 0 (M, N, K or batch): no cuBLASLt call")
    runner = DegenerateRunner(problem, infos, operands["a"], stream, device_id=stream.device_id,
                              memory_resource=options.memory_resource, host_like=host_like,
                              blocking=options.blocking is True)
    runner.bind(operands["a"], operands["b"], operands["c"], inputs)
    runner.set_scalars(1, beta)
    runner.set_scales(scales)
    return runner


def _check_algorithm_types(algorithms) -> None:
    """What a plan with nothing to choose still checks of ``algorithms``: that it holds MatmulAlgorithms."""
    for index, algorithm in enumerate(algorithms or ()):
        if not isinstance(algorithm, MatmulAlgorithm):
            raise OperandError("algorithms", f"item {index} is a {type(algorithm).__name__}, not a MatmulAlgorithm")
