"""Solvers suite: dense linear solves ``a x = b`` with nvmathx.linalg beside torch, cupy and
nvmath-python.

- ``solve_lu_{n}_{dtype}_rhs{k}``: one large general system (LU with partial pivoting) through the
  function forms: :func:`nvmathx.linalg.solve`, ``torch.linalg.solve``, ``cupy.linalg.solve`` and
  nvmath-python's dense ``DirectSolver`` (planned, factorized and solved per call).
- ``solve_spd_batched_65536x32_f32``: 65536 positive definite systems of order 32, one right-hand
  side each: ``solve(..., assume_a="positive definite")`` beside torch's Cholesky path
  (``torch.linalg.cholesky`` + ``torch.cholesky_solve``) and ``cupy.linalg.solve`` (LU; cupy has
  no batched Cholesky solve).
- ``solve_lu_batched_{batch}x{n}_{dtype}``: many small general systems, one right-hand side each.
- ``solve_refactor_4096_f64``: factorize once, then solve for 100 new right-hand sides; the time
  is per solve: ``DirectSolver.solve()`` after ``reset_operands(b=...)`` beside
  ``torch.linalg.lu_solve`` of a precomputed ``torch.linalg.lu_factor``.
- ``overhead_solve_stateful_64_f32`` / ``overhead_solve_function_64_f32``: host microseconds per
  call of a 64 x 64 float32 system: ``reset_operands(b=) + solve()`` beside ``torch.linalg.lu_solve``,
  and a cache hit of ``solve()`` beside ``torch.linalg.solve``.

The ``nvmathx`` column runs with ``check="raise"`` and ``check_finite=True`` (scipy's defaults: one
synchronisation per factorization, one per solve); ``nvmathx.nocheck`` with ``check="none"`` (no
synchronisation, as torch's solve). In the batched cases ``nvmathx.fused`` and ``nvmathx.batched``
run each engine by name (``check="none"``), which measures the rule ``engine="auto"`` follows.

Memory, in the case's ``params``: ``peak_bytes[column]`` is the peak of the column's allocator over
one call (torch's ``max_memory_allocated`` for torch and nvmathx's results, plus nvmathx's own
workspaces and factors from cuda.core's memory resource; cupy's pool growth), recorded at setup.
"""

from __future__ import annotations

from benchmarks import Case, Skip, import_or_skip

__all__ = ["cases"]

_LU_CASES = ((8192, "float64", 1), (8192, "float64", 64), (16384, "float32", 1), (16384, "float32", 64))
_BATCHED_LU = ((65536, 64, "float64"), (16384, 16, "float32"))
_LABEL = {"float32": "f32", "float64": "f64"}


def _device(ctx) -> str:
    return f"cuda:{ctx.device_id}"


def _operands(ctx, batch, n, k, dtype, spd=False):
    """Well-conditioned random systems (torch tensors): a = m mᵀ / n + I (positive definite) or
    a random matrix plus n on its diagonal; b of shape batch + (n, k)."""
    torch = import_or_skip("torch")
    gen = torch.Generator(device=_device(ctx)).manual_seed(int(ctx.rng.integers(1 << 31)))
    kind = getattr(torch, dtype)
    m = torch.randn(*batch, n, n, device=_device(ctx), dtype=kind, generator=gen)
    eye = torch.eye(n, device=_device(ctx), dtype=kind)
    a = m @ m.mT / n + eye if spd else m + n**0.5 * eye
    b = torch.randn(*batch, n, k, device=_device(ctx), dtype=kind, generator=gen)
    return a, b


def _nvmathx_extra_bytes() -> int:
    """Bytes nvmathx holds outside torch's allocator: the factors and workspaces of cached plans."""
    from nvmathx.linalg import plan_cache

    return plan_cache.info(0).memory_bytes


def _record_peak(ctx, column, memory, call, extra=None):
    """Run ``call`` once (a warm-up) and again with torch's peak statistics reset; record the peak."""
    torch = import_or_skip("torch")
    call()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    start = torch.cuda.memory_allocated()
    call()
    torch.cuda.synchronize()
    memory["peak_bytes"][column] = torch.cuda.max_memory_allocated() - start + (extra() if extra else 0)


