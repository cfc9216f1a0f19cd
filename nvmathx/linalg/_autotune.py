"""Autotuning: time every candidate algorithm on the real operands, L2 flushed between runs."""

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


def autotune_algorithms(runner: GpuRunner, stream, iterations: int) -> list[tuple[float, object]]:
    """(median ms, algorithm) for every candidate of ``runner.plan``, fastest first.

    The product is written to scratch buffers, so the caller's arrays (``c`` included) are never
    written. An algorithm that fails to run is placed last.
    """
    from cuda.core import EventOptions

    plan = runner.plan
    core = stream.core
    timing = EventOptions(timing_enabled=True)
    flush, flush_buffer = _flusher(plan.device_id, stream, plan.options.memory_resource)
    scratch, ptr, _outputs = runner.scratch(stream)
    plan.d_ptr.value = ptr
    timings = []
    try:
        for algorithm in plan.algorithms:
            plan.select(algorithm)
            samples = []
            try:
                plan.run()  # warm-up
                for _ in range(iterations):
                    flush()
                    start = core.record(options=timing)
                    plan.run()
                    end = core.record(options=timing)
                    end.sync()
                    samples.append(end - start)
            except lt.CublasLtError:
                samples = [float("inf")]
            timings.append((statistics.median(samples), algorithm))
    finally:
        core.sync()
        flush_buffer.close(core)
        del scratch
    timings.sort(key=lambda pair: pair[0])
    return timings
