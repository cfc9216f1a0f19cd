"""Autotuning: time every candidate algorithm on the real operands in sustained, interleaved
samples and order the candidates by those times."""

from __future__ import annotations

import math
import statistics
import time

from .._bindings import cublaslt as lt
from .._bindings import cuda_driver
from .._core import device
from .._core.autotune_cache import store as autotune_store
from .._core.errors import OperandError
from .._core.logs import timed_step
from .._core.memory import allocate
from ._cublaslt_plan import MatmulAlgorithm
from ._runner import GpuRunner

__all__ = ["autotune_algorithms", "autotune_key", "sample_runs", "rank"]


def _flusher(device_id: int, stream, memory_resource):
    """A callable that evicts L2 by copying a buffer of twice its size on ``stream``."""
    l2_bytes = int(getattr(device.ensure_device(device_id).properties, "l2_cache_size", 0) or 64 * 1024 * 1024)
    half = 2 * l2_bytes
    buffer = allocate(2 * half, stream, device_id, memory_resource)
    base = int(buffer.handle)

    def flush():
        cuda_driver.memcpy_async(base + half, base, half, stream.handle)

    return flush, buffer


# Samples per candidate, taken round-robin (the order rotating) so that clock and thermal drift hit
# all alike; a candidate's time is the median of its samples.
_ROUNDS = 5
# A sample runs back-to-back for about this long: long enough for power-limited clocks to settle, as
# they do in a workload (a short burst runs at boost clocks and ranks kernels otherwise).
_SAMPLE_MS = 20.0
_MAX_SAMPLE_RUNS = 200


# Sustained work before any timing: GPU clocks ramp up from idle over a fraction of a second, and a
# candidate timed during the ramp looks slower than it is.
_SUSTAIN_S = 0.3


def _sustain(runner, algorithm, core) -> None:
    """Run ``algorithm`` back to back for about ``_SUSTAIN_S`` seconds of wall time."""
    runner.select(algorithm)
    deadline = time.perf_counter() + _SUSTAIN_S
    runs = 0
    while time.perf_counter() < deadline:
        runner.launch()
        runs += 1
        if runs % 8 == 0:
            core.sync()  # keep the queue short, so that wall time tracks GPU time
    core.sync()


def sample_runs(iterations: int, probe_ms: float) -> int:
    """Runs per sample: about ``_SAMPLE_MS`` of work, never fewer than ``iterations``."""
    if not math.isfinite(probe_ms) or probe_ms <= 0:
        return iterations
    return max(iterations, min(_MAX_SAMPLE_RUNS, math.ceil(_SAMPLE_MS / probe_ms)))


def rank(times: dict[int, float]) -> list[int]:
    """Indices sorted by time; ties keep index order (the heuristic's preference)."""
    return sorted(times, key=lambda i: (times[i], i))


def autotune_algorithms(runner: GpuRunner, stream, iterations: int) -> list[tuple[float, MatmulAlgorithm]]:
    """(ms per run, algorithm) for every candidate of ``runner``, fastest first: from the autotune
    cache where it holds this problem and cuBLASLt accepts what it holds
    (:mod:`nvmathx.autotune_cache`), else timed (:func:`_timed_candidates`, logged at INFO when it
    starts and ends) and recorded there."""
    key = autotune_key(runner) if autotune_store.active else None
    if key is not None:
        stored = _stored_timings(runner, key)
        if stored is not None:
            return stored
    with timed_step(f"autotuning {len(runner.algorithms)} cuBLASLt candidate(s)"):
        timings = _timed_candidates(runner, stream, iterations)
    if key is not None:
        autotune_store.record(key, [{"algo": algorithm.algo.hex(), "ms": ms if math.isfinite(ms) else None}
                                    for ms, algorithm in timings])
    return timings


