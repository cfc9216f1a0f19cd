"""The dense solvers on the CPU space against numpy.linalg.solve in 64-bit precision (and the
backward error): every structure, dtype, transpose, batch broadcasting, 1-D and matrix right-hand
sides, strided and Fortran-ordered operands, extents of 0, singular and non-finite inputs, and the
DirectSolver life cycle."""

import numpy as np
import pytest

import nvmathx
from nvmathx.linalg import DirectSolver, DirectSolverOptions, direct_solver, solve

from ._solver_reference import (
    EPS,
    SYSTEMS,
    assert_close,
    backward_error_ok,
    reference_solve,
    structured,
)

TOLERANCE = {"float32": 2e-4, "complex64": 2e-4, "float64": 1e-11, "complex128": 1e-11}


def _close(x, expected, dtype):
    assert_close(np.asarray(x), expected, TOLERANCE[dtype])


@pytest.mark.parametrize("dtype, structure, transposed", SYSTEMS)
def test_every_structure_dtype_and_transpose(rng, dtype, structure, transposed):
    a = structured(rng, (3, 6, 6), dtype, structure)
    b = rng.standard_normal((3, 6, 2)).astype(dtype)
    x = solve(a, b, assume_a=structure, transposed=transposed)
    assert x.dtype == np.dtype(dtype) and isinstance(x, np.ndarray)
    _close(x, reference_solve(a, b, structure, transposed=transposed), dtype)
    ok, worst = backward_error_ok(a, x, b, dtype, structure, transposed=transposed)
    assert ok, worst


@pytest.mark.parametrize("lower", [False, True])
def test_positive_definite_reads_one_triangle(rng, lower):
    a = structured(rng, (5, 5), "float64", "positive definite")
    noisy = a.copy()
    if lower:
        noisy[np.triu_indices(5, 1)] = 99.0  # the triangle that must not be read
    else:
        noisy[np.tril_indices(5, -1)] = 99.0
    b = rng.standard_normal(5)
    _close(solve(noisy, b, assume_a="positive definite", lower=lower), np.linalg.solve(a, b), "float64")


def test_symmetric_and_hermitian_run_as_general(rng):
    a = structured(rng, (4, 4), "complex128", "positive definite")
    b = rng.standard_normal(4) + 0j
    for assume_a in ("symmetric", "hermitian", "sym", "her", "gen", "general", None):
        _close(solve(a, b, assume_a=assume_a), np.linalg.solve(a, b), "complex128")


@pytest.mark.parametrize("a_shape, b_shape", [
    ((4, 4), (4,)), ((4, 4), (4, 3)), ((2, 4, 4), (4,)), ((2, 4, 4), (4, 3)), ((2, 4, 4), (2, 4, 1)),
    ((2, 1, 4, 4), (3, 4, 2)), ((1, 4, 4), (5, 4, 2)), ((4, 4), (2, 3, 4, 1)), ((3, 2, 4, 4), (2, 4, 2)),
])
def test_batch_broadcasting_and_vector_b(rng, a_shape, b_shape):
    a = structured(rng, a_shape, "float64", "general")
    b = rng.standard_normal(b_shape)
    x = solve(a, b)
    expected = reference_solve(a, b)
    _close(x, expected, "float64")
    import scipy.linalg

    assert x.shape == scipy.linalg.solve(a, b).shape  # scipy 1.17's shapes


def test_strided_and_fortran_operands(rng):
    base = structured(rng, (3, 8, 8), "float64", "general")
    a = np.asfortranarray(base)
    b = rng.standard_normal((3, 8, 6))[:, :, ::2]  # non-contiguous
    _close(solve(a, b), reference_solve(base, b), "float64")
    a_t = np.swapaxes(base, -1, -2).copy()
    _close(solve(np.swapaxes(a_t, -1, -2), b), reference_solve(base, b), "float64")  # a transposed view
    _close(solve(base[::-1], b[::-1]), reference_solve(base[::-1], b[::-1]), "float64")  # negative strides


