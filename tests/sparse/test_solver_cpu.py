"""The sparse direct solver on the CPU space: every matrix type and stored triangle, dtypes, 1-D and
2-D right-hand sides, index dtypes, degenerate sizes, singular systems, random and near-random
matrices (backward error), the reuse paths and operands from scipy and torch. References are dense
numpy solves."""

import numpy as np
import pytest
import scipy.sparse

import nvmathx
from nvmathx import InvalidStateError, OperandError, OptionsError, SingularMatrixError
from nvmathx.sparse import DirectSolver, DirectSolverOptions, spsolve, spsolve_plan_key
from sparse._solver_cases import (
    TOLERANCE,
    TYPES_OF_DTYPE,
    backward_error,
    right_hand_side,
    stored,
    system_matrix,
)

CASES = [(dtype, kind, triangle) for dtype, kinds in TYPES_OF_DTYPE.items() for kind in kinds
         for triangle in (("full",) if kind == "general" else ("full", "lower", "upper"))]


def _full_of(stored_dense, kind, triangle):
    """The matrix a stored triangle stands for (what the reference solves)."""
    part = np.triu(stored_dense) if triangle == "upper" else np.tril(stored_dense)
    if kind == "general":
        return stored_dense
    strict = part - np.diag(np.diag(part))
    other = strict.conj().T if kind in ("hermitian", "hpd") else strict.T
    return part + other


