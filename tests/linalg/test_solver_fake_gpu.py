"""The GPU engines of the dense solvers on the host stand-ins of tests/linalg/_fake_cusolver.py:
the copies of a and b into column-major batches, broadcasting, pointer arrays, operations and
triangles, status reading and the result's layout, for both engines, against numpy.linalg.solve."""

import numpy as np
import pytest

import nvmathx
from nvmathx.linalg import DirectSolver, direct_solver

from ._fake_cublaslt import to_device, to_host
from ._fake_cusolver import install
from ._solver_reference import SYSTEMS, assert_close, reference_solve, structured

ENGINES = ("cusolver", "batched", "fused")
TOLERANCE = {"float32": 2e-4, "complex64": 2e-4, "float64": 1e-11, "complex128": 1e-11}


@pytest.fixture
def fake(monkeypatch):
    import gc

    from nvmathx.linalg import plan_cache

    yield install(monkeypatch)[0]
    plan_cache.clear()  # cached engines are freed while the stand-ins are still installed
    gc.collect()


def _close(x, expected, dtype):
    assert_close(to_host(x), expected, TOLERANCE[dtype])


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("dtype, structure, transposed", SYSTEMS)
def test_engines_against_numpy(rng, fake, engine, dtype, structure, transposed):
    a = structured(rng, (3, 5, 5), dtype, structure)
    b = rng.standard_normal((3, 5, 2)).astype(dtype)
    options = {"assume_a": structure, "transposed": transposed, "engine": engine}
    if engine == "fused" and structure not in ("general", "positive definite"):
        with pytest.raises(nvmathx.OptionsError, match="^options.engine: the fused engine solves"):
            direct_solver(to_device(a), to_device(b), options=options)
        return
    x = direct_solver(to_device(a), to_device(b), options=options)
    _close(x, reference_solve(a, b, structure, transposed=transposed), dtype)
    expected_calls = {
        ("cusolver", "general"): {"getrf": 3, "getrs": 3}, ("batched", "general"): {"getrf_batched": 1,
                                                                                    "getrs_batched": 1},
        ("cusolver", "positive definite"): {"xpotrf": 3, "xpotrs": 3},
        ("batched", "positive definite"): {"potrf_batched": 1, "trsm_batched": 2},  # two right-hand sides
    }.get((engine, structure), {"trsm": 3} if engine == "cusolver" else {"trsm_batched": 1})
    expected_calls = {} if engine == "fused" else expected_calls  # one generated kernel, no library call
    assert fake.calls == expected_calls


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("structure", ["general", "positive definite", "upper triangular", "diagonal"])
@pytest.mark.parametrize("a_shape, b_shape", [
    ((4, 4), (4,)), ((3, 4, 4), (4,)), ((2, 1, 4, 4), (3, 4, 2)), ((1, 4, 4), (5, 4, 1)), ((4, 4), (2, 3, 4, 3)),
    ((0, 4, 4), (4,)), ((2, 0, 0), (0,)), ((4, 4), (4, 0)), ((3, 2, 4, 4), (2, 4, 1)),
])
def test_broadcasting_and_empty(rng, fake, engine, structure, a_shape, b_shape):
    if engine == "fused" and structure not in ("general", "positive definite"):
        return  # (refused: test_engines_against_numpy)
    a = structured(rng, a_shape, "float64", structure) if a_shape[-1] and a_shape[0] else np.zeros(a_shape)
    b = rng.standard_normal(b_shape)
    x = direct_solver(to_device(a), to_device(b), options={"assume_a": structure, "engine": engine})
    import scipy.linalg

    assert tuple(x.shape) == scipy.linalg.solve(a, b).shape
    if x.size:
        _close(x, reference_solve(a, b, structure), "float64")


@pytest.mark.parametrize("engine", ENGINES)
def test_positive_definite_with_one_right_hand_side_uses_potrs(rng, fake, engine):
    a = structured(rng, (6, 4, 4), "complex64", "positive definite")
    b = (rng.standard_normal((6, 4)) + 1j * rng.standard_normal((6, 4))).astype(np.complex64)
    x = direct_solver(to_device(a), to_device(b[..., None]), options={"assume_a": "positive definite",
                                                                       "engine": engine, "lower": True})
    _close(x, reference_solve(a, b[..., None], "positive definite", lower=True), "complex64")
    assert fake.calls == {"batched": {"potrf_batched": 1, "potrs_batched": 1}, "cusolver": {"xpotrf": 6, "xpotrs": 6},
                          "fused": {}}[engine]


@pytest.mark.parametrize("engine", ENGINES)
def test_strided_operands_and_result_layout(rng, fake, engine):
    a = structured(rng, (2, 6, 6), "float64", "general")
    b = rng.standard_normal((2, 6, 8))
    a_f = to_device(np.swapaxes(np.swapaxes(a, -1, -2).copy(), -1, -2))  # Fortran-ordered matrices
    b_s = to_device(b)
    from nvmathx._core.device_array import DeviceArray

    b_view = DeviceArray(b_s.buffer, b_s.ptr, (2, 6, 4), (48, 8, 2), b_s.dtype, 0, None)  # every other column
    x = direct_solver(a_f, b_view, options={"engine": engine})
    _close(x, reference_solve(a, b[..., ::2]), "float64")
    assert tuple(x.strides) == (24, 4, 1)  # C-contiguous, as numpy's results


