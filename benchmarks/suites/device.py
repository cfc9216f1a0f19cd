"""Device API suite: a fused FFT convolution kernel, random numbers and batched solvers in kernels,
and the time to the convolution kernel's first launch, under each
Numba compiler: columns ``nvmathx.numba_cuda_mlir`` and ``nvmathx.numba_cuda``; ``nvmathx`` is
numba-cuda's too, so that history compares.

- ``fused_conv_16384x1024_c64``: forward FFT, multiply by a filter, inverse FFT and scale of
  16384 complex64 signals of 1024 points in one Numba kernel (the kernel of
  ``examples/device_fft_convolution.py``; 16 elements per thread, 1 FFT per block), beside torch's
  ``fft -> multiply -> ifft``. TB/s counts one read and one write of the signals.
- ``copy_4gib_f32``: torch copying 2**30 float32 (the bandwidth ``rng_normal`` is held to).
- ``rng_normal_2p30_f32``: 2**30 normals written by a kernel calling ``Random.generate``
  (Philox4_32_10, Box-Muller, 4 per call), beside ``torch.randn(out=)`` and
  ``cupy.random.standard_normal``. TB/s counts the writes.
- ``rng_montecarlo_2p32_f32``: 2**32 normals consumed in the kernel (a call option's payoffs, one
  sum written per thread), beside the same computation in torch ops (chunks of 2**28).
- ``solve_spd_65536x32_f32`` / ``solve_lu_65536x64_f64``: a batch of small systems solved by
  ``Solver`` (posv, 2 per block; gesv with partial pivoting, 1 per block; both at cuSOLVERDx's
  suggested, padded, leading dimensions), checked against numpy,
  beside torch (the faster of ``linalg.solve`` and Cholesky for the SPD batch).
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
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
import typing

import numpy as np

from benchmarks import Case, Skip, bandwidth
from benchmarks._case import import_or_skip

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


# -- random numbers and solvers -------------------------------------------------------------------

_NORMALS = 1 << 30  # rng_normal: values written
_FILL_THREADS = 1 << 20  # its grid: 1024 values per thread; 2**18 threads measured 2-3% slower
_MC_THREADS, _MC_PER_THREAD = 1 << 20, 1 << 12  # rng_montecarlo: 2**32 normals consumed in the kernel
_MC_SPOT, _MC_STRIKE, _MC_DRIFT, _MC_VOLATILITY = 100.0, 105.0, 0.0, 0.25


def _random_normal():
    from nvmathx.device_api import Random

    # Philox: 4 Box-Muller normals per call. PCG was faster (1.93 ms against 2.44-2.92, numba-cuda)
    # but cuRANDDx's PCG subsequences of one seed start from the same state: their first values
    # coincide, so a grid on subsequences 0, 1, 2, ... writes the same normals in every thread
    return Random("philox4_32_10", "normal", "float32")


def _normal_fill_kernel(cuda, rng):
    """Each thread of a grid-stride loop writes 4 normals per step, 16 contiguous bytes.

    The loop counts in unsigned integers: with a signed index numba-cuda guards every store against
    negative indices (wraparound), 18% more instructions in the loop and 2.73 ms against 2.08 ms
    for numba-cuda-mlir's code (H200, Philox normals, both linked with LTO)."""

    @cuda.jit
    def fill(out, seed):
        thread = cuda.grid(1)
        state = cuda.local.array(rng.state_words, dtype=rng.state_dtype, alignment=rng.state_alignment)
        rng.init(seed, thread, 0, state)
        values = cuda.local.array(rng.values_per_call, dtype=rng.value_type)
        step = np.uint64(cuda.gridsize(1) * rng.values_per_call)
        end = np.uint64(out.shape[0] - out.shape[0] % rng.values_per_call)
        first = np.uint64(thread * rng.values_per_call)
        while first < end:
            rng.generate(state, values)
            for j in range(rng.values_per_call):
                out[first + np.uint64(j)] = values[j]
            first += step

    return fill


