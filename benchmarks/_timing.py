"""Timers: GPU time from CUDA events, host time per call, wall seconds. Each returns a median."""

from __future__ import annotations

import statistics
import time
from typing import Callable, Sequence

__all__ = ["gpu_time_ms", "gpu_time_ms_interleaved", "host_us_per_call", "host_us_per_call_interleaved",
           "wall_seconds", "as_rotation", "timing_stream"]

# One timed measurement should not take much longer than this, whatever the defaults ask for.
_BUDGET_S = 2.0


def as_rotation(target) -> list[Callable[[], object]]:
    """A setup's result as a non-empty list of zero-argument callables."""
    functions = list(target) if isinstance(target, (list, tuple)) else [target]
    if not functions or not all(callable(function) for function in functions):
        raise TypeError(f"a setup must return a callable or a list of callables (got {type(target).__name__})")
    return functions


def _caller(functions: Sequence[Callable[[], object]]) -> Callable[[int], object]:
    if len(functions) == 1:
        (only,) = functions
        return lambda index: only()
    count = len(functions)
    return lambda index: functions[index % count]()


def timing_stream(stream=None, device_id: int = 0):
    """The cuda.core stream that timing events go on.

    ``None`` is cuda.core's legacy default stream, which torch's and cupy's current stream is
    unless changed, and which orders against every blocking stream. Anything else goes through
    ``resolve_stream`` (torch, cupy, cuda.core streams or raw handles). Objects that already have
    cuda.core's ``record`` and ``sync`` are used as they are.
    """
    if stream is None:
        from cuda.core import LEGACY_DEFAULT_STREAM

        from nvmathx._core.device import ensure_device

        ensure_device(device_id)  # events on a default stream belong to the current context
        return LEGACY_DEFAULT_STREAM
    if hasattr(stream, "record") and hasattr(stream, "sync"):
        return stream
    from nvmathx._core.streams import resolve_stream

    return resolve_stream(stream, device_id).core


def _timing_events(stream, count: int) -> list:
    from cuda.core import EventOptions

    options = EventOptions(timing_enabled=True)
    return [stream.record(options=options) for _ in range(count)]


def _event_pairs_ms(stream, call, starts, ends, offset: int) -> list[float]:
    for index, (start, end) in enumerate(zip(starts, ends)):
        stream.record(start)
        call(offset + index)
        stream.record(end)
    ends[-1].sync()
    return [end - start for start, end in zip(starts, ends)]