@pytest.mark.parametrize("dtype, kind, triangle", CASES)
@pytest.mark.parametrize("columns", [None, 3])
def test_matches_a_dense_solve(rng, dtype, kind, triangle, columns):
    n = 24
    dense = system_matrix(rng, n, dtype, kind)
    b = right_hand_side(rng, n, dtype, columns)
    x = spsolve(stored(dense, triangle), b, options={"matrix_type": kind, "triangle": triangle})
    assert isinstance(x, np.ndarray) and x.shape == b.shape and x.dtype == np.dtype(dtype)
    reference = np.linalg.solve(_full_of(dense, kind, triangle).astype(np.complex128), b.astype(np.complex128))
    scale = np.linalg.norm(reference)
    assert np.linalg.norm(x - reference) <= TOLERANCE[dtype] * scale


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("order", ["C", "F"])
def test_index_dtypes_and_layouts(rng, index_dtype, order):
    dense = system_matrix(rng, 30, np.float64, "general")
    b = right_hand_side(rng, 30, np.float64, 4, order=order)
    x = spsolve(stored(dense, "full", index_dtype), b)
    np.testing.assert_allclose(x, np.linalg.solve(dense, b), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("fmt", ["csc", "coo"])
def test_other_formats_are_converted(rng, fmt):
    dense = system_matrix(rng, 12, np.float64, "general")
    b = right_hand_side(rng, 12, np.float64)
    x = spsolve(scipy.sparse.csr_array(dense).asformat(fmt), b)
    np.testing.assert_allclose(x, np.linalg.solve(dense, b), rtol=1e-10)


@pytest.mark.parametrize("density", [0.05, 0.5, 1.0])
def test_random_matrices_have_a_small_backward_error(rng, density):
    """Random matrices with no dominant diagonal (dense-ish and very sparse), and a near-random one
    (a random matrix plus a rank-one term), are solved to a backward error near rounding."""
    n = 60
    for _ in range(3):
        dense = rng.standard_normal((n, n)) * (rng.random((n, n)) < density)
        np.fill_diagonal(dense, rng.standard_normal(n))  # keep it (almost surely) nonsingular
        near = dense + 1e-3 * np.outer(rng.standard_normal(n), rng.standard_normal(n)) * (dense != 0)
        for matrix in (dense, near):
            b = rng.standard_normal(n)
            x = spsolve(scipy.sparse.csr_array(matrix), b)
            assert backward_error(matrix, x, b) < 1e-13


def test_a_one_column_b_gives_a_vector_as_scipy_does(rng):
    dense = system_matrix(rng, 9, np.float64, "general")
    b = right_hand_side(rng, 9, np.float64, 1)
    x = spsolve(scipy.sparse.csr_array(dense), b)
    assert x.shape == (9,)
    np.testing.assert_allclose(x, np.linalg.solve(dense, b[:, 0]), rtol=1e-10)
    with DirectSolver(scipy.sparse.csr_array(dense), b) as solver:  # the stateful solver keeps b's shape
        solver.plan()
        solver.factorize()
        assert solver.solve().shape == (9, 1)


def test_one_by_one_and_empty(rng):
    x = spsolve(scipy.sparse.csr_array(np.array([[4.0]])), np.array([2.0]))
    np.testing.assert_array_equal(x, [0.5])
    empty = spsolve(scipy.sparse.csr_array((0, 0), dtype=np.float64), np.zeros(0))
    assert empty.shape == (0,)
    assert spsolve(scipy.sparse.csr_array((0, 0), dtype=np.float64), np.zeros((0, 2))).shape == (0, 2)


def test_structurally_and_numerically_singular(rng):
    dense = system_matrix(rng, 10, np.float64, "general")
    b = right_hand_side(rng, 10, np.float64)
    empty_row = dense.copy()
    empty_row[3] = 0
    empty_column = dense.copy()
    empty_column[:, 7] = 0
    equal_rows = dense.copy()
    equal_rows[5] = equal_rows[2]
    for matrix in (empty_row, empty_column, equal_rows):
        with pytest.raises(SingularMatrixError) as info:
            spsolve(scipy.sparse.csr_array(matrix), b)
        assert isinstance(info.value, np.linalg.LinAlgError) and str(info.value).startswith("a is singular")


def test_scipy_returns_nan_where_nvmathx_raises(rng):
    """The documented difference: scipy warns and returns NaN for a singular matrix."""
    import warnings

    from scipy.sparse.linalg import spsolve as scipy_spsolve

    matrix = scipy.sparse.csr_array(np.array([[1.0, 2.0], [2.0, 4.0]]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert np.isnan(scipy_spsolve(matrix, np.ones(2))).all()
    with pytest.raises(SingularMatrixError):
        spsolve(matrix, np.ones(2))


def test_spd_type_refuses_an_indefinite_matrix(rng):
    dense = system_matrix(rng, 12, np.float64, "symmetric")
    dense[0, 0] = -abs(dense[0, 0]) - 50
    with pytest.raises(SingularMatrixError, match="not positive definite"):
        spsolve(scipy.sparse.csr_array(dense), np.ones(12), options={"matrix_type": "spd"})


def test_inertia_of_a_symmetric_indefinite_matrix(rng):
    dense = system_matrix(rng, 20, np.float64, "symmetric")
    with DirectSolver(stored(dense, "lower"), np.ones(20), options={"matrix_type": "symmetric",
                                                                      "triangle": "lower"}) as solver:
        solver.plan()
        info = solver.factorize()
    eigenvalues = np.linalg.eigvalsh(dense)
    assert info["inertia"] == (int((eigenvalues > 0).sum()), int((eigenvalues < 0).sum()))
    assert info["factor_nnz"] >= np.count_nonzero(np.tril(dense)) and info["perturbed_pivots"] == 0


@pytest.mark.parametrize("mode, op", [("transpose", np.transpose), ("conjugate_transpose", lambda m: m.conj().T)])
def test_transposed_solves(rng, mode, op):
    dense = system_matrix(rng, 15, np.complex128, "general")
    b = right_hand_side(rng, 15, np.complex128, 2)
    x = spsolve(scipy.sparse.csr_array(dense), b, options={"solve_mode": mode})
    np.testing.assert_allclose(x, np.linalg.solve(op(dense), b), rtol=1e-10)


def test_refinement_steps_do_not_worsen_a_float32_solve(rng):
    dense = system_matrix(rng, 40, np.float32, "general")
    b = right_hand_side(rng, 40, np.float32)
    plain = spsolve(scipy.sparse.csr_array(dense), b)
    refined = spsolve(scipy.sparse.csr_array(dense), b, options={"refinement_steps": 3})
    reference = np.linalg.solve(dense.astype(np.float64), b.astype(np.float64))
    assert np.linalg.norm(refined - reference) <= np.linalg.norm(plain - reference) * 1.5 + 1e-6


def test_reuse_paths(rng):
    n = 20
    first = system_matrix(rng, n, np.float64, "general")
    second = first * (1 + rng.random(first.shape)) * (first != 0)
    np.fill_diagonal(second, np.diag(first) * 2)
    b1, b2 = right_hand_side(rng, n, np.float64), right_hand_side(rng, n, np.float64)
    solver = DirectSolver(scipy.sparse.csr_array(first), b1)
    with pytest.raises(InvalidStateError, match="plan"):
        solver.factorize()
    solver.plan()
    with pytest.raises(InvalidStateError, match="factorize"):
        solver.solve()
    solver.factorize()
    np.testing.assert_allclose(solver.solve(), np.linalg.solve(first, b1), rtol=1e-10)
    solver.reset_operands(b=b2)  # a new b only solves again
    np.testing.assert_allclose(solver.solve(), np.linalg.solve(first, b2), rtol=1e-10)
    solver.reset_operands(a=scipy.sparse.csr_array(second))  # new values: factorize again, no plan()
    with pytest.raises(InvalidStateError, match="factorize"):
        solver.solve()
    solver.factorize()
    np.testing.assert_allclose(solver.solve(), np.linalg.solve(second, b2), rtol=1e-10)
    moved = first.copy()
    moved[0, np.flatnonzero(first[0] == 0)[0]] = 1.0  # one entry more: another nnz
    with pytest.raises(OperandError, match="^a: has number of entries"):
        solver.reset_operands(a=scipy.sparse.csr_array(moved))
    shifted = np.roll(first, 1, axis=1)  # as many entries, another pattern
    with pytest.raises(OperandError, match="^a: has another sparsity pattern"):
        solver.reset_operands(a=scipy.sparse.csr_array(shifted))
    with pytest.raises(OperandError, match="^b: expected shape"):
        solver.reset_operands(b=np.ones((n, 2)))
    solver.free()
    solver.free()
    for call in (solver.plan, solver.factorize, solver.solve, lambda: solver.reset_operands(b=b1)):
        with pytest.raises(InvalidStateError, match="freed"):
            call()


def test_torch_cpu_operands(rng):
    torch = pytest.importorskip("torch")
    dense = system_matrix(rng, 16, np.float64, "general")
    b = right_hand_side(rng, 16, np.float64, 2)
    a = torch.from_numpy(dense).to_sparse_csr()
    x = spsolve(a, torch.from_numpy(b))
    assert isinstance(x, torch.Tensor) and x.shape == (16, 2) and x.dtype == torch.float64
    np.testing.assert_allclose(x.numpy(), np.linalg.solve(dense, b), rtol=1e-10)
    with pytest.raises(nvmathx.UnsupportedOperandError, match="^b: "):
        spsolve(a, b)  # a numpy b with a torch matrix


def test_check_finite(rng):
    dense = system_matrix(rng, 6, np.float64, "general")
    b = right_hand_side(rng, 6, np.float64)
    bad = dense.copy()
    bad[1, 1] = np.nan
    with pytest.raises(OperandError, match="^a: holds NaN"):
        spsolve(scipy.sparse.csr_array(bad), b)
    with pytest.raises(OperandError, match="^b: holds NaN"):
        spsolve(scipy.sparse.csr_array(dense), np.where(np.arange(6) == 2, np.inf, b))
    x = spsolve(scipy.sparse.csr_array(dense), np.where(np.arange(6) == 2, np.inf, b), options={"check_finite": False})
    assert not np.isfinite(x).all()


def test_plan_key_follows_the_pattern_not_the_values(rng):
    dense = system_matrix(rng, 10, np.float64, "general")
    b = np.ones(10)
    key = spsolve_plan_key(scipy.sparse.csr_array(dense), b)
    assert spsolve_plan_key(scipy.sparse.csr_array(dense * 3), b) == key
    assert spsolve_plan_key(scipy.sparse.csr_array(np.roll(dense, 1, axis=1)), b) != key
    assert spsolve_plan_key(scipy.sparse.csr_array(dense), b, options={"matrix_type": "symmetric"}) != key
    assert spsolve_plan_key(scipy.sparse.csr_array(dense), np.ones((10, 2))) != key


def test_options_are_checked():
    assert DirectSolverOptions(pivot_threshold=1).pivot_threshold == 1.0
    for bad, argument in (({"matrix_type": "lu"}, "options.matrix_type"), ({"triangle": "lower"}, "options.triangle"),
                          ({"reordering": "metis"}, "options.reordering"), ({"pivoting": "full"}, "options.pivoting"),
                          ({"pivot_threshold": 2.0}, "options.pivot_threshold"),
                          ({"refinement_steps": -1}, "options.refinement_steps"),
                          ({"solve_mode": "T"}, "options.solve_mode"), ({"check_finite": 1}, "options.check_finite")):
        with pytest.raises(OptionsError, match=f"^{argument}: "):
            DirectSolverOptions(**bad)
    with pytest.raises(OptionsError, match="^options.matrix_type: 'hermitian' needs complex values"):
        spsolve(scipy.sparse.csr_array(np.eye(2)), np.ones(2), options={"matrix_type": "hermitian"})


def test_public_names_are_documented():
    names = {"DirectSolver", "DirectSolverOptions", "FactorizationInfo", "spsolve", "spsolve_plan_key",
             "spsolve_plan_cache"}
    assert names <= set(nvmathx.sparse.__all__)
    for name in names:
        assert (getattr(nvmathx.sparse, name).__doc__ or "").strip(), name