@pytest.mark.parametrize("a_shape, b_shape", [
    ((0, 0), (0,)), ((0, 0), (0, 3)), ((2, 0, 0), (0,)), ((0, 3, 3), (3,)), ((0, 3, 3), (3, 2)), ((3, 3), (3, 0)),
])
def test_extents_of_zero_follow_scipy(a_shape, b_shape):
    import scipy.linalg

    a, b = np.zeros(a_shape, np.float32), np.zeros(b_shape, np.float32)
    if a.shape[-1]:
        a = a + np.eye(a.shape[-1], dtype=np.float32)
    x = solve(a, b)
    expected = scipy.linalg.solve(a, b)
    assert x.shape == expected.shape and x.dtype == np.float32


@pytest.mark.parametrize("condition", [1e2, 1e6, 1e12])
def test_backward_error_on_ill_conditioned_systems(rng, condition):
    a = structured(rng, (4, 40, 40), "float64", "general", condition)
    b = rng.standard_normal((4, 40, 3))
    ok, worst = backward_error_ok(a, solve(a, b), b, "float64")
    assert ok, worst


def test_singular_matrix_names_batch_index_and_pivot(rng):
    a = structured(rng, (3, 4, 4), "float64", "general")
    a[1, :, 2] = 0.0  # column 2 of matrix 1: U[2, 2] is zero (or earlier)
    a[2] = 0.0
    with pytest.raises(nvmathx.SingularMatrixError) as info:
        solve(a, np.ones(4))
    assert info.value.batch_index == 1 and info.value.pivot is not None and 0 <= info.value.pivot <= 2
    assert isinstance(info.value, np.linalg.LinAlgError)
    with pytest.raises(nvmathx.SingularMatrixError) as info:
        solve(np.zeros((3, 3)), np.ones(3))
    assert info.value.batch_index is None and info.value.pivot == 0


@pytest.mark.parametrize("structure, pivot", [("lower triangular", 2), ("upper triangular", 2), ("diagonal", 2),
                                              ("positive definite", 2)])
def test_structured_singularity(structure, pivot):
    a = np.diag([2.0, 3.0, 0.0, 1.0]) if structure != "positive definite" else np.diag([2.0, 3.0, -1.0, 1.0])
    with pytest.raises(nvmathx.SingularMatrixError) as info:
        solve(a, np.ones(4), assume_a=structure)
    assert info.value.pivot == pivot


def test_check_none_gives_nan_or_inf_without_error():
    a = np.diag([2.0, 0.0, 1.0])
    for structure in ("general", "lower triangular", "diagonal", "positive definite"):
        x = direct_solver(a, np.ones(3), options={"assume_a": structure, "check": "none"})
        assert not np.isfinite(x).all(), structure


@pytest.mark.parametrize("name", ["a", "b"])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_check_finite_names_the_operand(rng, name, bad):
    a, b = structured(rng, (3, 3), "float64", "general"), rng.standard_normal(3)
    (a if name == "a" else b)[1] = bad
    with pytest.raises(nvmathx.OperandError, match=f"^{name}: contains NaN or Inf"):
        solve(a, b)
    solve(a, b, check_finite=False)  # no error (the values are whatever the arithmetic gives)


