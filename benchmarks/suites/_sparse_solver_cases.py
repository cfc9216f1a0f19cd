"""The sparse direct solver's cases of the ``sparse`` suite (``sparse.py`` imports :func:`solver_cases`).

Matrices are generated here (no downloads), float64, 10^6 unknowns:

- ``poisson2d``: the 5-point Laplacian on a 1000 x 1000 grid (SPD);
- ``poisson3d``: the 7-point Laplacian on a 100^3 grid (SPD);
- ``convdiff2d``: -Δu + (w·∇)u on a 1000 x 1000 grid, first-order upwind convection with cell Péclet
  number 1 per axis (non-symmetric, diagonally dominant).

Every column runs in a child process of its own, so that a library that runs out of time can be
killed: the child builds the system and warms its library up, says "ready", and times one solve
when told; the parent gives it :data:`TIMEOUT_S` from then on. A killed column is recorded as
``TIMEOUT_S`` seconds with ``params["timed_out"][column] = True``. Each finished column records the
relative residual ``||b - A x|| / ||b||`` (computed on the host in float64) in
``params["relative_residual"]``. nvmathx warms up on a small matrix of another pattern (cuDSS 1.x
compiles kernels on first use) and clears its plan cache, so that the time is a whole first
``spsolve`` of the pattern: analysis, factorization and solve.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from .._case import Case, Skip

__all__ = ["solver_cases", "poisson2d", "poisson3d", "convdiff2d", "TIMEOUT_S"]

TIMEOUT_S = 60.0
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def poisson2d(m: int):
    """The 5-point Laplacian on an ``m x m`` grid (CSR, float64, int32 indices)."""
    import scipy.sparse

    t = scipy.sparse.diags_array([-1.0, 2.0, -1.0], offsets=[-1, 0, 1], shape=(m, m))
    eye = scipy.sparse.eye_array(m)
    return _csr(scipy.sparse.kron(eye, t) + scipy.sparse.kron(t, eye))


def poisson3d(m: int):
    """The 7-point Laplacian on an ``m^3`` grid (CSR, float64, int32 indices)."""
    import scipy.sparse

    t = scipy.sparse.diags_array([-1.0, 2.0, -1.0], offsets=[-1, 0, 1], shape=(m, m))
    eye = scipy.sparse.eye_array(m)
    kron = scipy.sparse.kron
    return _csr(kron(kron(eye, eye), t) + kron(kron(eye, t), eye) + kron(kron(t, eye), eye))


def convdiff2d(m: int, peclet: float = 1.0):
    """-Δu + (w·∇)u on an ``m x m`` grid with w = (1, 1), upwinded (CSR, float64, int32 indices)."""
    import scipy.sparse

    diffusion = scipy.sparse.diags_array([-1.0, 2.0, -1.0], offsets=[-1, 0, 1], shape=(m, m))
    upwind = scipy.sparse.diags_array([-peclet, peclet], offsets=[-1, 0], shape=(m, m))
    eye = scipy.sparse.eye_array(m)
    one_d = diffusion + upwind
    return _csr(scipy.sparse.kron(eye, one_d) + scipy.sparse.kron(one_d, eye))


def _csr(matrix):
    import numpy as np

    csr = matrix.tocsr()
    csr.sum_duplicates()
    csr.eliminate_zeros()  # (kron of DIA matrices stores the padding's zeros)
    csr.indptr, csr.indices = csr.indptr.astype(np.int32), csr.indices.astype(np.int32)
    return csr


_CHILD = r"""
import json, statistics, sys, time
import numpy as np
from benchmarks.suites._sparse_solver_cases import poisson2d, poisson3d, convdiff2d

column, matrix_name, size, mode, device = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
build = {"poisson2d": poisson2d, "poisson3d": poisson3d, "convdiff2d": convdiff2d}[matrix_name]
a_host = build(size)
n = a_host.shape[0]
b_host = np.random.default_rng(0).standard_normal(n)
matrix_type = "general" if matrix_name == "convdiff2d" else "spd"

try:
    import cupy, cupyx.scipy.sparse
    cupy.cuda.Device(device).use()
    to_gpu = lambda m: cupyx.scipy.sparse.csr_matrix(m)
    dense_gpu, sync, to_host = cupy.asarray, cupy.cuda.runtime.deviceSynchronize, cupy.asnumpy