def _record_cupy_peak(column, memory, call):
    cupy = import_or_skip("cupy")
    pool = cupy.get_default_memory_pool()
    call()
    cupy.cuda.Device().synchronize()
    before = pool.total_bytes()
    pool.free_all_blocks()
    floor = pool.total_bytes()
    call()
    cupy.cuda.Device().synchronize()
    memory["peak_bytes"][column] = max(pool.total_bytes(), before) - floor


def _function_columns(ctx, batch, n, k, dtype, memory, *, spd=False, nvmath=True, engines=()):
    """The function-form columns of one solve case (and one ``nvmathx.<engine>`` column per engine
    named, check="none", for the engine rule's measurement)."""
    assume_a = "positive definite" if spd else None

    def nvmathx_solve(check="raise", engine="auto"):
        from nvmathx.linalg import plan_cache, solve

        a, b = _operands(ctx, batch, n, k, dtype, spd)
        options = {"check": check, "engine": engine}

        def call():
            return solve(a, b, assume_a=assume_a, check_finite=check == "raise", options=options)

        plan_cache.clear()
        column = "nvmathx" if check == "raise" else ("nvmathx.nocheck" if engine == "auto" else f"nvmathx.{engine}")
        from nvmathx import LibraryNotFoundError, OptionsError

        try:
            _record_peak(ctx, column, memory, call, _nvmathx_extra_bytes)
        except (OptionsError, LibraryNotFoundError) as error:  # an engine that cannot take the problem here
            raise Skip(f"engine {engine!r}: {error}") from None
        return call

    def torch_solve():
        torch = import_or_skip("torch")
        a, b = _operands(ctx, batch, n, k, dtype, spd)
        if spd:
            def call():
                return torch.cholesky_solve(b, torch.linalg.cholesky(a))
        else:
            def call():
                return torch.linalg.solve(a, b)
        _record_peak(ctx, "torch", memory, call)
        return call

    def cupy_solve():
        cupy = import_or_skip("cupy")
        a, b = (cupy.asarray(x) for x in _operands(ctx, batch, n, k, dtype, spd))

        def call():
            return cupy.linalg.solve(a, b)

        _record_cupy_peak("cupy", memory, call)
        return call

    def nvmath_solve():
        nvmath = import_or_skip("nvmath")
        solver_class = getattr(nvmath.linalg, "DirectSolver", None)
        if solver_class is None:
            raise Skip("this nvmath-python has no dense nvmath.linalg.DirectSolver")
        a, b = _operands(ctx, batch, n, k, dtype, spd)

        def call():
            with solver_class(a, b) as solver:
                solver.plan()
                solver.factorize()
                return solver.solve()

        _record_peak(ctx, "nvmath-python", memory, call)
        return call

    columns = {"nvmathx": nvmathx_solve, "nvmathx.nocheck": lambda: nvmathx_solve("none"), "torch": torch_solve,
               "cupy": cupy_solve}
    if nvmath:
        columns["nvmath-python"] = nvmath_solve
    for engine in engines:
        columns[f"nvmathx.{engine}"] = lambda engine=engine: nvmathx_solve("none", engine)
    return columns


def _lu_case(ctx, n, dtype, k):
    n = n // 8 if ctx.quick else n
    memory: dict = {"peak_bytes": {}}
    params = {"n": n, "nrhs": k, "batch": 1, "dtype": dtype, "structure": "general", **memory}
    return Case(f"solve_lu_{n}_{_LABEL[dtype]}_rhs{k}", "ms", _function_columns(ctx, (), n, k, dtype, memory),
                params=params, note="solve(a, b) per call: LU factorization and solve")


def _spd_batched_case(ctx):
    batch, n = (4096 if ctx.quick else 65536), 32
    memory: dict = {"peak_bytes": {}}
    params = {"n": n, "nrhs": 1, "batch": batch, "dtype": "float32", "structure": "positive definite", **memory}
    columns = _function_columns(ctx, (batch,), n, 1, "float32", memory, spd=True, nvmath=False,
                                engines=("fused", "batched"))
    return Case(f"solve_spd_batched_{batch}x{n}_f32", "ms", columns, params=params,
                note="solve(a, b, assume_a='positive definite'); torch: cholesky + cholesky_solve; cupy: LU")