@pytest.mark.parametrize("engine", ENGINES)
def test_singular_and_non_finite(fake, engine):
    a = np.stack([np.eye(5)] * 4)
    a[2, :, 3] = 0.0
    with pytest.raises(nvmathx.SingularMatrixError) as info:
        direct_solver(to_device(a), to_device(np.ones(5)), options={"engine": engine})
    assert info.value.batch_index == 2 and info.value.pivot == 3 and str(info.value).startswith("a: matrix (2,)")
    broadcast = np.ones((3, 5, 1))  # a (one matrix) broadcast over b's batch: the batched engine expands it
    with pytest.raises(nvmathx.SingularMatrixError) as info:
        direct_solver(to_device(a[2]), to_device(broadcast), options={"engine": engine})
    assert info.value.batch_index is None and info.value.pivot == 3
    with pytest.raises(nvmathx.SingularMatrixError) as info:
        direct_solver(to_device(-np.eye(5)), to_device(np.ones(5)), options={"assume_a": "positive definite",
                                                                             "engine": engine})
    assert info.value.pivot == 0
    for structure in ("lower triangular", "upper triangular", "diagonal") if engine != "fused" else ():
        with pytest.raises(nvmathx.SingularMatrixError) as info:
            direct_solver(to_device(np.diag([1.0, 2.0, 0.0, 1.0, 0.0])), to_device(np.ones(5)),
                          options={"assume_a": structure, "engine": engine})
        assert info.value.pivot == 2
    bad = np.eye(5)
    bad[0, 4] = np.inf
    with pytest.raises(nvmathx.OperandError, match="^a: contains NaN or Inf"):
        direct_solver(to_device(bad), to_device(np.ones(5)), options={"engine": engine})
    with pytest.raises(nvmathx.OperandError, match="^b: contains NaN or Inf"):
        direct_solver(to_device(np.eye(5)), to_device(np.array([1, np.nan, 0, 0, 0])), options={"engine": engine})
    x = direct_solver(to_device(bad), to_device(np.ones(5)), options={"engine": engine, "check": "none"})
    assert not np.isfinite(to_host(x)).all()


@pytest.mark.parametrize("engine", ENGINES)
def test_function_form_reads_the_statuses_once(rng, fake, engine, monkeypatch):
    """solve() of the function form waits once with check="raise" (a's, the factorization's and b's
    statuses read together) and never with check="none"; the fused engine launches only its
    solve kernel (which factors too)."""
    from nvmathx._bindings import cuda_driver
    from nvmathx.linalg import _solver_gpu

    waits, launches = [], []
    synchronize, load = cuda_driver.stream_synchronize, _solver_gpu.load_fused_kernel
    monkeypatch.setattr(cuda_driver, "stream_synchronize", lambda handle: (waits.append(handle), synchronize(handle)))

    def counted_load(problem, device_id):
        run, kernel = load(problem, device_id)
        return (lambda *args: (launches.append(problem.structure), run(*args))), kernel

    monkeypatch.setattr(_solver_gpu, "load_fused_kernel", counted_load)
    a, b = rng.standard_normal((3, 6, 6)) + 6 * np.eye(6), rng.standard_normal((3, 6, 2))
    for check, expected_waits in (("raise", 1), ("none", 0)):
        options = {"engine": engine, "check": check}
        direct_solver(to_device(a), to_device(b), options=options)  # plan (uploads may wait)
        waits.clear(), launches.clear()
        x = direct_solver(to_device(a), to_device(b), options=options)
        assert len(waits) == expected_waits, check
        assert launches == (["general"] if engine == "fused" else []), check
        _close(x, np.linalg.solve(a, b), "float64")


@pytest.mark.parametrize("engine", ENGINES)
def test_stateful_reset_operands(rng, fake, engine):
    a, b = structured(rng, (4, 6, 6), "complex128", "general"), rng.standard_normal((4, 6, 2)) + 0j
    with DirectSolver(to_device(a), to_device(b), options={"engine": engine, "transposed": True}) as solver:
        solver.plan()
        assert solver.engine == engine and solver.workspace_bytes > 0
        solver.factorize()
        _close(solver.solve(), reference_solve(a, b, transposed=True), "complex128")
        b2 = rng.standard_normal((4, 6, 2)) + 1j
        solver.reset_operands(b=to_device(b2))
        _close(solver.solve(), reference_solve(a, b2, transposed=True), "complex128")
        a2 = structured(rng, (4, 6, 6), "complex128", "general")
        solver.reset_operands(a=to_device(np.asfortranarray(a2)))
        with pytest.raises(nvmathx.InvalidStateError):
            solver.solve()
        solver.factorize()
        _close(solver.solve(), reference_solve(a2, b2, transposed=True), "complex128")


