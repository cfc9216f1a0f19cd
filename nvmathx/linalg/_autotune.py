"""Autotuning: time every candidate algorithm on the real operands (sustained runs after an L2 flush)."""

from __future__ import annotations

import statistics

from .._bindings import cublaslt as lt
from .._bindings.cuda_driver import memcpy_async
from .._core.device import ensure_device
from .._core.memory import allocate
from ._runner import GpuRunner

__all__ = ["autotune_algorithms"]


def _flusher(device_id: int, stream, memory_resource):
    """A callable that evicts L2 by copying a buffer of twice its size on ``stream``."""
    l2_bytes = int(getattr(ensure_device(device_id).properties, "l2_cache_size", 0) or 64 * 1024 * 1024)
    half = 2 * l2_bytes
    buffer = allocate(2 * half, stream, device_id, memory_resource)
    base = int(buffer.handle)

    def flush():
        memcpy_async(base + half, base, half, stream.handle)

    return flush, buffer


_ROUNDS = 3  # samples per candidate, taken round-robin so that clock and thermal drift hit all alike
# The current first choice (the heuristic's, before any autotune) stays first unless another is
# faster by more than this fraction: the minimum of noisy timings otherwise rewards noise.
_MARGIN = 0.01


def autotune_algorithms(runner: GpuRunner, stream, iterations: int) -> list[tuple[float, object]]:
    """(ms per run, algorithm) for every candidate of ``runner.plan``, fastest first.

    Each sample flushes L2, then times ``iterations`` back-to-back runs (as GEMMs run in a
    workload: sustained, so power-limited clocks count, not an isolated launch's boost); the
    time is the median over the samples. The product is written to scratch buffers, so the
    caller's arrays (``c`` included) are never written. An algorithm that fails to run is placed
    last.
    """
    from cuda.core import EventOptions

    plan = runner.plan
    core = stream.core
    timing = EventOptions(timing_enabled=True)
    flush, flush_buffer = _flusher(plan.device_id, stream, plan.options.memory_resource)
    scratch, ptr, _outputs = runner.scratch(stream)
    plan.d_ptr.value = ptr
    samples = {index: [] for index in range(len(plan.algorithms))}
    try:
        for index, algorithm in enumerate(plan.algorithms):  # warm-up; drop what cannot run
            plan.select(algorithm)
            try:
                plan.run()
            except lt.CublasLtError:
                samples[index] = None
        for _ in range(_ROUNDS):
            for index, algorithm in enumerate(plan.algorithms):
                if samples[index] is None:
                    continue
                plan.select(algorithm)
                flush()
                start = core.record(options=timing)
                for _ in range(iterations):
                    plan.run()
                end = core.record(options=timing)
                end.sync()
                samples[index].append((end - start) / iterations)
    finally:
        core.sync()
        flush_buffer.close(core)
        del scratch
    timings = [(statistics.median(samples[index]) if samples[index] else float("inf"), algorithm)
               for index, algorithm in enumerate(plan.algorithms)]
    first = timings[0][0]
    # Sort by time, the heuristic's first choice credited with the noise margin (ties keep its order).
    order = sorted(range(len(timings)), key=lambda i: timings[i][0] if i else first * (1 - _MARGIN))
    return [timings[i] for i in order]