def _montecarlo_kernel(cuda, rng, per_thread):
    """Each thread consumes ``per_thread`` normals (a call option's payoff) and writes one sum."""

    @cuda.jit
    def payoffs(sums, seed, spot, strike, drift, volatility):
        thread = cuda.grid(1)
        state = cuda.local.array(rng.state_words, dtype=rng.state_dtype, alignment=rng.state_alignment)
        rng.init(seed, thread, 0, state)
        values = cuda.local.array(rng.values_per_call, dtype=rng.value_type)
        total = np.float32(0)
        for _ in range(per_thread // rng.values_per_call):
            rng.generate(state, values)
            for j in range(rng.values_per_call):
                total += max(spot * math.exp(drift + volatility * values[j]) - strike, np.float32(0))
        sums[thread] = total

    return payoffs


def _rng_normal_setups(ctx, count):
    def nvmathx_fill(column):
        cuda = _compiler(column)
        rng = _random_normal()
        kernel = _normal_fill_kernel(cuda, rng)
        out = cuda.device_array(count, np.float32)
        launch = kernel[_FILL_THREADS // 256, 256]
        launch(out, np.uint64(1234))
        cuda.synchronize()
        sample = out[: 1 << 20].copy_to_host()
        if not (abs(sample.mean()) < 0.01 and abs(sample.std() - 1) < 0.01):
            raise RuntimeError(f"the normals are off: mean {sample.mean()}, std {sample.std()}")
        return lambda: launch(out, np.uint64(1234))

    def torch_randn():
        torch = import_or_skip("torch")
        out = torch.empty(count, device=f"cuda:{ctx.device_id}", dtype=torch.float32)
        return lambda: torch.randn(count, out=out)

    def cupy_standard_normal():
        cupy = import_or_skip("cupy")
        return lambda: cupy.random.standard_normal(count, dtype=cupy.float32)

    setups = {column: functools.partial(nvmathx_fill, column) for column in _COMPILERS}
    return {**setups, "torch": torch_randn, "cupy": cupy_standard_normal}


def _copy_setups(ctx, count):
    def torch_copy():
        torch = import_or_skip("torch")
        source = torch.empty(count, device=f"cuda:{ctx.device_id}", dtype=torch.float32)
        destination = torch.empty_like(source)
        return lambda: destination.copy_(source)

    return {"torch": torch_copy}


def _montecarlo_setups(ctx):
    def nvmathx_payoffs(column):
        cuda = _compiler(column)
        rng = _random_normal()
        kernel = _montecarlo_kernel(cuda, rng, _MC_PER_THREAD)
        sums = cuda.device_array(_MC_THREADS, np.float32)
        launch = kernel[_MC_THREADS // 256, 256]
        arguments = (sums, np.uint64(99), np.float32(_MC_SPOT), np.float32(_MC_STRIKE), np.float32(_MC_DRIFT),
                     np.float32(_MC_VOLATILITY))
        launch(*arguments)
        cuda.synchronize()
        return lambda: launch(*arguments)

    def torch_payoffs():
        torch = import_or_skip("torch")
        chunk = 1 << 28
        device = f"cuda:{ctx.device_id}"
        normals = torch.empty(chunk, device=device, dtype=torch.float32)

        def run():
            total = torch.zeros((), device=device, dtype=torch.float32)
            for _ in range((_MC_THREADS * _MC_PER_THREAD) // chunk):
                torch.randn(chunk, out=normals)
                total += (_MC_SPOT * torch.exp(_MC_DRIFT + _MC_VOLATILITY * normals) - _MC_STRIKE).clamp_min_(0).sum()
            return total

        return run

    setups = {column: functools.partial(nvmathx_payoffs, column) for column in _COMPILERS}
    return {**setups, "torch": torch_payoffs}


# the solver cases' configurations (scripts/recipe tune-solvers times the others)
_SPD_OPTIONS = {"batches_per_block": 2, "leading_dimension": "suggested"}
_LU_OPTIONS = {"batches_per_block": 1, "leading_dimension": "suggested"}


def _solver_kernel(cuda, solver):
    """Block ``j`` solves systems ``j * batches_per_block ...`` of ``a`` (square, packed in the
    solver's arrangement, one per row) and ``b`` (one right-hand side, overwritten by the solutions);
    in shared memory they lie at the solver's leading dimensions. LU keeps its pivots in shared
    memory. Returns the kernel and its dynamic shared memory in bytes."""
    matrix, vector = solver.m * solver.n, solver.n
    # one packed matrix is `matrix // solver.n` lines of solver.n; b's lines are its column (one line of
    # n, column major) or its n rows of one element (row major)
    b_line = solver.n if solver.arrangement == "col_major" else 1
    a_stride, b_stride = solver.a_size // solver.batches_per_block, solver.b_size // solver.batches_per_block
    pivoting = "ipiv" in solver.arguments
    # one dynamic shared array: a, b, then pivots and statuses viewed as int32 (numba-cuda-mlir 0.6
    # places a dynamic shared array over any static one of the same kernel)
    values, pivots = solver.a_size + solver.b_size, max(solver.ipiv_size, 1)
    integer_slots = -(-4 * (pivots + solver.info_size) // np.dtype(solver.value_type).itemsize)

    @cuda.jit
    def solve(a, b, info):
        first = cuda.blockIdx.x * solver.batches_per_block
        thread = cuda.threadIdx.x + cuda.threadIdx.y * solver.block_dim[0]
        smem = cuda.shared.array(0, dtype=solver.value_type, alignment=16)
        sa = smem[: solver.a_size]
        sb = smem[solver.a_size : solver.a_size + solver.b_size]
        integers = smem[values : values + integer_slots].view(np.int32)
        sipiv = integers[:pivots]
        sinfo = integers[pivots : pivots + solver.info_size]
        for i in range(thread, solver.batches_per_block * matrix, solver.block_size):
            batch, element = i // matrix, i % matrix
            sa[batch * a_stride + (element // solver.n) * solver.lda + element % solver.n] = a[first + batch, element]
        for i in range(thread, solver.batches_per_block * vector, solver.block_size):
            batch, element = i // vector, i % vector
            sb[batch * b_stride + (element // b_line) * solver.ldb + element % b_line] = b[first + batch, element]
        cuda.syncthreads()
        if pivoting:
            solver.execute(sa, sipiv, sb, sinfo)
        else:
            solver.execute(sa, sb, sinfo)
        cuda.syncthreads()
        for i in range(thread, solver.batches_per_block * vector, solver.block_size):
            batch, element = i // vector, i % vector
            b[first + batch, element] = sb[batch * b_stride + (element // b_line) * solver.ldb + element % b_line]
        for i in range(thread, solver.batches_per_block, solver.block_size):
            info[first + i] = sinfo[i]

    return solve, (values + integer_slots) * np.dtype(solver.value_type).itemsize


def _systems(ctx, batch, n, dtype, spd):
    x = ctx.rng.standard_normal((batch, n, n))
    matrices = x @ np.swapaxes(x, 1, 2) + n * np.eye(n) if spd else x + n * np.eye(n)
    return matrices.astype(dtype), ctx.rng.standard_normal((batch, n)).astype(dtype)


def _solve_setups(ctx, batch, n, dtype, function, **options):
    """``options``: the Solver's ``batches_per_block`` and ``leading_dimension``."""
    spd = function == "posv"

    def nvmathx_solve(column):
        cuda = _compiler(column)
        from nvmathx.device_api import Solver

        solver = Solver(function, (n, n, 1), dtype, **options)
        kernel, shared_bytes = _solver_kernel(cuda, solver)
        matrices, rhs = _systems(ctx, batch, n, dtype, spd)
        a = cuda.to_device(np.ascontiguousarray(np.swapaxes(matrices, 1, 2)).reshape(batch, n * n))
        b, info = cuda.to_device(rhs), cuda.device_array(batch, np.int32)
        launch = kernel[batch // solver.batches_per_block, solver.block_dim, 0, shared_bytes]
        launch(a, b, info)
        cuda.synchronize()
        expected = np.linalg.solve(matrices[:64].astype(np.float64), rhs[:64, :, None])[..., 0]
        error = np.linalg.norm(b.copy_to_host()[:64] - expected) / np.linalg.norm(expected)
        if not (error < (1e-4 if dtype == np.float32 else 1e-10) and not info.copy_to_host().any()):
            raise RuntimeError(f"{solver}: relative error {error:.1e} against numpy")
        return lambda: launch(a, b, info)

    def torch_solve():
        torch = import_or_skip("torch")
        matrices, rhs = _systems(ctx, batch, n, dtype, spd)
        a = torch.from_numpy(matrices).to(f"cuda:{ctx.device_id}")
        b = torch.from_numpy(rhs).to(f"cuda:{ctx.device_id}")[..., None]
        candidates = {"solve": lambda: torch.linalg.solve(a, b)}
        if spd:
            candidates["cholesky"] = lambda: torch.cholesky_solve(b, torch.linalg.cholesky(a))
        if len(candidates) == 1:
            return candidates["solve"]
        timings = {}
        for name, call in candidates.items():  # the faster of the two, as a user would pick
            call()
            torch.cuda.synchronize()
            start = time.perf_counter()
            for _ in range(5):
                call()
            torch.cuda.synchronize()
            timings[name] = time.perf_counter() - start
        return candidates[min(timings, key=timings.get)]

    setups = {column: functools.partial(nvmathx_solve, column) for column in _COMPILERS}
    return {**setups, "torch": torch_solve}


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
            params={"batch": batch, "size": _SIZE, "dtype": "complex64", "elements_per_thread": 16,
                    "ffts_per_block": 1},
            unit="ms",
            setups=_fused_setups(ctx, batch, _SIZE),
            derive=bandwidth(2 * batch * _SIZE * 8),
            note="nvmathx: one Numba kernel (fft, multiply, ifft, scale); torch: fft -> multiply -> ifft",
        ),
        Case(
            name="copy_4gib_f32",
            params={"count": _NORMALS, "dtype": "float32"},
            unit="ms",
            setups=_copy_setups(ctx, _NORMALS),
            derive=bandwidth(2 * 4 * _NORMALS),
            note="the copy bandwidth the rng_normal case is compared with (read plus write)",
        ),
        Case(
            name="rng_normal_2p30_f32",
            params={"count": _NORMALS, "dtype": "float32", "generator": "philox4_32_10", "method": "box_muller"},
            unit="ms",
            setups=_rng_normal_setups(ctx, _NORMALS),
            derive=bandwidth(4 * _NORMALS),
            note="nvmathx: Random.generate in a grid-stride kernel writing the normals; torch.randn(out=); "
                 "cupy.random.standard_normal. TB/s counts the writes",
        ),
        Case(
            name="rng_montecarlo_2p32_f32",
            params={"normals": _MC_THREADS * _MC_PER_THREAD, "threads": _MC_THREADS, "dtype": "float32",
                    "generator": "philox4_32_10"},
            unit="ms",
            setups=_montecarlo_setups(ctx),
            note="a call option's payoffs summed from 2**32 normals: nvmathx draws them in the kernel and "
                 "writes one sum per thread; torch: randn, exp, clamp and sum in chunks of 2**28",
        ),
        Case(
            name="solve_spd_65536x32_f32",
            params={"batch": 65536, "n": 32, "dtype": "float32", "function": "posv", **_SPD_OPTIONS},
            unit="ms",
            setups=_solve_setups(ctx, 65536, 32, np.float32, "posv", **_SPD_OPTIONS),
            note="nvmathx: Solver posv (Cholesky), 2 systems per block at cuSOLVERDx's padded leading "
                 "dimension, b overwritten in place; torch: the faster of linalg.solve and cholesky + cholesky_solve",
        ),
        Case(
            name="solve_lu_65536x64_f64",
            params={"batch": 65536, "n": 64, "dtype": "float64", "function": "gesv_partial_pivot", **_LU_OPTIONS},
            unit="ms",
            setups=_solve_setups(ctx, 65536, 64, np.float64, "gesv_partial_pivot", **_LU_OPTIONS),
            note="nvmathx: Solver gesv_partial_pivot (LU with partial pivoting), one system per block at "
                 "cuSOLVERDx's padded leading dimension; torch: linalg.solve",
        ),
        _first_launch_case("first_launch_warm_cache", _warm_setup, 5,
                           "fresh interpreter to the first finished launch; code and linked image cached earlier"),
        _first_launch_case("first_launch_warm_cache_relink", _warm_setup, 2,
                           "as first_launch_warm_cache, with NVMATHX_LINK_CACHE=0: the kernel is linked again",
                           NVMATHX_LINK_CACHE="0"),
        _first_launch_case("first_launch_cold_cache", _cold_setup, 2,
                           "fresh interpreter to the first finished launch with an empty NVMATHX_CACHE_DIR"),
    ]
