#!/usr/bin/env python3
"""Time cuFFTDx's (elements_per_thread, ffts_per_block) choices for the kernels the fused FFT
engine and the device-API convolution run, on a GPU, against cuFFT on the same data.

    scripts/recipe tune-fft-knobs [--rows 16384] [--repeats 50] [--only fused|conv] [--case TEXT ...] [--knobs K ...]

For each transform of the ``fft`` / ``fft_callbacks`` suites the fused engine serves (C2C 4096 and
1024 complex64, R2C/C2R 4096 float32, C2C 4096 complex128) and for ``examples/device_fft_convolution.py``
(1024 points), and R2C 4096 with the fft_callbacks suite's window as a load callback: the median
GPU time of a launch for cuFFTDx's suggested knobs and for every pair it
lists as tuned (``FFT.valid_knobs``), the TB/s that makes (one read, one write), and cuFFT's time
(``FFTOptions(engine="cufft")``); then the two fastest pairs again with ``min_blocks`` (resident
blocks per SM asked of the compiler, capping registers per thread), and for a folded R2C with its
reals staged through shared memory. Prints a table and writes
tune-fft-knobs.json under $OUT when set, rewritten after each transform so that a run cut short
still leaves what it measured: what a committed table of knobs per size would be made from.
``--case`` keeps the transforms whose label contains the text (e.g. ``"C2C 4096 float32"``,
``window``); ``--knobs 32,1,5,1`` measures those knobs alone (elements per thread, FFTs per block,
min_blocks, staged loads).
"""

import argparse
import json
import math
import os
import statistics
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import cupy  # noqa: E402

import nvmathx.fft as nfft  # noqa: E402
from nvmathx._fftcore.engine import FusedRows  # noqa: E402
from nvmathx.fft._fused import FusedPlan, _descriptor, _kernel_options  # noqa: E402

# the last field: "window" runs the fft_callbacks suite's window as a load callback
CASES = [("C2C", 4096, "float32", None), ("R2C", 4096, "float32", None), ("R2C", 4096, "float32", "window"),
         ("C2R", 4096, "float32", None), ("C2C", 1024, "float32", None), ("C2C", 4096, "float64", None)]


def window_prolog(size):
    """The fft_callbacks suite's window callback and a Hann window, as a plan's prolog attachment."""
    from benchmarks.suites.fft_callbacks import windowed
    from nvmathx._fftcore.callbacks import attachment

    window = cupy.asarray(np.hanning(size).astype(np.float32))
    prolog = nfft.compile_prolog(windowed, element_dtype="float32", user_info_dtype="float32")
    return attachment((prolog, window), "prolog", 0)


def gpu_ms(call, repeats):
    """Median of ``repeats`` event-timed calls after a warm-up."""
    for _ in range(5):
        call()
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    times = []
    for _ in range(repeats):
        start.record()
        call()
        end.record()
        end.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, end))
    return statistics.median(times)


def operands(fft_type, size, precision, rows):
    real, complex_ = (np.float32, np.complex64) if precision == "float32" else (np.float64, np.complex128)
    half = size // 2 + 1
    source = {"C2C": (rows, size, complex_), "R2C": (rows, size, real), "C2R": (rows, half, complex_)}[fft_type]
    target = {"C2C": (rows, size, complex_), "R2C": (rows, half, complex_), "C2R": (rows, size, real)}[fft_type]
    x = cupy.random.standard_normal(source[:2]).astype(source[2])
    if source[2] in (np.complex64, np.complex128):
        x = x + 1j * cupy.random.standard_normal(source[:2]).astype(real)
    return x, cupy.empty(target[:2], target[2])


def case_label(fft_type, size, precision, callback, rows):
    return f"{fft_type} {size} {precision} x {rows}" + (f" ({callback})" if callback else "")


