"""Run a suite's cases, one library at a time, into the fixed result format."""

from __future__ import annotations

import fnmatch
import gc
import importlib
import pkgutil
import sys
import time

from ._case import KNOWN_PEERS, Case, Skip
from ._context import Context
from ._environment import collect_versions, describe_device, utc_now
from ._timing import (
    as_rotation,
    gpu_time_ms,
    gpu_time_ms_interleaved,
    host_us_per_call,
    host_us_per_call_interleaved,
    wall_seconds,
)

# GPU timing starts after this much sustained work, so that nothing is measured while the clocks
# ramp up from idle (seen on the H200: the first library timed in a case ran up to 15% slower than
# the same kernel timed later).
GPU_WARMUP_MS = 300.0

__all__ = [
    "available_suites",
    "load_suite",
    "select_cases",
    "libraries_to_run",
    "measure",
    "run_case",
    "run_cases",
    "run_suite",
]

_ERROR_CHARS = 300


def available_suites() -> list[str]:
    """Names of the modules in ``benchmarks/suites`` (without importing them)."""
    from . import suites

    return sorted(info.name for info in pkgutil.iter_modules(suites.__path__) if not info.name.startswith("_"))


def load_suite(name: str):
    """Import ``benchmarks.suites.<name>``.

    Raises
    ------
    ValueError
        For a name that is not one of :func:`available_suites`.
    """
    known = available_suites()
    if name not in known:
        raise ValueError(f"unknown suite {name!r}; available suites: {', '.join(known) or '(none)'}")
    module = importlib.import_module(f"benchmarks.suites.{name}")
    if not callable(getattr(module, "cases", None)):
        raise ValueError(f"suite {name!r} has no cases(ctx) function")
    return module


def select_cases(cases: list[Case], patterns, has_gpu: bool) -> tuple[list[Case], list[str]]:
    """Cases matching any of the shell-style ``patterns`` (all when none) that can run here.

    Returns the cases to run and the names of those left out for want of a GPU.

    Raises
    ------
    ValueError
        For two cases with the same name.
    """
    names = [case.name for case in cases]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ValueError(f"duplicate case names: {', '.join(duplicates)}")
    if patterns:
        cases = [case for case in cases if any(fnmatch.fnmatchcase(case.name, p) for p in patterns)]
    runnable = [case for case in cases if has_gpu or not case.gpu]
    no_gpu = [case.name for case in cases if case.gpu and not has_gpu]
    return runnable, no_gpu


def libraries_to_run(case: Case, peers) -> list[str]:
    """nvmathx, then the selected peers, then the case's other columns, in that order."""
    order = ["nvmathx", *(peer for peer in KNOWN_PEERS if peer in peers)]
    extra = [name for name in case.setups if name not in KNOWN_PEERS and name != "nvmathx"]
    return [name for name in order if name in case.setups] + extra


def measure(case: Case, target, ctx: Context) -> float:
    """Time ``target`` (a setup's result) in ``case.unit``."""
    functions = as_rotation(target)
    if case.unit == "ms":
        options = {"warmup": case.warmup, "repeats": case.repeats, "warmup_ms": GPU_WARMUP_MS}
        options = {key: value for key, value in options.items() if value is not None}
        return gpu_time_ms(functions, stream=case.stream, device_id=ctx.device_id, **options)
    if case.unit == "us_per_call":
        options = {"iterations": case.iterations, "loops": case.loops}
        options = {key: value for key, value in options.items() if value is not None}
        return host_us_per_call(functions, sync=ctx.sync if ctx.has_gpu else None, **options)
    return wall_seconds(functions, **({"repeats": case.repeats} if case.repeats else {}))


def _significant(value: float, digits: int = 5) -> float:
    """``value`` rounded to ``digits`` significant figures (timings are not more precise)."""
    return float(f"{value:.{digits}g}")


def _message(error: BaseException) -> str:
    text = f"{type(error).__name__}: {error}".strip()
    return text if len(text) <= _ERROR_CHARS else text[: _ERROR_CHARS - 3] + "..."


def _time_library(case: Case, library: str, ctx: Context, record: dict) -> None:
    target = None
    try:
        target = case.setups[library]()
        time = measure(case, target, ctx)
    except Exception as error:  # one library failing must not stop the others
        _record_failure(library, error, record)
        return
    finally:
        del target
        gc.collect()
    _record_time(case, library, time, record)


def _record_failure(library: str, error: Exception, record: dict) -> None:
    """A Skip goes under ``skipped``; any other error makes the time ``null`` with its message."""
    if isinstance(error, Skip):
        record.setdefault("skipped", {})[library] = str(error)
        return
    record["times"][library] = None
    record.setdefault("errors", {})[library] = _message(error)