def test_stateful_life_cycle(rng):
    a = structured(rng, (2, 5, 5), "complex128", "general")
    b = rng.standard_normal((2, 5, 3)) + 1j * rng.standard_normal((2, 5, 3))
    solver = DirectSolver(a, b, options=DirectSolverOptions(transposed="conjugate"))
    with pytest.raises(nvmathx.InvalidStateError, match="plan"):
        solver.factorize()
    solver.plan()
    assert solver.engine == "scipy" and solver.result_shape == (2, 5, 3) and solver.workspace_bytes == 0
    with pytest.raises(nvmathx.InvalidStateError, match="factorize"):
        solver.solve()
    solver.factorize()
    _close(solver.solve(), reference_solve(a, b, transposed="conjugate"), "complex128")
    b2 = rng.standard_normal((2, 5, 3)) + 0j
    solver.reset_operands(b=b2)  # a new b: solve() again, no factorize()
    _close(solver.solve(), reference_solve(a, b2, transposed="conjugate"), "complex128")
    a2 = structured(rng, (2, 5, 5), "complex128", "general")
    solver.reset_operands(a=np.asfortranarray(a2))  # a new a: factorize() first
    with pytest.raises(nvmathx.InvalidStateError, match="factorize"):
        solver.solve()
    solver.factorize()
    _close(solver.solve(), reference_solve(a2, b2, transposed="conjugate"), "complex128")
    with pytest.raises(nvmathx.OperandError, match="^a: must have the planned shape"):
        solver.reset_operands(a=a2[:1])
    with pytest.raises(nvmathx.OperandError, match="^b: must have the planned shape"):
        solver.reset_operands(b=b2.astype(np.complex64))
    solver.free()
    solver.free()  # twice is fine
    for call in (solver.plan, solver.factorize, solver.solve, lambda: solver.reset_operands(b=b2)):
        with pytest.raises(nvmathx.InvalidStateError, match="freed"):
            call()


def test_context_manager_frees(rng):
    a, b = structured(rng, (3, 3), "float32", "diagonal"), rng.standard_normal(3).astype(np.float32)
    with DirectSolver(a, b, options={"assume_a": "diagonal"}) as solver:
        solver.plan()
        solver.factorize()
        _close(solver.solve(), b / np.diagonal(a), "float32")
    with pytest.raises(nvmathx.InvalidStateError):
        solver.solve()


def test_array_likes_and_torch_cpu(rng):
    _close(solve([[2.0, 0.0], [0.0, 4.0]], [2.0, 4.0]), np.array([1.0, 1.0]), "float64")
    torch = pytest.importorskip("torch")
    a = structured(rng, (2, 4, 4), "float32", "general")
    b = rng.standard_normal((2, 4, 1)).astype(np.float32)
    x = solve(torch.from_numpy(a), torch.from_numpy(b))
    assert isinstance(x, torch.Tensor) and x.dtype == torch.float32
    _close(x.numpy(), reference_solve(a, b), "float32")


def test_bad_operands_and_options(rng):
    a = np.eye(3)
    cases = [
        (lambda: solve(np.ones((3, 2)), np.ones(3)), nvmathx.OperandError, "^a: expected a square matrix"),
        (lambda: solve(np.ones(3), np.ones(3)), nvmathx.OperandError, "^a: expected a square matrix"),
        (lambda: solve(a, np.ones(4)), nvmathx.OperandError, "^b: its length is 4"),
        (lambda: solve(a, np.ones((4, 2))), nvmathx.OperandError, r"^b: b.shape\[-2\] is 4"),
        (lambda: solve(a, np.float64(1.0)), nvmathx.OperandError, "^b: expected a vector"),
        (lambda: solve(np.ones((2, 3, 3)), np.ones((3, 3, 1))), nvmathx.OperandError, "^b: batch dimensions"),
        (lambda: solve(a, np.ones(3, np.float32)), nvmathx.OperandError, "^b: dtype float32 differs"),
        (lambda: solve(a.astype(np.int64), np.ones(3, np.int64)), nvmathx.UnsupportedOperandError,
         "^a: dtype int64"),
        (lambda: solve(a, np.ones(3), assume_a="banded"), nvmathx.OptionsError, "^options.assume_a: 'banded'"),
        (lambda: solve(a, np.ones(3), assume_a="tridiagonal"), nvmathx.OptionsError, "^options.assume_a"),
        (lambda: solve(a, np.ones(3), assume_a="triangular"), nvmathx.OptionsError, "^options.assume_a"),
        (lambda: solve(a, np.ones(3), transposed="yes"), nvmathx.OptionsError, "^options.transposed"),
        (lambda: solve(a, np.ones(3), lower=1), nvmathx.OptionsError, "^options.lower"),
        (lambda: solve(a, np.ones(3), options={"check": "warn"}), nvmathx.OptionsError, "^options.check"),
        (lambda: solve(a, np.ones(3), options={"engine": "magma"}), nvmathx.OptionsError, "^options.engine"),
        (lambda: solve(a, np.ones(3), options={"nope": 1}), nvmathx.OptionsError, "^options: unknown"),
        (lambda: solve(a, np.ones(3), execution="tpu"), nvmathx.OptionsError, "^execution"),
        (lambda: DirectSolver(a, np.ones(3), stream=1), nvmathx.OptionsError, "^stream: CPU execution"),
    ]
    for call, error, pattern in cases:
        with pytest.raises(error, match=pattern):
            call()