def autotune_key(runner: GpuRunner) -> dict:
    """Everything an autotuning's outcome depends on: the machine (GPU model, SM count, driver,
    cuBLASLt), the planned problem and its cuBLASLt layouts (shapes, strides, dtypes, compute and
    scale types, epilog, alignments), the options (workspace limit included) and the candidates
    the heuristic offered (which the plan preferences decide), each by its configuration: the
    opaque ``cublasLtMatmulAlgo_t`` bytes of one algorithm differ between processes."""
    plan = runner.plan
    properties = device.device_properties(plan.device_id)
    return {"gpu": properties["name"], "sm_count": properties["multiprocessor_count"],
            "driver": cuda_driver.driver_version(), "cublaslt": lt.get_version(),
            "problem": repr(plan.problem), "layouts": repr(plan.traits),
            "options": [plan.options.compute_type, plan.options.scale_type, plan.options.sm_count_target,
                        plan.options.fast_accumulation, plan.options.workspace_limit],
            "candidates": [list(algorithm.config) or algorithm.algo.hex() for algorithm in runner.algorithms]}


def _stored_timings(runner: GpuRunner, key: dict) -> list[tuple[float, MatmulAlgorithm]] | None:
    """The stored outcome for ``key``, each algorithm re-checked by cuBLASLt for this plan; None
    (and the entry dropped) when one is refused or none is stored."""
    entries = autotune_store.lookup(key)
    if entries is None:
        return None
    timings = []
    for entry in entries:
        try:
            algorithm = runner.plan.check_algorithms([MatmulAlgorithm(bytes.fromhex(entry["algo"]), 0, 0.0)])[0]
        except (OperandError, KeyError, TypeError, ValueError):
            autotune_store.reject(key)
            return None
        timings.append((math.inf if entry.get("ms") is None else float(entry["ms"]), algorithm))
    return timings


def _timed_candidates(runner: GpuRunner, stream, iterations: int) -> list[tuple[float, MatmulAlgorithm]]:
    """(ms per run, algorithm) for every candidate of ``runner``, fastest first.

    The list is sorted by the reported times (ties keep the heuristic's order); an algorithm that
    fails to run is reported with ``inf`` and placed last. First the heuristic's first usable
    candidate runs back to back for about 0.3 s, so that no timing is taken while the GPU's clocks
    ramp up; a probe of ``iterations`` runs per candidate sizes the samples. Then every candidate
    is timed in ``_ROUNDS`` samples, each flushing L2 and running back to back for about
    ``_SAMPLE_MS`` (at least ``iterations`` runs), the candidates interleaved in a rotating order;
    a candidate's time is the median of its samples. The product is written to scratch buffers:
    the caller's arrays (``c`` included) are never written.
    """
    from cuda.core import EventOptions

    plan = runner.plan
    core = stream.core
    timing = EventOptions(timing_enabled=True)
    flush, flush_buffer = _flusher(plan.device_id, stream, plan.options.memory_resource)
    scratch = runner.scratch(stream)
    algorithms = runner.algorithms
    times = {index: math.inf for index in range(len(algorithms))}

    def timed(indices, runs, rounds) -> dict[int, float]:
        samples: dict[int, list[float]] = {index: [] for index in indices}
        failed: set[int] = set()
        step = -(-len(indices) // rounds)  # spread each candidate's position over the rounds
        for round_ in range(rounds):
            shift = (round_ * step) % max(len(indices), 1)
            for index in indices[shift:] + indices[:shift]:
                if index in failed:
                    continue
                runner.select(algorithms[index])
                flush()
                start = core.record(options=timing)
                try:
                    for _ in range(runs):
                        runner.launch()
                except lt.CublasLtError:
                    failed.add(index)
                    continue
                end = core.record(options=timing)
                end.sync()
                samples[index].append((end - start) / runs)
        return {index: statistics.median(values) if values and index not in failed else math.inf
                for index, values in samples.items()}

    try:
        usable = []
        for index, algorithm in enumerate(algorithms):  # warm-up; drop what cannot run
            runner.select(algorithm)
            try:
                runner.launch()
                usable.append(index)
            except lt.CublasLtError:
                pass
        if usable:
            _sustain(runner, algorithms[usable[0]], core)
            probe = timed(usable, iterations, 1)
            usable = [index for index in usable if math.isfinite(probe[index])]
            runs = sample_runs(iterations, min(probe.values()))
            times.update(timed(usable, runs, _ROUNDS))
    finally:
        core.sync()
        flush_buffer.close(core)
        del scratch
    return [(times[index], algorithms[index]) for index in rank(times)]
