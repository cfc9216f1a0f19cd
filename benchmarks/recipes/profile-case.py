#!/usr/bin/env python3
"""Where the time of a benchmark case's columns goes, on a GPU: host functions and kernels.

    scripts/recipe profile-case SUITE CASE_GLOB [--columns nvmathx,torch] [--calls 200]
                                [--top 25] [--kernels-only | --host-only]

For each matching case of ``benchmarks/suites/SUITE.py`` and each of its columns (all, or those
named), the column's setup is built as the suite builds it, called a few times to warm up, then:

- host: the mean wall microseconds of ``--calls`` calls queued without synchronising (a finished
  device in between), then a cProfile of those calls, the ``--top`` functions of most own time;
- kernels: torch.profiler's table of every kernel and memory operation on the device during
  ``--calls`` calls (CUPTI sees every library's launches, ours included), sorted by device time.

Prints to stdout and, with $OUT set, writes profile-case-SUITE.txt there.
"""

import argparse
import cProfile
import fnmatch
import io
import os
import pstats
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from benchmarks._context import Context, installed_peers  # noqa: E402
from benchmarks._runner import load_suite  # noqa: E402
from benchmarks._timing import as_rotation  # noqa: E402


def host_profile(call, calls: int, top: int, sync) -> str:
    sync()
    start = time.perf_counter()
    for _ in range(calls):
        call()
    queued = (time.perf_counter() - start) / calls * 1e6
    sync()
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        call()
    profiler.disable()
    sync()
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(top)
    return f"queued: {queued:.2f} us per call (wall, no synchronisation)\n{text.getvalue()}"


def kernel_profile(call, calls: int, top: int, sync) -> str:
    import torch
    from torch.profiler import ProfilerActivity, profile

    sync()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            call()
        sync()
    return prof.key_averages().table(sort_by="cuda_time_total", row_limit=top, max_name_column_width=70) \
        if torch.cuda.is_available() else "(torch without CUDA)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("suite")
    parser.add_argument("case")
    parser.add_argument("--columns", default="")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--top", type=int, default=25)
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--kernels-only", action="store_true")
    group.add_argument("--host-only", action="store_true")
    args = parser.parse_args()

    ctx = Context.for_device(installed_peers())
    wanted = [name for name in args.columns.split(",") if name]
    out = []

    def say(text: str) -> None:
        print(text, flush=True)
        out.append(text)

    for case in load_suite(args.suite).cases(ctx):
        if not fnmatch.fnmatchcase(case.name, args.case):
            continue
        for column, setup in case.setups.items():
            if wanted and column not in wanted:
                continue
            say(f"\n===== {case.name} / {column}")
            try:
                functions = as_rotation(setup())
                state = {"index": 0}

                def call(functions=functions, state=state):
                    state["index"] = (state["index"] + 1) % len(functions)
                    return functions[state["index"]]()

                for _ in range(5):
                    call()
                calls = args.calls if case.unit == "us_per_call" else max(3, min(args.calls, 20))
                if not args.kernels_only:
                    say(host_profile(call, calls, args.top, ctx.sync))
                if not args.host_only:
                    say(kernel_profile(call, calls, args.top, ctx.sync))
            except Exception as error:  # one column's failure leaves the others' profiles
                say(f"failed: {type(error).__name__}: {error}")
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], f"profile-case-{args.suite}.txt"), "a", encoding="utf-8") as file:
            file.write("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