def tune_fused(rows, repeats, wanted, report, only_knobs=()):
    results = report["fused"] = []
    for fft_type, size, precision, callback in CASES:
        label = case_label(fft_type, size, precision, callback, rows)
        if wanted and not any(text in label for text in wanted):
            continue
        x, y = operands(fft_type, size, precision, rows)
        prolog = window_prolog(size) if callback == "window" else None
        in_length, out_length = x.shape[1], y.shape[1]
        fused_rows = FusedRows(fft_type, size, rows, precision, in_length, 1, out_length, 1)
        direction = "forward" if fft_type == "C2C" else None
        suggested = _descriptor(fused_rows, direction, (9, 0))
        candidates = [None] + sorted(set(suggested.valid_knobs()))
        nbytes = x.nbytes + y.nbytes
        cufft = nfft.FFT(x, axes=[1], options={"engine": "cufft", "fft_type": fft_type, "inplace": False})
        cufft.plan(prolog=(prolog.callback, prolog.data) if prolog is not None else None)
        cufft_ms = gpu_ms(lambda: cufft.execute(), repeats)
        row = {"transform": label, "real_mode": suggested.real_mode,
               "cufft_ms": round(cufft_ms, 4), "knobs": []}
        def measure(knobs):
            try:
                plan = FusedPlan(fused_rows, 0, prolog=prolog, knobs=knobs)
            except Exception as error:  # a listed pair cuFFTDx or the block limits refuse
                row["knobs"].append({"knobs": knobs, "error": str(error)[:200]})
                return
            fft = _descriptor(fused_rows, direction, (9, 0), knobs)
            stream = nfft_stream()
            ms = gpu_ms(lambda: plan.run(x.data.ptr, y.data.ptr, -1, stream), repeats)
            row["knobs"].append({"knobs": knobs or "suggested", "elements_per_thread": fft.elements_per_thread,
                                 "ffts_per_block": fft.ffts_per_block, "block_dim": list(fft.block_dim),
                                 **_kernel_options(fused_rows, fft, (9, 0), knobs),
                                 "ms": round(ms, 4), "tb_per_s": round(nbytes / ms / 1e9, 3)})
            plan.free()

        if only_knobs:  # the given knobs alone, beside cuFFT's engine
            for knobs in only_knobs:
                measure(knobs)
            candidates = ()
        for knobs in candidates:
            measure(knobs)
        # then the two fastest pairs with fewer registers a thread: more resident blocks per SM
        timed = sorted((k for k in row["knobs"] if "ms" in k), key=lambda k: k["ms"])[:0 if only_knobs else 2]
        for best in timed:
            pair = (best["elements_per_thread"], best["ffts_per_block"])
            for min_blocks in min_blocks_candidates(best["block_dim"]):
                measure((*pair, min_blocks))
            if suggested.real_mode == "folded" and fft_type == "R2C":  # the reals through shared memory
                for min_blocks in (None, *min_blocks_candidates(best["block_dim"])[-2:]):
                    measure((*pair, min_blocks, True))
        cufft.free()
        results.append(row)
        best = min((k for k in row["knobs"] if "ms" in k), key=lambda k: k["ms"])
        print(f"{row['transform']:32} cuFFT {cufft_ms:.4f} ms; suggested {row['knobs'][0].get('ms')} ms; "
              f"best {best['ms']} ms at {best['knobs']}", flush=True)
        write(report)


def write(report):
    """The report so far, under $OUT when set."""
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], "tune-fft-knobs.json"), "w") as file:
            json.dump(report, file, indent=1)


