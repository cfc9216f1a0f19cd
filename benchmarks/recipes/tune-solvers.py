#!/usr/bin/env python3
"""Time cuSOLVERDx configurations of the device suite's two solver cases on a GPU.

    scripts/recipe tune-solvers [--batch 65536] [--repeats 20] [--only spd|lu]

For ``solve_spd_65536x32_f32`` (posv) and ``solve_lu_65536x64_f64`` (gesv_partial_pivot): the
median GPU time of the suite's kernel (``benchmarks.suites.device._solver_kernel``, numba-cuda) for
each arrangement, fill mode (posv), systems per block, block size and leading dimension (packed or
cuSOLVERDx's padded suggestion), with more than 48 KiB of
dynamic shared memory opted into where a configuration needs it; each configuration's solutions
are checked against numpy first. Prints a table and writes tune-solvers.json under $OUT when set.
A configuration that faults the device (an illegal address) spoils the context: the ones after it
report errors, and the table says which faulted first.
"""

import argparse
import itertools
import json
import os
import statistics
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from numba import cuda  # noqa: E402

from benchmarks.suites.device import _solver_kernel  # noqa: E402
from nvmathx.device_api import Solver, set_max_dynamic_shared_memory  # noqa: E402

CASES = {
    "spd": dict(function="posv", n=32, dtype=np.float32, spd=True,
                grid=dict(arrangement=["col_major", "row_major"], fill_mode=["lower", "upper"],
                          batches_per_block=[1, 2, 4], block_dim=["suggested", (64,)],
                          leading_dimension=[None, "suggested"])),
    "lu": dict(function="gesv_partial_pivot", n=64, dtype=np.float64, spd=False,
               grid=dict(arrangement=["col_major", "row_major"], fill_mode=[None], batches_per_block=[1, 2],
                         block_dim=["suggested", (64,), (256,)], leading_dimension=[None, "suggested"])),
}


def systems(batch, n, dtype, spd, rng):
    x = rng.standard_normal((batch, n, n))
    matrices = x @ np.swapaxes(x, 1, 2) + n * np.eye(n) if spd else x + n * np.eye(n)
    return matrices.astype(dtype), rng.standard_normal((batch, n)).astype(dtype)


def time_configuration(case, options, batch, repeats, matrices, rhs):
    solver = Solver(case["function"], (case["n"], case["n"], 1), case["dtype"], **options)
    kernel, shared_bytes = _solver_kernel(cuda, solver)
    layout = matrices if options["arrangement"] == "row_major" else np.swapaxes(matrices, 1, 2)
    a = cuda.to_device(np.ascontiguousarray(layout).reshape(batch, -1))
    b, info = cuda.to_device(rhs), cuda.device_array(batch, np.int32)
    launch = kernel[batch // solver.batches_per_block, solver.block_dim, 0, shared_bytes]
    if shared_bytes > 48 * 1024:
        kernel.compile(tuple(kernel.typeof_pyval(array) for array in (a, b, info)))
        set_max_dynamic_shared_memory(kernel, shared_bytes)
    launch(a, b, info)
    cuda.synchronize()
    expected = np.linalg.solve(matrices[:64].astype(np.float64), rhs[:64, :, None])[..., 0]
    error = np.linalg.norm(b.copy_to_host()[:64] - expected) / np.linalg.norm(expected)
    tolerance = 1e-4 if case["dtype"] == np.float32 else 1e-10
    if not error < tolerance or info.copy_to_host().any():
        return {"error": f"relative error {error:.1e} or a nonzero info"}
    start, end = cuda.event(), cuda.event()
    times = []
    for _ in range(repeats):
        b.copy_to_device(rhs)  # the solve overwrites b: solve the same systems every time
        start.record()
        launch(a, b, info)
        end.record()
        end.synchronize()
        times.append(cuda.event_elapsed_time(start, end))
    return {"ms": round(statistics.median(times), 4), "block_dim": list(solver.block_dim),
            "shared_bytes": int(shared_bytes)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=65536)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--only", choices=sorted(CASES))
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    name = cuda.get_current_device().name
    report = {"device": name.decode() if isinstance(name, bytes) else str(name), "batch": args.batch, "cases": {}}
    for case_name, case in CASES.items():
        if args.only and case_name != args.only:
            continue
        matrices, rhs = systems(args.batch, case["n"], case["dtype"], case["spd"], rng)
        rows = []
        keys = list(case["grid"])
        for values in itertools.product(*(case["grid"][key] for key in keys)):
            options = {key: value for key, value in zip(keys, values) if value is not None}
            try:
                result = time_configuration(case, options, args.batch, args.repeats, matrices, rhs)
            except Exception as error:  # a configuration cuSOLVERDx or the launch refuses
                result = {"error": f"{type(error).__name__}: {str(error)[:160]}"}
            rows.append({"options": {key: list(value) if isinstance(value, tuple) else value
                                     for key, value in options.items()}, **result})
            print(f"{case_name} {options}: {result.get('ms', result.get('error'))}", flush=True)
            report["cases"][case_name] = rows
            write(report)  # after every configuration: a run cut short keeps what it timed
        timed = [row for row in rows if "ms" in row]
        if timed:
            best = min(timed, key=lambda row: row["ms"])
            print(f"{case_name}: best {best['ms']} ms with {best['options']}", flush=True)


def write(report):
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], "tune-solvers.json"), "w") as file:
            json.dump(report, file, indent=1)


if __name__ == "__main__":
    main()