def test_engine_rule_is_pure():
    from nvmathx.linalg import choose_solver_engine
    from nvmathx.linalg._solver_problem import BATCHED_MAX_N, describe_solve

    def problem(a_shape, b_shape):
        return describe_solve(a_shape, "float32", b_shape, "float32", structure="general", operation="N", lower=False)

    assert choose_solver_engine(problem((8192, 8192), (8192,))) == "cusolver"
    assert choose_solver_engine(problem((65536, 32, 32), (32,))) == "batched"
    assert choose_solver_engine(problem((2, BATCHED_MAX_N, BATCHED_MAX_N), (BATCHED_MAX_N,))) == "batched"
    assert choose_solver_engine(problem((2, BATCHED_MAX_N + 1, BATCHED_MAX_N + 1), (BATCHED_MAX_N + 1,))) == "cusolver"
    assert choose_solver_engine(problem((1, 16, 16), (16,))) == "cusolver"  # one system
    assert choose_solver_engine(problem((16, 16), (4, 16, 1))) == "batched"  # a broadcast over b's batch
    assert choose_solver_engine(problem((8, 16, 16), (16,)), "cusolver") == "cusolver"  # asked for
    # the fused cuSOLVERDx engine where its libraries load: small general / positive definite batches
    assert choose_solver_engine(problem((65536, 32, 32), (32,)), fused=True) == "fused"
    assert choose_solver_engine(problem((65536, 33, 33), (33,)), fused=True) == "batched"
    assert choose_solver_engine(problem((64, 16, 16), (64, 16, 5)), fused=True) == "batched"  # many right-hand sides
    assert choose_solver_engine(problem((1, 16, 16), (16,)), fused=True) == "cusolver"
    triangular = describe_solve((8, 4, 4), "float32", (4,), "float32", structure="lower triangular", operation="N",
                                lower=False)
    assert choose_solver_engine(triangular, fused=True) == "batched"
    with pytest.raises(nvmathx.OptionsError, match="^options.engine: the fused engine solves"):
        choose_solver_engine(triangular, "fused")


def test_layout_helpers():
    from nvmathx.linalg._solver_problem import batched_column_major_strides, broadcast_strides

    assert batched_column_major_strides((2, 3), 4, 5) == (60, 20, 1, 4)
    assert batched_column_major_strides((), 4, 1) == (1, 4)
    assert broadcast_strides((3, 1), (40, 16), (2, 3, 5)) == (0, 40, 0)


def test_plan_key_is_hashable_and_tells_problems_apart(rng):
    from nvmathx.linalg import solve_plan_key

    a, b = np.eye(3), np.ones(3)
    key = solve_plan_key(a, b)
    assert hash(key) == hash(solve_plan_key(a.copy(), b.copy()))
    assert key != solve_plan_key(a, b, options={"assume_a": "diagonal"})
    assert key != solve_plan_key(a, np.ones((3, 1)))
    assert key != solve_plan_key(np.asfortranarray(a + 0), b)


def test_float32_accuracy_uses_its_own_eps(rng):
    a = structured(rng, (16, 16), "float32", "general", 1e3)
    b = rng.standard_normal(16).astype(np.float32)
    ok, worst = backward_error_ok(a, solve(a, b), b, "float32")
    assert ok and EPS["float32"] > 1e-8, worst