def _batched_lu_case(ctx, batch, n, dtype):
    batch = batch // 16 if ctx.quick else batch
    memory: dict = {"peak_bytes": {}}
    params = {"n": n, "nrhs": 1, "batch": batch, "dtype": dtype, "structure": "general", **memory}
    columns = _function_columns(ctx, (batch,), n, 1, dtype, memory, nvmath=False, engines=("fused", "batched"))
    return Case(f"solve_lu_batched_{batch}x{n}_{_LABEL[dtype]}", "ms", columns, params=params,
                note="solve(a, b) of a batch of small systems, one right-hand side each")


def _refactor_case(ctx):
    n, solves = (512 if ctx.quick else 4096), 100
    memory: dict = {"peak_bytes": {}}

    def nvmathx_refactor(check="raise"):
        from nvmathx.linalg import DirectSolver

        a, b = _operands(ctx, (), n, 1, "float64")
        rhs = [b + i for i in range(solves)]
        solver = DirectSolver(a, b, options={"check": check, "check_finite": check == "raise"})
        solver.plan()
        solver.factorize()

        def one(new):
            def call():
                solver.reset_operands(b=new)
                return solver.solve()
            return call

        calls = [one(new) for new in rhs]
        _record_peak(ctx, "nvmathx" if check == "raise" else "nvmathx.nocheck", memory, calls[0],
                     lambda: solver.workspace_bytes)
        return calls

    def torch_refactor():
        torch = import_or_skip("torch")
        a, b = _operands(ctx, (), n, 1, "float64")
        lu, pivots = torch.linalg.lu_factor(a)
        rhs = [b + i for i in range(solves)]
        calls = [lambda new=new: torch.linalg.lu_solve(lu, pivots, new) for new in rhs]
        # the factorization torch holds counts as ours does (nvmathx's workspace_bytes has the factors)
        _record_peak(ctx, "torch", memory, calls[0],
                     lambda: lu.element_size() * lu.nelement() + pivots.element_size() * pivots.nelement())
        return calls

    params = {"n": n, "nrhs": 1, "solves": solves, "dtype": "float64", "structure": "general", **memory}
    return Case(f"solve_refactor_{n}_f64", "ms",
                {"nvmathx": nvmathx_refactor, "nvmathx.nocheck": lambda: nvmathx_refactor("none"),
                 "torch": torch_refactor},
                params=params, note="per solve, after one factorization: reset_operands(b=) + solve(); "
                                    "torch: lu_solve of a precomputed lu_factor")


def _overhead_cases(ctx):
    n = 64

    def stateful_nvmathx():
        from nvmathx.linalg import DirectSolver

        a, b = _operands(ctx, (), n, 1, "float32")
        solver = DirectSolver(a, b, options={"check": "none", "check_finite": False})
        solver.plan()
        solver.factorize()

        def call():
            solver.reset_operands(b=b)
            return solver.solve()

        return call

    def function_nvmathx():
        from nvmathx.linalg import solve

        a, b = _operands(ctx, (), n, 1, "float32")
        options = {"check": "none"}
        solve(a, b, check_finite=False, options=options)
        return lambda: solve(a, b, check_finite=False, options=options)

    def torch_lu_solve():
        torch = import_or_skip("torch")
        a, b = _operands(ctx, (), n, 1, "float32")
        lu, pivots = torch.linalg.lu_factor(a)
        return lambda: torch.linalg.lu_solve(lu, pivots, b)

    def torch_solve():
        torch = import_or_skip("torch")
        a, b = _operands(ctx, (), n, 1, "float32")
        return lambda: torch.linalg.solve(a, b)

    params = {"n": n, "nrhs": 1, "dtype": "float32", "check": "none"}
    return [
        Case("overhead_solve_stateful_64_f32", "us_per_call", {"nvmathx": stateful_nvmathx, "torch": torch_lu_solve},
             params=params, note="reset_operands(b=) + solve() per call (check='none'); torch: lu_solve"),
        Case("overhead_solve_function_64_f32", "us_per_call", {"nvmathx": function_nvmathx, "torch": torch_solve},
             params=params, note="solve() per call (plan-cache hit, check='none'); torch: linalg.solve"),
    ]


def cases(ctx):
    return [
        *(_lu_case(ctx, n, dtype, k) for n, dtype, k in _LU_CASES),
        _spd_batched_case(ctx),
        *(_batched_lu_case(ctx, batch, n, dtype) for batch, n, dtype in _BATCHED_LU),
        _refactor_case(ctx),
        *_overhead_cases(ctx),
    ]