def _record_time(case: Case, library: str, time: float, record: dict) -> None:
    record["times"][library] = _significant(time)
    if case.derive is not None and time > 0:
        record.setdefault("derived", {})[library] = _significant(case.derive(time))
        record["derived_unit"] = getattr(case.derive, "unit", "")


def _measure_together(case: Case, targets: dict, ctx: Context) -> dict:
    """Library -> time of every target in ``targets``, measured interleaved."""
    if case.unit == "ms":
        options = {"warmup": case.warmup, "repeats": case.repeats, "warmup_ms": GPU_WARMUP_MS}
        options = {key: value for key, value in options.items() if value is not None}
        return gpu_time_ms_interleaved(targets, stream=case.stream, device_id=ctx.device_id, lockstep=ctx.lockstep,
                                       **options)
    options = {"iterations": case.iterations, "loops": case.loops}
    options = {key: value for key, value in options.items() if value is not None}
    return host_us_per_call_interleaved(targets, sync=ctx.sync if ctx.has_gpu else None, **options)


def _time_interleaved(case: Case, libraries, ctx: Context, record: dict) -> None:
    """GPU times and per-call host costs: every library set up first, then their timed calls
    interleaved (see :func:`gpu_time_ms_interleaved`, :func:`host_us_per_call_interleaved`), so
    that drift of the GPU's clocks or the host's speed cannot favour one column."""
    targets = {}
    for library in libraries:
        try:
            target = case.setups[library]()
            for function in as_rotation(target):
                function()  # a library that fails is reported, not timed
            targets[library] = target
        except Exception as error:
            _record_failure(library, error, record)
    if not targets:
        return
    try:
        times = _measure_together(case, targets, ctx)
    except Exception as error:
        for library in targets:
            _record_failure(library, error, record)
        return
    finally:
        targets = None
        gc.collect()
    for library in libraries:
        if library in times:
            _record_time(case, library, times[library], record)


def run_case(case: Case, ctx: Context) -> dict:
    """Time every library of ``case`` that can run; a failure becomes ``null`` plus a message.

    GPU-time and per-call cases set every library up first and interleave their timed calls;
    wall-clock cases (whole processes) time one library after another."""
    record = {"name": case.name, "params": dict(case.params), "unit": case.unit, "times": {}}
    libraries = libraries_to_run(case, ctx.peers)
    if case.unit in ("ms", "us_per_call"):
        _time_interleaved(case, libraries, ctx, record)
    else:
        for library in libraries:
            _time_library(case, library, ctx, record)
    record["params"] = dict(case.params)  # a setup may add what it measured (the distributed suite's t_a2a_ms)
    if case.note:
        record["note"] = case.note
    return record


def run_cases(name: str, cases, ctx: Context, patterns=(), progress=print) -> dict | None:
    """Run ``cases`` as suite ``name``; ``None`` when none of them can run here."""
    cases, no_gpu = select_cases(list(cases), patterns, ctx.has_gpu)
    if no_gpu:
        progress(f"[{name}] no CUDA device: skipping {len(no_gpu)} GPU case(s)")
    if not cases:
        return None
    result = {
        "suite": name,
        "device": describe_device(ctx.device_id, ctx.has_gpu),
        "date": utc_now(),
        "versions": collect_versions(),
        "cases": [],
    }
    for index, case in _with_progress_bar(cases, name):
        counter = f"[{name} {index}/{len(cases)}]"
        progress(f"{counter} {case.name} ...")
        start = time.perf_counter()
        result["cases"].append(run_case(case, ctx))
        progress(f"{counter} {case.name}: done in {time.perf_counter() - start:.1f} s")
    return result


def _with_progress_bar(cases: list, name: str):
    """``enumerate(cases, 1)``, drawn as a tqdm bar on a terminal where tqdm is installed (an
    optional dependency; the per-case lines are printed either way)."""
    numbered = enumerate(cases, 1)
    if not sys.stderr.isatty():
        return numbered
    try:
        from tqdm import tqdm
    except ImportError:
        return numbered
    return tqdm(numbered, total=len(cases), desc=name, unit="case", leave=False)


def run_suite(name: str, ctx: Context, patterns=(), progress=print) -> dict | None:
    """Run suite ``name`` (see :func:`run_cases`). A suite module may define ``result_name(ctx)``,
    the name its results are written under (the distributed suite: ``distributed_ws{N}``)."""
    module = load_suite(name)
    result = run_cases(name, module.cases(ctx), ctx, patterns, progress)
    if result is not None and hasattr(module, "result_name"):
        result["suite"] = module.result_name(ctx)
    return result