except ImportError:  # nvmathx's operands from torch where cupy is missing
    if column in ("cupy", "scipy", "nvmath-python"):  # (scipy needs neither)
        cupy = None
    else:
        import torch
        to_gpu = lambda m: torch.sparse_csr_tensor(torch.from_numpy(m.indptr), torch.from_numpy(m.indices),
                                                   torch.from_numpy(m.data), m.shape).to(f"cuda:{device}")
        dense_gpu = lambda v: torch.as_tensor(np.asarray(v, dtype=np.float64)).to(f"cuda:{device}")
        sync, to_host = torch.cuda.synchronize, lambda x: x.cpu().numpy()
if column == "cupy" and cupy is None:
    raise SystemExit("cupy is not installed")
if column in ("nvmathx", "nvmathx.first", "nvmathx.one_thread", "cupy"):
    a, b = to_gpu(a_host), dense_gpu(b_host)
if column in ("nvmathx", "nvmathx.first", "nvmathx.one_thread"):
    import nvmathx.sparse
    options = {"matrix_type": matrix_type}
    if column == "nvmathx.one_thread":  # cuDSS's single-threaded host mode (the default uses every core)
        options["host_threads"] = 1
    small = to_gpu(build(8))
    nvmathx.sparse.spsolve(small, dense_gpu(np.ones(small.shape[0])), options=options)  # handle, NVRTC kernels
    nvmathx.sparse.spsolve_plan_cache.clear()
    if mode == "refactorize":
        solver = nvmathx.sparse.DirectSolver(a, b, options=options)
        second = to_gpu(a_host * 1.5)
        def run():
            if column == "nvmathx.first":
                solver.plan()
            else:
                solver.reset_operands(a=second)
            solver.factorize()
            return solver.solve()
        if column == "nvmathx":  # the first values are planned and factorized before the clock starts
            solver.plan(); solver.factorize(); sync()
        a_check = a_host * 1.5 if column == "nvmathx" else a_host
    else:
        def run():
            nvmathx.sparse.spsolve_plan_cache.clear()
            return nvmathx.sparse.spsolve(a, b, options=options)
        a_check = a_host
elif column == "cupy":
    import cupyx.scipy.sparse.linalg
    run = lambda: cupyx.scipy.sparse.linalg.spsolve(a, b)
    a_check = a_host
elif column == "torch":
    import torch
    a = torch.sparse_csr_tensor(torch.from_numpy(a_host.indptr.astype(np.int64)),
                                torch.from_numpy(a_host.indices.astype(np.int64)),
                                torch.from_numpy(a_host.data), a_host.shape).to(f"cuda:{device}")
    b = torch.from_numpy(b_host).to(f"cuda:{device}")
    probe = torch.eye(4, dtype=torch.float64, device=f"cuda:{device}").to_sparse_csr()
    torch.sparse.spsolve(probe, torch.ones(4, dtype=torch.float64, device=f"cuda:{device}"))  # needs cuDSS
    sync, to_host, a_check = torch.cuda.synchronize, lambda x: x.cpu().numpy(), a_host
    run = lambda: torch.sparse.spsolve(a, b)
elif column == "nvmath-python":
    import cupy, cupyx.scipy.sparse
    import nvmath.sparse.advanced as advanced
    cupy.cuda.Device(device).use()
    a, b = cupyx.scipy.sparse.csr_matrix(a_host), cupy.asarray(b_host)
    sync, to_host, a_check = cupy.cuda.runtime.deviceSynchronize, cupy.asnumpy, a_host
    run = lambda: advanced.direct_solver(a, b)
elif column == "scipy":
    import scipy.sparse.linalg
    sync, to_host, a_check = (lambda: None), np.asarray, a_host
    run = lambda: scipy.sparse.linalg.spsolve(a_host.tocsc(), b_host)
else:
    raise SystemExit(f"unknown column {column}")

print("ready", flush=True)
sys.stdin.readline()
samples = []
for _ in range(3 if column.startswith("nvmathx") else 1):
    sync()
    start = time.perf_counter()
    x = run()
    sync()
    samples.append(time.perf_counter() - start)
