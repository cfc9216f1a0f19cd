"""Device API suite: a fused FFT convolution kernel, and the time to its first launch, under each
Numba compiler: columns ``nvmathx.numba_cuda_mlir`` and ``nvmathx.numba_cuda``; ``nvmathx`` is
numba-cuda's too, so that history compares.

- ``fused_conv_16384x1024_c64``: forward FFT, multiply by a filter, inverse FFT and scale of
  16384 complex64 signals of 1024 points in one Numba kernel (the kernel of
  ``examples/device_fft_convolution.py``; 8 elements per thread, 2 FFTs per block), beside torch's
  ``fft -> multiply -> ifft``. TB/s counts one read and one write of the signals.
- ``first_launch_warm_cache`` / ``first_launch_cold_cache``: wall seconds of a fresh interpreter
  from start to the first finished launch of that kernel (the script reports when its launch
  finished; its exit is not counted: on the H200 host the time outside the script's own steps,
  interpreter start and exit, was ~0.2 s longer after the fused kernel, whose exit frees 256 MiB of
  arrays and unloads a large image, than after a one-line kernel), with the cache (generated code and the
  linked kernel image) filled by an earlier process, and with an empty ``NVMATHX_CACHE_DIR``
  (libmathdx generates the code, nvJitLink links it).
- ``first_launch_warm_cache_relink``: as ``first_launch_warm_cache`` with ``NVMATHX_LINK_CACHE=0``
  (generated code from the cache, the kernel linked again).

Each first-launch case also records, in ``params["compiler_first_launch_s"][column]``, the same
wall time for the compiler alone (import, then the first launch of a one-line kernel), measured in
the same run: the difference is nvmathx's own share. The warm-cache cases measure that share in
pairs (the compiler alone, then nvmathx's first launch, 5 or 3 times), each half counted from the
end of the compiler's import (the same first line in both scripts), and record the median
difference in ``params["nvmathx_share_s"][column]``: on the H200 host numba-cuda-mlir's import
alone varied from 3.8 to 5.0 s between processes of one run, more than the share, and the
difference of whole-process medians came out anywhere from -0.7 to 0.8 s.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
import typing

from benchmarks import Case, Skip, bandwidth

__all__ = ["cases"]

_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_EXAMPLE = os.path.join(_REPO_ROOT, "examples", "device_fft_convolution.py")
_BATCH, _SIZE = 16384, 1024

# column -> the import line of its compiler's ``cuda`` module
_COMPILERS = {
    "nvmathx": "from numba import cuda",
    "nvmathx.numba_cuda": "from numba import cuda",
    "nvmathx.numba_cuda_mlir": "from numba_cuda_mlir import cuda",
}

_FIRST_LAUNCH = f"""
import importlib.util
import numpy as np
spec = importlib.util.spec_from_file_location("conv", {_EXAMPLE!r})
conv = importlib.util.module_from_spec(spec)
spec.loader.exec_module(conv)
forward, inverse = conv.make_ffts({_SIZE})
kernel = conv.build_kernel(forward, inverse, cuda)
x = cuda.device_array(({_BATCH}, {_SIZE}), np.complex64)
f = cuda.device_array({_SIZE}, np.complex64)
out = cuda.device_array_like(x)
kernel[{_BATCH} // forward.ffts_per_block, forward.block_dim, 0, forward.shared_memory_size](x, f, out)
cuda.synchronize()
"""

_PLAIN_FIRST_LAUNCH = """
import numpy as np

@cuda.jit
def plain(x):
    x[cuda.grid(1)] += 1

x = cuda.device_array(256, np.float32)
plain[1, 256](x)
cuda.synchronize()
"""


def _compiler(column):
    """The ``cuda`` module of ``column``'s compiler, or Skip."""
    namespace = {}
    try:
        exec(_COMPILERS[column], namespace)
        if "numba_cuda_mlir" not in _COMPILERS[column]:
            importlib.import_module("numba.cuda.cudaimpl")  # where numba-cuda 0.30 meets numpy 2.5 and fails
    except Exception as error:  # noqa: BLE001 (numba-cuda 0.30 fails to import on numpy 2.5, for one)
        raise Skip(f"{_COMPILERS[column]!r} fails here: {type(error).__name__}: {error}") from None
    return namespace["cuda"]


def _example():
    spec = importlib.util.spec_from_file_location("device_fft_convolution", _EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _signals(ctx, batch, size):
    import numpy as np

    signals = (ctx.rng.standard_normal((batch, size)) + 1j * ctx.rng.standard_normal((batch, size))).astype(
        np.complex64
    )
    spectrum = np.fft.fft(ctx.rng.standard_normal(size)).astype(np.complex64)
    return signals, spectrum


def _fused_setups(ctx, batch, size):
    def nvmathx_kernel(column):
        cuda = _compiler(column)
        example = _example()
        forward, inverse = example.make_ffts(size)
        kernel = example.build_kernel(forward, inverse, cuda)
        signals, spectrum = _signals(ctx, batch, size)
        x, f = cuda.to_device(signals), cuda.to_device(spectrum)
        out = cuda.device_array_like(x)
        launch = kernel[batch // forward.ffts_per_block, forward.block_dim, 0, forward.shared_memory_size]
        launch(x, f, out)
        cuda.synchronize()
        return lambda: launch(x, f, out)

    def torch_calls():
        import torch

        signals, spectrum = _signals(ctx, batch, size)
        x = torch.from_numpy(signals).to(f"cuda:{ctx.device_id}")
        f = torch.from_numpy(spectrum).to(f"cuda:{ctx.device_id}")
        return lambda: torch.fft.ifft(torch.fft.fft(x, dim=1) * f, dim=1)

    setups = {column: functools.partial(nvmathx_kernel, column) for column in _COMPILERS}
    return {**setups, "torch": torch_calls}


# printed by each script after its compiler's import and when its launch has finished:
# CLOCK_MONOTONIC, which every process on the host reads alike (Linux), so the parent can subtract
# its own reading from before the start
_IMPORTED = "import time\nprint('compiler imported at', time.monotonic(), flush=True)\n"
_FINISHED = "import time\nprint('launch finished at', time.monotonic(), flush=True)\n"


class Launch(typing.NamedTuple):
    seconds: float  # fresh interpreter to the end of the first launch
    after_import_seconds: float  # the same, from the end of the compiler's import


def _reported(stdout: str, label: str) -> float:
    for line in reversed(stdout.splitlines()):
        if line.startswith(label):
            return float(line.rsplit(" ", 1)[1])
    raise RuntimeError(f"the first-launch script did not report {label!r}:\n{stdout[-2000:]}")


def _run_script(column, script, environment) -> Launch:
    """Times from starting a fresh interpreter to the end of ``script``'s launch (its exit, which
    frees device memory and destroys the context, is not counted)."""
    start = time.monotonic()
    finished = subprocess.run([sys.executable, "-c", f"{_COMPILERS[column]}\n{_IMPORTED}{script}{_FINISHED}"],
                              check=True, env=environment, cwd=_REPO_ROOT, stdout=subprocess.PIPE, text=True)
    end = _reported(finished.stdout, "launch finished at ")
    return Launch(end - start, end - _reported(finished.stdout, "compiler imported at "))


def _first_launch(column, cache_root_for_call, **variables):
    def run() -> Launch:
        environment = dict(os.environ, NVMATHX_CACHE_DIR=cache_root_for_call(), **variables)
        return _run_script(column, _FIRST_LAUNCH, environment)

    return run


def _seconds(run):
    """``run`` for the benchmark runner, which takes the seconds a call returns."""
    return lambda: run().seconds


def _measure_compiler_alone(column, params, *, paired_with=None, runs=5):
    """The compiler's own first launch (median of ``runs`` fresh interpreters), into
    ``params["compiler_first_launch_s"]``. With ``paired_with`` (nvmathx's first launch), each of
    those runs is followed by one of it, and the median of the pairs' differences, each counted
    from the end of the compiler's import, goes into ``params["nvmathx_share_s"]``. The import
    is the same first line in both scripts, and its time varies by more than the share (on the
    H200 host numba-cuda-mlir's import took 3.8 to 5.0 s within one run); a drift of the host
    (page cache) falls on both halves of a pair."""
    _compiler(column)
    plain = functools.partial(_run_script, column, _PLAIN_FIRST_LAUNCH, dict(os.environ))
    alone, differences = [], []
    for _ in range(runs):
        reference = plain()
        alone.append(reference.seconds)
        if paired_with is not None:
            differences.append(paired_with().after_import_seconds - reference.after_import_seconds)
    params.setdefault("compiler_first_launch_s", {})[column] = round(statistics.median(alone), 4)
    if differences:
        params.setdefault("nvmathx_share_s", {})[column] = round(statistics.median(differences), 4)


def _warm_setup(column, params, **variables):
    root = tempfile.mkdtemp(prefix="nvmathx-bench-warm-")
    _first_launch(column, lambda: root)()  # fills the cache; not timed
    first_launch = _first_launch(column, lambda: root, **variables)
    _measure_compiler_alone(column, params, paired_with=first_launch, runs=3 if variables else 5)
    return _seconds(first_launch)


def _cold_setup(column, params):
    _measure_compiler_alone(column, params, runs=3)
    return _seconds(_first_launch(column, lambda: tempfile.mkdtemp(prefix="nvmathx-bench-cold-")))


def _first_launch_case(name, setup, repeats, note, **variables):
    params = {"batch": _BATCH, "size": _SIZE}
    setups = {column: functools.partial(setup, column, params, **variables) for column in _COMPILERS}
    return Case(name=name, params=params, unit="s", setups=setups, repeats=repeats, note=note)


def cases(ctx):
    batch = 1024 if ctx.quick else _BATCH
    return [
        Case(
            name=f"fused_conv_{_BATCH}x{_SIZE}_c64" if not ctx.quick else f"fused_conv_{batch}x{_SIZE}_c64",
            params={"batch": batch, "size": _SIZE, "dtype": "complex64", "elements_per_thread": 8, "ffts_per_block": 2},
            unit="ms",
            setups=_fused_setups(ctx, batch, _SIZE),
            derive=bandwidth(2 * batch * _SIZE * 8),
            note="nvmathx: one Numba kernel (fft, multiply, ifft, scale); torch: fft -> multiply -> ifft",
        ),
        _first_launch_case("first_launch_warm_cache", _warm_setup, 5,
                           "fresh interpreter to the first finished launch; code and linked image cached earlier"),
        _first_launch_case("first_launch_warm_cache_relink", _warm_setup, 2,
                           "as first_launch_warm_cache, with NVMATHX_LINK_CACHE=0: the kernel is linked again",
                           NVMATHX_LINK_CACHE="0"),
        _first_launch_case("first_launch_cold_cache", _cold_setup, 2,
                           "fresh interpreter to the first finished launch with an empty NVMATHX_CACHE_DIR"),
    ]
