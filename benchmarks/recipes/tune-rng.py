#!/usr/bin/env python3
"""Time ways of filling 2**30 float32 normals with ``Random`` (numba-cuda) on a GPU.

    scripts/recipe tune-rng [--repeats 20]

The device suite's ``rng_normal_2p30_f32`` case is issue-bound (its loop is ~190 SASS instructions
for 4 normals, most of them Philox's ten rounds and cuRAND's accurate ``logf``/``sqrtf``), so the
variants change what runs per value: the generator (Philox4_32_10, XORWOW, PCG, MRG32k3a), how
threads are told apart (one seed, a subsequence each: cuRAND's advice for one experiment; or a seed
each, subsequence 0, which skips XORWOW's and MRG32k3a's skip-ahead in ``init``), and the calls a
loop iteration makes (1 or 2). Each variant's first 2**20 values are checked for mean 0 and
standard deviation 1 first. SASS of these loops, counted without a GPU (nvdisasm of the sm_90
cubin): Philox normals 188 instructions per 4 values (its bits alone 80, uniform floats 93), XORWOW
normals 80 per 2 (150 per 4 with 2 calls an iteration), PCG 88 per 2.
Prints a table; writes tune-rng.json under $OUT when set (rewritten
after each variant).
"""

import argparse
import json
import os
import statistics
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from numba import cuda  # noqa: E402

from nvmathx.device_api import Random  # noqa: E402

COUNT = 1 << 30
# (generator, threads told apart by, generate calls per loop iteration, threads): XORWOW's init on a
# subsequence is a skip-ahead of up to 20 matrix steps a thread, so fewer threads pay it less often
VARIANTS = [("philox4_32_10", "subsequence", 1, 1 << 20), ("philox4_32_10", "subsequence", 2, 1 << 20),
            ("philox4_32_10", "subsequence", 1, 1 << 18), ("xorwow", "seed", 1, 1 << 20),
            ("xorwow", "seed", 2, 1 << 20),
            ("xorwow", "subsequence", 2, 1 << 18), ("xorwow", "subsequence", 2, 1 << 17), ("pcg", "seed", 2, 1 << 20),
            ("mrg32k3a", "seed", 1, 1 << 20)]


def fill_kernel(rng, by_seed, unroll):
    """A grid-stride loop of ``unroll`` generate calls an iteration (``values_per_call * unroll``
    contiguous values a thread a step), counting in unsigned integers as the suite's kernel does."""
    per_call = rng.values_per_call
    per_step = per_call * unroll

    @cuda.jit
    def fill(out, seed):
        thread = cuda.grid(1)
        state = cuda.local.array(rng.state_words, dtype=rng.state_dtype, alignment=rng.state_alignment)
        if by_seed:
            rng.init(seed + np.uint64(thread), np.uint64(0), np.uint64(0), state)
        else:
            rng.init(seed, thread, 0, state)
        values = cuda.local.array(per_step, dtype=rng.value_type)
        step = np.uint64(cuda.gridsize(1) * per_step)
        end = np.uint64(out.shape[0] - out.shape[0] % per_step)
        first = np.uint64(thread * per_step)
        while first < end:
            for call in range(unroll):
                rng.generate(state, values[call * per_call:])
            for j in range(per_step):
                out[first + np.uint64(j)] = values[j]
            first += step

    return fill


def gpu_ms(launch, repeats):
    launch()
    cuda.synchronize()
    start, end = cuda.event(), cuda.event()
    times = []
    for _ in range(repeats):
        start.record()
        launch()
        end.record()
        end.synchronize()
        times.append(cuda.event_elapsed_time(start, end))
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    out = cuda.device_array(COUNT, np.float32)
    name = cuda.get_current_device().name
    report = {"device": name.decode() if isinstance(name, bytes) else name, "count": COUNT, "variants": []}
    for generator, apart_by, unroll, threads in VARIANTS:
        row = {"generator": generator, "threads_apart_by": apart_by, "calls_per_iteration": unroll, "threads": threads}
        try:
            rng = Random(generator, "normal", np.float32)
            kernel = fill_kernel(rng, apart_by == "seed", unroll)
            launch = kernel[threads // 256, 256]
            seed = np.uint64(1234)
            launch(out, seed)
            cuda.synchronize()
            sample = out[: 1 << 20].copy_to_host()
            row.update(values_per_call=rng.values_per_call, mean=float(sample.mean()), std=float(sample.std()))
            if not (abs(sample.mean()) < 0.01 and abs(sample.std() - 1) < 0.01):
                raise RuntimeError(f"the normals are off: mean {sample.mean()}, std {sample.std()}")
            ms = gpu_ms(lambda: launch(out, seed), args.repeats)
            row.update(ms=round(ms, 4), tb_per_s=round(4 * COUNT / ms / 1e9, 3))
        except Exception as error:  # noqa: BLE001 (a variant that fails is reported, the rest still run)
            row["error"] = f"{type(error).__name__}: {str(error)[:300]}"
        report["variants"].append(row)
        print(json.dumps(row), flush=True)
        if os.environ.get("OUT"):
            with open(os.path.join(os.environ["OUT"], "tune-rng.json"), "w") as file:
                json.dump(report, file, indent=1)


if __name__ == "__main__":
    main()