def test_auto_engine_and_plan_cache(rng, fake):
    from nvmathx.linalg import plan_cache, solve

    a = structured(rng, (8, 4, 4), "float32", "general")
    b = rng.standard_normal(4).astype(np.float32)
    a_d, b_d = to_device(a), to_device(b)
    for _ in range(3):
        _close(solve(a_d, b_d), reference_solve(a, b), "float32")
    assert fake.calls == {"getrf_batched": 3, "getrs_batched": 3}  # auto: eight small systems
    assert plan_cache.info(0).size == 1 and plan_cache.info(0).hits == 2
    big = structured(rng, (1, 140, 140), "float32", "general")
    solve(to_device(big), to_device(np.ones(140, np.float32)))
    assert fake.calls["getrf"] == 1


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
def test_lu_too_large_for_32_bit_sizes_runs_on_the_64_bit_api(rng, fake, monkeypatch, dtype):
    from nvmathx.linalg import _solver_gpu

    monkeypatch.setattr(_solver_gpu, "LEGACY_LU_ELEMENTS", 25)  # 5 x 5 fits, 6 x 6 and 5 x 5 with 6 rhs do not
    for n, k, expected in ((5, 2, {"getrf": 3, "getrs": 3}), (6, 2, {"xgetrf": 3, "xgetrs": 3}),
                           (5, 6, {"xgetrf": 3, "xgetrs": 3})):
        fake.calls.clear()
        a, b = structured(rng, (3, n, n), dtype, "general"), rng.standard_normal((3, n, k)).astype(dtype)
        for transposed in (False, True, "conjugate"):
            x = direct_solver(to_device(a), to_device(b), options={"engine": "cusolver", "transposed": transposed})
            _close(x, reference_solve(a, b, "general", transposed=transposed), dtype)
        assert fake.calls == {name: 3 * count for name, count in expected.items()}


@pytest.mark.parametrize("engine", ENGINES)
def test_host_operands_with_cuda_execution(rng, fake, engine):
    a, b = structured(rng, (3, 5, 5), "float64", "general"), rng.standard_normal((3, 5, 4))
    x = direct_solver(a, b, execution="cuda", options={"engine": engine})
    assert isinstance(x, np.ndarray)
    assert_close(x, reference_solve(a, b), TOLERANCE["float64"])


def test_auto_chooses_the_fused_engine_where_it_is_available(rng, monkeypatch):
    import gc

    from nvmathx.linalg import plan_cache

    fake, _ = install(monkeypatch, fused_available=True)
    a = structured(rng, (8, 4, 4), "float64", "positive definite")
    b = rng.standard_normal((8, 4, 1))
    with DirectSolver(to_device(a), to_device(b), options={"assume_a": "positive definite"}) as solver:
        solver.plan()
        assert solver.engine == "fused"
        solver.factorize()
        _close(solver.solve(), reference_solve(a, b, "positive definite"), "float64")
    with DirectSolver(to_device(a), to_device(b), options={"assume_a": "lower triangular"}) as solver:
        solver.plan()
        assert solver.engine == "batched"  # the fused engine solves general and positive definite systems
    assert fake.calls == {}
    plan_cache.clear()
    gc.collect()


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("legacy", [True, False])  # int32 pivots (legacy LU) or int64 (64-bit API)
def test_stateful_solves_of_one_right_hand_side_gather_and_run_two_triangular_solves(rng, fake, monkeypatch, dtype,
                                                                                     legacy):
    from nvmathx.linalg import _solver_gpu

    monkeypatch.setattr(_solver_gpu, "TRIANGULAR_SOLVES_MIN_N", 5)  # n = 6 takes the path (the real bound: 128)
    if not legacy:
        monkeypatch.setattr(_solver_gpu, "LEGACY_LU_ELEMENTS", 25)
    n = 6
    a, b = structured(rng, (3, n, n), dtype, "general"), rng.standard_normal((3, n)).astype(dtype)
    a[:, 0, 0] = 0  # the first column's pivot is another row: the gather must follow the interchanges
    getrf = "getrf" if legacy else "xgetrf"
    with DirectSolver(to_device(a), to_device(b[..., None]), options={"engine": "cusolver"}) as solver:
        solver.plan()
        solver.factorize()
        for _ in range(3):
            _close(solver.solve(), reference_solve(a, b[..., None]), dtype)
            b = rng.standard_normal((3, n)).astype(dtype)
            solver.reset_operands(b=to_device(b[..., None]))
        assert fake.calls == {getrf: 3, "trsm": 3 * 3 * 2}  # no getrs
        a2 = structured(rng, (3, n, n), dtype, "general")
        solver.reset_operands(a=to_device(a2))
        solver.factorize()  # a new permutation
        _close(solver.solve(), reference_solve(a2, b[..., None]), dtype)
    fake.calls.clear()
    # the function form's single solve of a factorization, and a transposed one, keep getrs
    b = b[..., None]
    _close(direct_solver(to_device(a), to_device(b), options={"engine": "cusolver"}), reference_solve(a, b), dtype)
    _close(direct_solver(to_device(a), to_device(b), options={"transposed": True, "engine": "cusolver"}),
           reference_solve(a, b, transposed=True), dtype)
    assert fake.calls == {getrf: 6, getrf.replace("f", "s"): 6}
