"""Solver in kernels of each Numba compiler (needs a GPU): Cholesky, LU with and without pivoting,
QR and least squares against numpy.linalg in float64, several problems per block."""

import numpy as np
import pytest

from helpers.requirements import needs_mathdx

from . import _kernels

pytestmark = [pytest.mark.gpu, needs_mathdx]

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
BLOCKS = 3


def _tolerance(dtype):
    """Relative to the problem's largest value: single precision 2e-4, double 1e-10."""
    return 2e-4 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-10


def _random(rng, shape, dtype):
    values = rng.standard_normal(shape)
    if np.issubdtype(dtype, np.complexfloating):
        values = values + 1j * rng.standard_normal(shape)
    return values


def _pack(matrices, dtype):
    """(blocks, batches, rows, cols) -> one row per block, each matrix column major."""
    blocks = matrices.shape[0]
    return np.ascontiguousarray(np.swapaxes(matrices, -1, -2)).reshape(blocks, -1).astype(dtype)


def _unpack(rows, batches, shape):
    blocks = rows.shape[0]
    return np.swapaxes(rows[:, : batches * shape[0] * shape[1]].reshape(blocks, batches, shape[1], shape[0]), -1,
                       -2).astype(np.complex128 if np.iscomplexobj(rows) else np.float64)


def _run(compiler, solver, a, b=None):
    """Launch the solver kernel on ``a`` (and ``b``, or ``c`` for unmqr): every array back on the host."""
    cuda = compiler.cuda
    dtype = np.dtype(solver.value_type)
    blocks = a.shape[0]
    a_d = cuda.to_device(_pack(a, dtype))
    b_d = cuda.to_device(_pack(b, dtype) if b is not None else np.zeros((blocks, 1), dtype))
    ipiv_d = cuda.to_device(np.zeros((blocks, max(solver.ipiv_size, 1)), np.int32))
    tau_d = cuda.to_device(np.zeros((blocks, max(solver.tau_size, 1)), dtype))
    info_d = cuda.to_device(np.full((blocks, max(solver.info_size, 1)), -7, np.int32))
    kernel = cuda.jit(compiler.bind(_kernels.solver_kernel(solver)))
    kernel[blocks, solver.block_dim](a_d, b_d, ipiv_d, tau_d, info_d)
    return a_d.copy_to_host(), b_d.copy_to_host(), ipiv_d.copy_to_host(), tau_d.copy_to_host(), info_d.copy_to_host()


def _spd(rng, batches, n, dtype):
    x = _random(rng, (BLOCKS, batches, n, n), dtype)
    return x @ np.conj(np.swapaxes(x, -1, -2)) + n * np.eye(n)


def _solver(*args, **kwargs):
    from nvmathx.device_api._solver import Solver

    return Solver(*args, **kwargs)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n, batches, fill_mode", [(8, 1, "lower"), (33, 1, "upper"), (16, 2, "lower")])
def test_cholesky_factor_matches_numpy(compiler, rng, dtype, n, batches, fill_mode):
    solver = _solver("potrf", n, dtype, fill_mode=fill_mode, batches_per_block=batches)
    a = _spd(rng, batches, n, dtype)
    factored, _, _, _, info = _run(compiler, solver, a)
    assert np.all(info[:, :batches] == 0)
    lower = np.linalg.cholesky(a)
    got = _unpack(factored, batches, (n, n))
    got = np.tril(got) if fill_mode == "lower" else np.conj(np.swapaxes(np.triu(got), -1, -2))
    np.testing.assert_allclose(got, lower, rtol=0, atol=_tolerance(dtype) * np.abs(lower).max())


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("function", ["posv", "gesv_partial_pivot", "gesv_no_pivot"])
def test_solves_match_numpy(compiler, rng, dtype, function):
    n, k, batches = 24, 3, 2
    solver = _solver(function, (n, n, k), dtype, batches_per_block=batches)
    a = _spd(rng, batches, n, dtype)  # SPD: every solve applies, and LU needs no pivot to be stable
    b = _random(rng, (BLOCKS, batches, n, k), dtype)
    _, solved, _, _, info = _run(compiler, solver, a, b)
    if "info" in solver.arguments:
        assert np.all(info[:, :batches] == 0)
    expected = np.linalg.solve(a, b)
    np.testing.assert_allclose(_unpack(solved, batches, (n, k)), expected, rtol=0,
                               atol=_tolerance(dtype) * 10 * np.abs(expected).max())


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("m, n", [(16, 16), (24, 12), (12, 20)])
def test_lu_with_partial_pivoting_reconstructs_the_matrix(compiler, rng, dtype, m, n):
    solver = _solver("getrf_partial_pivot", (m, n), dtype)
    a = _random(rng, (BLOCKS, 1, m, n), dtype)
    factored, _, ipiv, _, info = _run(compiler, solver, a)
    assert np.all(info[:, 0] == 0)
    lu = _unpack(factored, 1, (m, n))[:, 0]
    steps = min(m, n)
    for block in range(BLOCKS):
        pivots = ipiv[block, :steps]
        assert np.all((1 <= pivots) & (pivots <= m))  # LAPACK's 1-based rows
        permuted = a[block, 0].copy()
        for row, pivot in enumerate(pivots - 1):  # P A: the interchanges in order
            permuted[[row, pivot]] = permuted[[pivot, row]]
        lower = np.tril(lu[block], -1)[:, :steps] + np.eye(m, steps)
        upper = np.triu(lu[block])[:steps, :]
        np.testing.assert_allclose(lower @ upper, permuted, rtol=0, atol=_tolerance(dtype) * 10 * np.abs(a).max())


