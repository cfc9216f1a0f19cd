#!/usr/bin/env python3
"""Launch the fused FFT engine's windowed R2C (the ``fft_callbacks`` suite's case: 16384 rows of 4096
float32, a Hann window as a load callback), cuFFT's plain R2C of the same rows, and the device API's
convolution kernel (the ``device`` suite's case: 16384 signals of 1024 complex64), a few times each:
the program Nsight Compute profiles.

    ncu --clock-control none --set full -s 3 -c 1 python3 benchmarks/recipes/profile-fused-kernels.py windowed
    ncu --clock-control none --set full -s 3 -c 1 python3 benchmarks/recipes/profile-fused-kernels.py conv

(after ``scripts/gpu-check``'s install; the first launches warm the caches and are skipped with
``-s``). Prints each case's median event time as well, for a run without the profiler.
"""

import importlib.util
import os
import statistics
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

import cupy  # noqa: E402

import nvmathx.fft as nfft  # noqa: E402
from benchmarks.suites.fft_callbacks import windowed  # noqa: E402

ROWS, LENGTH = 16384, 4096
SIGNALS, POINTS = 16384, 1024


def timed(label, call, launches=8):
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    times = []
    for _ in range(launches):
        start.record()
        call()
        end.record()
        end.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, end))
    print(f"{label:40s} {statistics.median(times):.4f} ms", flush=True)


def windowed_rfft(fused=True, plain=True):
    rng = np.random.default_rng(0)
    x = cupy.asarray(rng.standard_normal((ROWS, LENGTH)).astype(np.float32))
    window = cupy.asarray(np.hanning(LENGTH).astype(np.float32))
    prolog = (nfft.compile_prolog(windowed, element_dtype="float32", user_info_dtype="float32"), window)
    if fused:
        plan = nfft.FFT(x, axes=[-1], options={"engine": "fused"})
        plan.plan(prolog=prolog)
        timed("fused windowed R2C 16384x4096", lambda: nfft.rfft(x, plan=plan, prolog=prolog))
    if plain:
        cufft = nfft.FFT(x, axes=[-1], options={"engine": "cufft"})
        cufft.plan()
        timed("cuFFT plain R2C 16384x4096", cufft.execute)


def convolution():
    from numba import cuda

    spec = importlib.util.spec_from_file_location("conv", os.path.join(ROOT, "examples", "device_fft_convolution.py"))
    conv = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conv)
    forward, inverse = conv.make_ffts(POINTS)
    kernel = conv.build_kernel(forward, inverse, cuda)
    rng = np.random.default_rng(1)
    shape = (SIGNALS, POINTS)
    signals = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)
    spectrum = np.fft.fft(rng.standard_normal(POINTS)).astype(np.complex64)
    x, f = cuda.to_device(signals), cuda.to_device(spectrum)
    out = cuda.device_array_like(x)
    launch = kernel[SIGNALS // forward.ffts_per_block, forward.block_dim, 0, forward.shared_memory_size]
    launch(x, f, out)
    cuda.synchronize()
    start, end = cuda.event(), cuda.event()
    times = []
    for _ in range(8):
        start.record()
        launch(x, f, out)
        end.record()
        end.synchronize()
        times.append(cuda.event_elapsed_time(start, end))
    print(f"{'device API convolution 16384x1024':40s} {statistics.median(times):.4f} ms", flush=True)


if __name__ == "__main__":
    cases = sys.argv[1:] or ["windowed", "plain", "conv"]  # one case per profiled program keeps -s/-c simple
    if "windowed" in cases or "plain" in cases:
        windowed_rfft(fused="windowed" in cases, plain="plain" in cases)
    if "conv" in cases:
        convolution()