def min_blocks_candidates(block_dim):
    """Resident blocks per SM that cap a thread at 32 to 96 registers (65536 a SM), within the SM's
    2048 threads and 32 blocks (72 and 80 registers: 6 and 7 blocks of 128 threads, between the
    windowed R2C's best, 5, and the 8 that ran slower)."""
    threads = block_dim[0] * block_dim[1] * block_dim[2]
    most = min(32, 2048 // threads)
    return sorted({min(most, max(2, 65536 // (threads * registers)))
                   for registers in (32, 40, 48, 56, 64, 72, 80, 96)})


def nfft_stream():
    """cupy's current stream, as the plans take it."""
    from nvmathx._core import streams

    return streams.resolve_stream(cupy.cuda.get_current_stream().ptr, 0)


_CONV_BURST = 10  # convolution launches timed together


def tune_convolution(rows, repeats, report, pairs=None, top=3, bounds=None):
    import importlib.util

    from numba import cuda

    path = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "examples",
                        "device_fft_convolution.py")
    spec = importlib.util.spec_from_file_location("device_fft_convolution", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    size = 1024
    rng = np.random.default_rng(0)
    signals = (rng.standard_normal((rows, size)) + 1j * rng.standard_normal((rows, size))).astype(np.complex64)
    spectrum = np.fft.fft(rng.standard_normal(size)).astype(np.complex64)
    reference = np.fft.ifft(np.fft.fft(signals.astype(np.complex128), axis=1) * spectrum, axis=1)
    x, f = cuda.to_device(signals), cuda.to_device(spectrum)
    out = cuda.device_array_like(x)
    if pairs is None:  # (8, 2): valid though not listed as tuned
        pairs = sorted(set(example.make_ffts(size)[0].valid_knobs()) | {(8, 2)})
    results = report["convolution"] = []

    def measure(elements_per_thread, ffts_per_block, taps_first, min_blocks=None):
        label = {"knobs": [elements_per_thread, ffts_per_block], "taps_first": taps_first, "min_blocks": min_blocks}
        try:
            forward, inverse = example.make_ffts(size, elements_per_thread, ffts_per_block)
            threads = math.prod(forward.block_dim)
            bounds = None if min_blocks is None else (threads, min_blocks)
            kernel = example.build_kernel(forward, inverse, cuda, taps_first=taps_first, launch_bounds=bounds)
            launch = kernel[rows // forward.ffts_per_block, forward.block_dim, 0, forward.shared_memory_size]
            launch(x, f, out)
            cuda.synchronize()
            error = np.abs(out.copy_to_host() - reference).max() / np.abs(reference).max()
            if not error < 1e-5:
                raise RuntimeError(f"wrong result: max error {error:.2e} relative to the largest value")
        except Exception as error:
            results.append({**label, "error": str(error)[:200]})
            return None
        start, end = cuda.event(), cuda.event()
        times = []
        for _ in range(repeats):
            # launches back to back: a Numba launch's host cost (tens of microseconds) would
            # otherwise sit between the events while the GPU idles
            start.record()
            for _ in range(_CONV_BURST):
                launch(x, f, out)
            end.record()
            end.synchronize()
            times.append(cuda.event_elapsed_time(start, end) / _CONV_BURST)
        ms = statistics.median(times)
        results.append({**label, "ms": round(ms, 4), "tb_per_s": round(2 * signals.nbytes / ms / 1e9, 3)})
        print(f"convolution 1024 x {rows}: {label}: {ms:.4f} ms", flush=True)
        write(report)
        return ms

    # every pair with the filter read before and after the forward transform, then the ``top``
    # fastest with the registers capped by launch bounds (resident blocks per SM)
    timed = []
    for elements_per_thread, ffts_per_block in pairs:
        for taps_first in (True, False):
            ms = measure(elements_per_thread, ffts_per_block, taps_first)
            if ms is not None:
                timed.append((ms, elements_per_thread, ffts_per_block, taps_first))
    for _, elements_per_thread, ffts_per_block, taps_first in sorted(timed)[:top]:
        threads = math.prod(example.make_ffts(size, elements_per_thread, ffts_per_block)[0].block_dim)
        # resident blocks per SM that cap a thread at 80 to 56 registers: more warps to issue from
        # (at 16 elements per thread the kernel takes 93 registers, 10 blocks of 64 threads an SM,
        # so bounds of 8 or fewer blocks cap nothing)
        for min_blocks in bounds or [min(32, 65536 // (threads * registers)) for registers in (80, 72, 64, 56)]:
            measure(elements_per_thread, ffts_per_block, taps_first, min_blocks)


def _knobs_argument(text):
    """``EPT,FPB[,MIN_BLOCKS[,STAGED]]`` as FusedPlan's knobs (0 or an empty field: no min_blocks)."""
    fields = [field.strip() for field in text.split(",")]
    if not 2 <= len(fields) <= 4:
        raise argparse.ArgumentTypeError(f"expected EPT,FPB[,MIN_BLOCKS[,STAGED]] (got {text!r})")
    knobs = [int(fields[0]), int(fields[1])]
    if len(fields) > 2:
        knobs.append(int(fields[2]) or None if fields[2] else None)
    if len(fields) > 3:
        knobs.append(fields[3] not in ("", "0", "false", "False"))
    return tuple(knobs)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=16384)
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--only", choices=["fused", "conv"])
    parser.add_argument("--case", action="append", default=[], help="transforms whose label contains this")
    parser.add_argument("--conv-pair", action="append", default=[], type=_knobs_argument,
                        help="time only this (EPT,FPB) convolution pair, and the fastest of its variants with "
                             "launch bounds")
    parser.add_argument("--conv-bounds", type=lambda text: [int(v) for v in text.split(",")],
                        help="the convolution's launch bounds to time (resident blocks per SM, e.g. 13,14,15)")
    parser.add_argument("--knobs", action="append", default=[], type=_knobs_argument,
                        help="measure only these fused knobs, EPT,FPB[,MIN_BLOCKS[,STAGED]] (e.g. 32,1,5,1)")
    args = parser.parse_args()
    report = {"device": cupy.cuda.runtime.getDeviceProperties(0)["name"].decode(), "rows": args.rows}
    if args.only != "conv":
        tune_fused(args.rows, args.repeats, args.case, report, tuple(args.knobs))
    if args.only != "fused":
        pairs = [pair[:2] for pair in args.conv_pair] or None
        tune_convolution(args.rows, args.repeats, report, pairs, top=1 if pairs else 3, bounds=args.conv_bounds)


if __name__ == "__main__":
    main()