def test_a_singular_matrix_reports_info(compiler, rng):
    solver = _solver("getrf_partial_pivot", (8, 8), np.float64)
    a = _random(rng, (BLOCKS, 1, 8, 8), np.float64)
    a[:, :, :, 3] = 0.0  # column 4 is zero: U[3, 3] is exactly zero
    _, _, _, _, info = _run(compiler, solver, a)
    assert np.all(info[:, 0] == 4)  # LAPACK: the 1-based index of the first zero pivot


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_qr_factor_gives_r(compiler, rng, dtype):
    m, n = 20, 12
    solver = _solver("geqrf", (m, n), dtype)
    a = _random(rng, (BLOCKS, 1, m, n), dtype)
    factored, _, _, tau, _ = _run(compiler, solver, a)
    r = np.triu(_unpack(factored, 1, (m, n))[:, 0, :n, :])
    gram = np.conj(np.swapaxes(a[:, 0], -1, -2)) @ a[:, 0]  # A^H A = R^H R, whatever R's signs
    np.testing.assert_allclose(np.conj(np.swapaxes(r, -1, -2)) @ r, gram, rtol=0,
                               atol=_tolerance(dtype) * 10 * np.abs(gram).max())
    assert np.all(np.isfinite(tau[:, :n]))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_least_squares_matches_numpy(compiler, rng, dtype):
    m, n, k = 32, 10, 2
    solver = _solver("gels", (m, n, k), dtype)
    a = _random(rng, (BLOCKS, 1, m, n), dtype)
    b = _random(rng, (BLOCKS, 1, m, k), dtype)
    _, solved, _, _, _ = _run(compiler, solver, a, b)
    got = _unpack(solved, 1, (m, k))[:, 0, :n, :]
    for block in range(BLOCKS):
        expected = np.linalg.lstsq(a[block, 0], b[block, 0], rcond=None)[0]
        np.testing.assert_allclose(got[block], expected, rtol=0, atol=_tolerance(dtype) * 20 * np.abs(expected).max())


def _pack_padded(matrices, ld, dtype):
    """As ``_pack`` with each column ``ld`` elements apart; the padding holds NaN, which a solver that
    read it would spread into the results."""
    blocks, batches, rows, cols = matrices.shape
    padded = np.full((blocks, batches, cols, ld), np.nan, dtype=np.complex128)
    padded[..., :rows] = np.swapaxes(matrices, -1, -2)
    return padded.reshape(blocks, -1).astype(dtype)


def _unpack_padded(packed, batches, ld, shape):
    rows, cols = shape
    blocks = packed.shape[0]
    columns = packed[:, : batches * cols * ld].reshape(blocks, batches, cols, ld)
    return np.swapaxes(columns[..., :rows], -1, -2), columns[..., rows:]


@pytest.mark.parametrize("dtype", [np.float64, np.complex64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("function", ["posv", "gesv_partial_pivot"])
@pytest.mark.parametrize("leading_dimension", ["suggested", (27, 29)], ids=["suggested", "27-29"])
def test_padded_leading_dimensions_solve_and_leave_the_padding(compiler, rng, dtype, function, leading_dimension):
    n, k, batches = 24, 3, 2
    solver = _solver(function, (n, n, k), dtype, batches_per_block=batches, leading_dimension=leading_dimension)
    assert solver.lda >= n and solver.ldb >= n
    assert solver.a_size == batches * solver.lda * n and solver.b_size == batches * solver.ldb * k
    a = _spd(rng, batches, n, dtype)
    b = _random(rng, (BLOCKS, batches, n, k), dtype)
    cuda = compiler.cuda
    a_d = cuda.to_device(_pack_padded(a, solver.lda, dtype))
    b_d = cuda.to_device(_pack_padded(b, solver.ldb, dtype))
    ipiv_d = cuda.to_device(np.zeros((BLOCKS, max(solver.ipiv_size, 1)), np.int32))
    tau_d = cuda.to_device(np.zeros((BLOCKS, 1), dtype))
    info_d = cuda.to_device(np.full((BLOCKS, batches), -7, np.int32))
    kernel = cuda.jit(compiler.bind(_kernels.solver_kernel(solver)))
    kernel[BLOCKS, solver.block_dim](a_d, b_d, ipiv_d, tau_d, info_d)
    assert np.all(info_d.copy_to_host() == 0)
    solved, b_padding = _unpack_padded(b_d.copy_to_host(), batches, solver.ldb, (n, k))
    _, a_padding = _unpack_padded(a_d.copy_to_host(), batches, solver.lda, (n, n))
    expected = np.linalg.solve(a, b)
    np.testing.assert_allclose(solved.astype(np.complex128), expected, rtol=0,
                               atol=_tolerance(dtype) * 10 * np.abs(expected).max())
    assert np.isnan(a_padding).all() and np.isnan(b_padding).all()
