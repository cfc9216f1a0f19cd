#!/usr/bin/env python3
"""Where the host time of one training step of the feed-forward block goes, on a GPU.

    scripts/recipe profile-mlp-step [--tokens 16384 --d-model 1024 --hidden 4096] [--steps 20]
                             [--blocks torch,nvmathx,nvmathx.fp8,nvmathx.fp8.autotuned] [--gpu-only]

For torch's block, FusedMLP and FusedMLP with a Float8Recipe (bfloat16; ``.autotuned``: the same
with :func:`nvmathx.torch.set_autotune` on): the median host time of a step queued without
synchronising, then a cProfile of ``--steps`` steps (the 25 functions of most own time) and
torch.profiler's CPU-side table (CUDA runtime and driver calls, allocator), unless ``--gpu-only``;
then the GPU time of a step, eager and as one CUDA graph's replay (the step captured once: its
host cost out of the way, so the replay's time is the kernels' and the gaps between them), and
torch.profiler's table of the kernels (5 eager steps). Writes everything to stdout and, under $OUT
when set, profile-mlp-step.txt (or profile-mlp-step-TAG.txt with ``--tag``).
"""

import argparse
import cProfile
import io
import os
import pstats
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from nvmathx.torch import Float8Recipe, FusedMLP  # noqa: E402

BLOCKS = ("torch", "nvmathx", "nvmathx.fp8", "nvmathx.fp8.autotuned")


def make_block(name, d_model, hidden):
    nn = torch.nn
    if name == "torch":
        return nn.Sequential(nn.Linear(d_model, hidden), nn.GELU(approximate="tanh"), nn.Linear(hidden, d_model))
    fp8 = Float8Recipe() if ".fp8" in name else None
    return FusedMLP(d_model, hidden, fp8=fp8, autotune=True if name.endswith(".autotuned") else None)


def graphed_time(step, steps) -> float:
    """Milliseconds per replay of ``step`` captured as one CUDA graph (warmed up on a side stream)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    for _ in range(3):
        graph.replay()
    start_event, end_event = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start_event.record()
    for _ in range(steps):
        graph.replay()
    end_event.record()
    torch.cuda.synchronize()
    return start_event.elapsed_time(end_event) / steps


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=16384)
    parser.add_argument("--d-model", type=int, default=1024)
    parser.add_argument("--hidden", type=int, default=4096)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--blocks", default=",".join(BLOCKS[:3]), help=f"comma-separated, among {BLOCKS}")
    parser.add_argument("--gpu-only", action="store_true", help="skip the host-side profiles")
    parser.add_argument("--tag", default="", help="suffix of the file written under $OUT")
    args = parser.parse_args()
    names = args.blocks.split(",")
    unknown = sorted(set(names) - set(BLOCKS))
    if unknown:
        parser.error(f"unknown block(s) {unknown}; known: {BLOCKS}")
    report = io.StringIO()
    x = torch.randn(args.tokens, args.d_model, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    grad = torch.randn_like(x)
    print(f"== shape tokens={args.tokens} d_model={args.d_model} hidden={args.hidden}", file=report)
    for name in names:
        block = make_block(name, args.d_model, args.hidden).to("cuda", torch.bfloat16)
        params = list(block.parameters())

        def step():
            for p in params:
                p.grad = None
            x.grad = None
            block(x).backward(grad)

        for _ in range(3):
            step()
        torch.cuda.synchronize()
        if not args.gpu_only:
            host_profiles(name, step, args.steps, report)
        gpu_profiles(name, step, args.steps, report)
    text = report.getvalue()
    print(text)
    if os.environ.get("OUT"):
        tag = f"-{args.tag}" if args.tag else ""
        with open(os.path.join(os.environ["OUT"], f"profile-mlp-step{tag}.txt"), "w") as file:
            file.write(text)


def host_profiles(name, step, steps, report):
    """The step's median host time, a cProfile of its Python and torch.profiler's CPU-side table."""
    durations = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        durations.append(time.perf_counter() - start)
    torch.cuda.synchronize()
    print(f"== {name}: median host time per step {statistics.median(durations) * 1e6:.0f} us", file=report)
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(steps):
        step()
    profiler.disable()
    torch.cuda.synchronize()
    pstats.Stats(profiler, stream=report).sort_stats("tottime").print_stats(25)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(5):
            step()
        torch.cuda.synchronize()
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=25), file=report)


def gpu_profiles(name, step, steps, report):
    """One step's GPU time between events (eager, then as a graph replay) and each kernel's share
    (cuda.core's launches included: the profiler sees every kernel of the process)."""
    start_event, end_event = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start_event.record()
    for _ in range(steps):
        step()
    end_event.record()
    torch.cuda.synchronize()
    eager = start_event.elapsed_time(end_event) / steps
    print(f"== {name}: GPU time per step {eager:.3f} ms eager, {graphed_time(step, steps):.3f} ms graphed",
          file=report)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(5):
            step()
        torch.cuda.synchronize()
    print(prof.key_averages().table(sort_by="self_device_time_total", row_limit=20, max_name_column_width=90),
          file=report)


if __name__ == "__main__":
    main()