def _round_order(names: list, round_index: int, rounds: int) -> list:
    """``names`` rotated so that over ``rounds`` rounds every library starts at evenly spread
    positions: none is always timed first, nor always early in a long list."""
    step = max(1, -(-len(names) // max(rounds, 1)))
    shift = (round_index * step) % len(names)
    return names[shift:] + names[:shift]


def _probe_ms(stream, launch) -> float:
    """GPU time of one ``launch()`` between a pair of events (at least 1 ns)."""
    start, end = _timing_events(stream, 2)
    stream.record(start)
    launch()
    stream.record(end)
    end.sync()
    return max(end - start, 1e-6)


def _affordable_repeats(probe_ms: float, repeats: int) -> int:
    """``repeats``, fewer when calls of ``probe_ms`` would take more than the budget (never fewer than 3)."""
    return max(3, min(repeats, int(_BUDGET_S * 1e3 / probe_ms)))


def gpu_time_ms(fn, *, warmup: int = 10, repeats: int = 50, stream=None, device_id: int = 0,
                warmup_ms: float = 0.0) -> float:
    """Median GPU time of one call, in milliseconds, from CUDA timing events.

    Parameters
    ----------
    fn : callable or list of callables
        Launches the work (asynchronously); a list is rotated over, one element per call.
    warmup : int
        Untimed calls first (after which the stream is synchronised).
    warmup_ms : float
        Keep making untimed calls until at least this much wall time has passed as well, so the
        GPU's clocks have ramped up from idle before timing (otherwise whichever library is
        timed first after a pause is measured at lower clocks).
    repeats : int
        Timed calls, each between its own pair of events; fewer when one call is slow enough
        that ``repeats`` would exceed about two seconds (never fewer than 3).
    stream : optional
        Where the events are recorded; see :func:`timing_stream`.
    """
    call = _caller(as_rotation(fn))
    stream = timing_stream(stream, device_id)
    stream.sync()
    index = 0
    deadline = time.perf_counter() + warmup_ms / 1e3
    while index < max(warmup, 1) or time.perf_counter() < deadline:
        call(index)
        index += 1
        if index % 8 == 0:
            stream.sync()  # keep the queue short, so that wall time tracks GPU time
    warmup = index
    repeats = _affordable_repeats(_probe_ms(stream, lambda: call(0)), repeats)
    starts = _timing_events(stream, repeats)
    ends = _timing_events(stream, repeats)
    stream.sync()
    return statistics.median(_event_pairs_ms(stream, call, starts, ends, warmup))


def gpu_time_ms_interleaved(targets: dict, *, warmup: int = 10, repeats: int = 50, rounds: int = 5, stream=None,
                            device_id: int = 0, warmup_ms: float = 0.0, lockstep: bool = False) -> dict:
    """:func:`gpu_time_ms` for several libraries at once, their timed calls interleaved.

    Every library is warmed up (``warmup`` calls each), then all of them run in turn for at least
    ``warmup_ms`` more, so that the clocks have ramped up. The timed calls come in ``rounds``
    rounds; each round times a share of every library's calls, the order rotating from round to
    round, so that a drift of the GPU's clocks (power or thermal limits, another tenant) falls on
    all libraries alike instead of on whichever was timed first or last. Each call sits between
    its own pair of events; a library's time is the median over all its calls.

    Parameters
    ----------
    targets : dict
        Library name -> callable or list of callables (see :func:`as_rotation`).

    lockstep : bool
        Every process makes the same number of calls in the same order, decided by counts alone
        (no warm-up by wall time, no repeats cut to a time budget): for collective calls across
        the ranks of a distributed run, where one rank calling once more than another would hang.

    Returns
    -------
    dict
        Library name -> median milliseconds per call.
    """
    calls = {name: _caller(as_rotation(target)) for name, target in targets.items()}
    names = list(calls)
    stream = timing_stream(stream, device_id)
    stream.sync()
    index = {name: 0 for name in names}

    def run(name, count):
        call = calls[name]
        for _ in range(count):
            call(index[name])
            index[name] += 1

    for name in names:
        run(name, max(warmup, 1))
        stream.sync()
    deadline = time.perf_counter() + (0 if lockstep else warmup_ms / 1e3)
    while time.perf_counter() < deadline:
        for name in names:
            run(name, 4)
            stream.sync()  # keep the queue short, so that wall time tracks GPU time
    counts = {}
    for name in names:
        total = repeats if lockstep else _affordable_repeats(_probe_ms(stream, lambda: run(name, 1)), repeats)
        counts[name] = max(1, -(-total // max(rounds, 1)))
    samples = {name: [] for name in names}
    for round_index in range(max(rounds, 1)):
        for name in _round_order(names, round_index, rounds):
            starts = _timing_events(stream, counts[name])
            ends = _timing_events(stream, counts[name])
            stream.sync()
            samples[name] += _event_pairs_ms(stream, calls[name], starts, ends, index[name])
            index[name] += counts[name]
    return {name: statistics.median(values) for name, values in samples.items()}


def _loop_seconds(call, iterations: int, sync) -> float:
    start = time.perf_counter()
    for index in range(iterations):
        call(index)
    if sync is not None:
        sync()
    return time.perf_counter() - start


def host_us_per_call(fn, *, iterations: int = 2000, loops: int = 5, sync=None) -> float:
    """Median host time per call, in microseconds, of loops synchronised once at their end.

    Parameters
    ----------
    fn : callable or list of callables
        The call to measure; a list is rotated over.
    iterations : int
        Calls per loop; fewer when one call is slow enough that the loops would exceed about two
        seconds (never fewer than 10).
    loops : int
        Timed loops; the median loop is reported.
    sync : callable, optional
        Waits for the GPU (inside the timed region, once per loop); ``None`` for host-only work.
    """
    call = _caller(as_rotation(fn))
    warmup = max(10, min(iterations // 10, 200))
    per_call = _loop_seconds(call, warmup, sync) / warmup
    iterations = max(10, min(iterations, int(_BUDGET_S / max(loops, 1) / max(per_call, 1e-9))))
    samples = [_loop_seconds(call, iterations, sync) for _ in range(max(loops, 1))]
    return statistics.median(samples) / iterations * 1e6


def host_us_per_call_interleaved(targets: dict, *, iterations: int = 2000, loops: int = 5, sync=None,
                                 min_warmup_s: float = 0.2) -> dict:
    """:func:`host_us_per_call` for several libraries at once, their loops interleaved.

    Each round times one loop of every library, in an order that rotates from round to round, so
    that a drift of the host's speed (clock boost, another process) falls on all of them alike
    instead of on whichever was timed first. Every library first runs untimed for at least
    ``min_warmup_s`` seconds.

    Parameters
    ----------
    targets : dict
        Library name -> callable or list of callables (see :func:`as_rotation`).

    Returns
    -------
    dict
        Library name -> median microseconds per call.
    """
    calls = {name: _caller(as_rotation(target)) for name, target in targets.items()}
    counts = {}
    for name, call in calls.items():
        done, start = 0, time.perf_counter()
        while done < 10 or time.perf_counter() - start < min_warmup_s:
            _loop_seconds(call, 10, sync)
            done += 10
        per_call = (time.perf_counter() - start) / done
        budget_per_loop = _BUDGET_S / max(loops, 1) / max(len(calls), 1)
        counts[name] = max(10, min(iterations, int(budget_per_loop / max(per_call, 1e-9))))
    samples = {name: [] for name in calls}
    names = list(calls)
    for round_index in range(max(loops, 1)):
        for name in _round_order(names, round_index, loops):
            samples[name].append(_loop_seconds(calls[name], counts[name], sync) / counts[name])
    return {name: statistics.median(values) * 1e6 for name, values in samples.items()}


def wall_seconds(fn, *, repeats: int = 3, warmup: int = 0) -> float:
    """Median wall time of whole calls, in seconds (e.g. a subprocess).

    A call that returns a number returns the seconds it measured itself, and that number is the
    sample: a subprocess that reports when its work finished, so that its exit (freeing device
    memory, destroying the context) is not counted.
    """
    call = _caller(as_rotation(fn))
    for index in range(warmup):
        call(index)
    samples = []
    for index in range(max(repeats, 1)):
        start = time.perf_counter()
        measured = call(index)
        elapsed = time.perf_counter() - start
        samples.append(float(measured) if isinstance(measured, (int, float)) and not isinstance(measured, bool)
                       else elapsed)
    return statistics.median(samples)