x = to_host(x)
residual = float(np.linalg.norm(b_host - a_check @ x) / np.linalg.norm(b_host))
print(json.dumps({"seconds": statistics.median(samples), "residual": residual}), flush=True)
"""


# Columns started together: the slow peers (cupy's QR on the GPU, scipy's SuperLU on the host) run
# at the same time, each timed by its own child and killed at its own deadline, so that two
# timeouts cost one minute of the suite instead of two. nvmathx, torch and nvmath-python run alone.
_TOGETHER = {"cupy": ("scipy",)}
_started: dict = {}  # (matrix, size, mode, column) -> (child, when "go" was sent) or the Skip it raised


def _launch(ctx, column: str, matrix: str, size: int, mode: str):
    """Start a child for ``column``, wait for "ready" and send "go": (child, time of "go")."""
    env = dict(os.environ, PYTHONPATH=_ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    process = subprocess.Popen([sys.executable, "-c", _CHILD, column, matrix, str(size), mode, str(ctx.device_id)],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=env, cwd=_ROOT)
    if process.stdout.readline().strip() != "ready":
        _, error = process.communicate(timeout=60)
        raise Skip(f"{column} could not run here: {error.strip().splitlines()[-1] if error.strip() else '?'}")
    process.stdin.write("go\n")
    process.stdin.flush()
    return process, time.perf_counter()


def _column(ctx, params: dict, column: str, matrix: str, size: int, mode: str):
    """A setup: start the child (and its partners of :data:`_TOGETHER`) and send "go"; the timed call
    reads its report, or kills it at :data:`TIMEOUT_S` after "go"."""
    def setup():
        key = (matrix, size, mode, column)
        if key not in _started:
            for name in (column, *_TOGETHER.get(column, ())):
                try:
                    _started[(matrix, size, mode, name)] = _launch(ctx, name, matrix, size, mode)
                except Skip as skip:
                    _started[(matrix, size, mode, name)] = skip
        started = _started.pop(key)
        if isinstance(started, Skip):
            raise started
        process, go = started

        def timed():
            try:
                output, error = process.communicate(timeout=max(0.0, go + TIMEOUT_S - time.perf_counter()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.communicate()
                params.setdefault("timed_out", {})[column] = True
                return TIMEOUT_S
            if process.returncode != 0:
                raise RuntimeError(f"{column} failed: {error.strip()[-300:]}")
            report = json.loads(output.strip().splitlines()[-1])
            params.setdefault("relative_residual", {})[column] = float(f"{report['residual']:.3g}")
            return report["seconds"]
        return timed
    return setup


_SYSTEMS = {"poisson2d": ("poisson2d_1e6", 1000, 100), "poisson3d": ("poisson3d_1e6", 100, 20),
            "convdiff2d": ("convdiff2d_1e6", 1000, 100)}


def solver_cases(ctx) -> list[Case]:
    """``spsolve_<system>_f64`` for the three systems, and ``refactorize_poisson2d_1e6_f64``."""
    cases = []
    for matrix, (label, size, quick_size) in _SYSTEMS.items():
        size = quick_size if ctx.quick else size
        params = {"matrix": matrix, "grid": size, "unknowns": size ** (3 if matrix == "poisson3d" else 2),
                  "dtype": "float64", "timeout_s": TIMEOUT_S, "timed_out": {}, "relative_residual": {}}
        columns = ("nvmathx", "nvmathx.one_thread", "cupy", "torch", "nvmath-python", "scipy")
        cases.append(Case(name=f"spsolve_{label}_f64", unit="s", params=params, repeats=1,
                          setups={column: _column(ctx, params, column, matrix, size, "spsolve") for column in columns},
                          note="whole first solve of the pattern (analysis + factorization + solve), each column in "
                               f"a child process killed after {TIMEOUT_S:.0f} s (then recorded as {TIMEOUT_S:.0f} s "
                               "with params.timed_out); nvmathx: median of 3 after a warm-up on another pattern; "
                               "nvmathx.one_thread: the same with host_threads=1 (cuDSS single-threaded)"))
    size = 100 if ctx.quick else 1000
    params = {"matrix": "poisson2d", "grid": size, "unknowns": size * size, "dtype": "float64",
              "timeout_s": TIMEOUT_S, "timed_out": {}, "relative_residual": {}}
    cases.append(Case(name="refactorize_poisson2d_1e6_f64", unit="s", params=params, repeats=1,
                      setups={column: _column(ctx, params, column, "poisson2d", size, "refactorize")
                              for column in ("nvmathx", "nvmathx.first")},
                      note="nvmathx: new values of the planned pattern (reset_operands + factorize + solve); "
                           "nvmathx.first: plan + factorize + solve of the first values (one DirectSolver)"))
    return cases
