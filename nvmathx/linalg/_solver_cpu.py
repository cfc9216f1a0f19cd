"""The CPU execution space of the dense solvers: scipy.linalg's LU (lu_factor / lu_solve),
Cholesky (cho_factor / cho_solve) and triangular solves, one matrix at a time, with the same
contract as the GPU engines (the reference their tests compare against)."""

from __future__ import annotations

import warnings

import numpy as np

from .._core.errors import OperandError, SingularMatrixError
from ._solver_problem import SolveProblem

__all__ = ["CpuSolverState", "singular_error", "check_finite_host"]

_TRANS = {"N": 0, "T": 1, "C": 2}  # lu_solve / solve_triangular's trans


def singular_error(problem: SolveProblem, a_index: int, pivot: int) -> SingularMatrixError:
    """The error for matrix ``a_index`` of the flattened batch of ``a`` failing at ``pivot`` (0-based)."""
    batch_index = a_index if problem.a_batch else None
    position = tuple(int(i) for i in np.unravel_index(a_index, problem.a_batch)) if problem.a_batch else ()
    where = f"matrix {position} of the batch " if problem.a_batch else ""
    if problem.structure == "positive definite":
        what = f"is not positive definite: its leading minor of order {pivot + 1} is not positive"
    elif problem.structure == "general":
        what = f"is singular: U[{pivot}, {pivot}] of its LU factorization is exactly zero"
    else:
        what = f"is singular: its diagonal element {pivot} is zero"
    return SingularMatrixError(f"a: {where}{what}", batch_index=batch_index, pivot=pivot)


def check_finite_host(values: np.ndarray, argument: str) -> None:
    """An OperandError naming ``argument`` when ``values`` holds NaN or Inf."""
    if values.size and not np.isfinite(values).all():
        raise OperandError(argument, "contains NaN or Inf (pass check_finite=False to skip this check)")


class CpuSolverState:
    """Factors of ``a`` (one entry per matrix of a's own batch) and solves with them, on host arrays."""

    def __init__(self, problem: SolveProblem, *, check: str, check_finite: bool):
        self.problem = problem
        self.raise_singular = check == "raise"
        self.check_finite = check_finite and check == "raise"
        self.factors: list = []

    def factorize(self, a: np.ndarray) -> None:
        problem = self.problem
        if self.check_finite:
            check_finite_host(a, "a")
        matrices = a.reshape((problem.a_count, problem.n, problem.n)) if problem.n else ()
        factors = []
        for index in range(problem.a_count if problem.n else 0):
            factors.append(self._factor(index, matrices[index]))
        self.factors = factors

    def _factor(self, index: int, matrix: np.ndarray):
        """One matrix's factors (NaN-filled when it fails and check is "none")."""
        import scipy.linalg as sl

        structure, problem = self.problem.structure, self.problem
        if structure == "general":
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", sl.LinAlgWarning)  # an exactly zero pivot: checked below
                lu, piv = sl.lu_factor(matrix, check_finite=False)
            self._check_diagonal(index, np.diagonal(lu))
            return lu, piv
        if structure == "positive definite":
            if problem.operation == "T" and np.iscomplexobj(matrix):
                matrix = matrix.conj()  # aᵀ = conj(a) for a Hermitian a, which is positive definite too
            try:
                return sl.cho_factor(matrix, lower=problem.lower, check_finite=False)
            except np.linalg.LinAlgError as error:
                pivot = _leading_minor(error, problem.n)
                if self.raise_singular:
                    raise singular_error(problem, index, pivot) from None
                return np.full_like(matrix, np.nan), problem.lower
        if structure == "diagonal":
            diagonal = np.diagonal(matrix).copy()
            self._check_diagonal(index, diagonal)
            return diagonal
        triangular = np.array(matrix)
        self._check_diagonal(index, np.diagonal(triangular))
        return triangular

    def _check_diagonal(self, index: int, diagonal: np.ndarray) -> None:
        zeros = np.flatnonzero(diagonal == 0)
        if zeros.size and self.raise_singular:
            raise singular_error(self.problem, index, int(zeros[0]))

    def solve(self, b: np.ndarray) -> np.ndarray:
        """x of ``op(a) x = b`` for every system of the batch (a new array)."""
        problem = self.problem
        if self.check_finite:
            check_finite_host(b, "b")
        x = np.empty(problem.result_shape, np.dtype(problem.dtype))
        if problem.empty:
            return x
        rhs = b[:, np.newaxis] if problem.b_vector else b
        rhs = np.broadcast_to(rhs, problem.batch + (problem.n, problem.nrhs))
        out = x.reshape(problem.batch + (problem.n, problem.nrhs))
        a_strides = _index_strides(problem.a_batch, problem.batch)
        for index in np.ndindex(*problem.batch):
            a_index = sum(i * s for i, s in zip(index, a_strides))
            out[index] = self._solve_one(self.factors[a_index], rhs[index])
        return x

    def _solve_one(self, factors, rhs: np.ndarray) -> np.ndarray:
        import scipy.linalg as sl

        structure, operation = self.problem.structure, self.problem.operation
        with np.errstate(divide="ignore", invalid="ignore"):  # check="none": a singular system gives Inf/NaN
            if structure == "general":
                return sl.lu_solve(factors, rhs, trans=_TRANS[operation], check_finite=False)
            if structure == "positive definite":
                return sl.cho_solve(factors, rhs, check_finite=False)
            if structure == "diagonal":
                diagonal = factors.conj() if operation == "C" else factors
                return rhs / diagonal[:, np.newaxis]
            return _triangular(factors, rhs, structure == "lower triangular", _TRANS[operation])


def _triangular(matrix, rhs, lower: bool, trans: int) -> np.ndarray:
    """solve_triangular, or NaN where the matrix is singular (scipy refuses it; check="none" asked
    for no error)."""
    import scipy.linalg as sl

    if (np.diagonal(matrix) == 0).any():
        return np.full(rhs.shape, np.nan, matrix.dtype)
    return sl.solve_triangular(matrix, rhs, lower=lower, trans=trans, check_finite=False)


def _index_strides(a_batch: tuple, batch: tuple) -> tuple:
    """Per axis of ``batch``, the step in a's flattened batch (0 where a is broadcast)."""
    a_full = (1,) * (len(batch) - len(a_batch)) + tuple(a_batch)
    strides: list[int] = []
    step = 1
    for extent in reversed(a_full):
        strides.insert(0, 0 if extent == 1 else step)
        step *= extent
    return tuple(strides)


def _leading_minor(error: Exception, n: int) -> int:
    """The 0-based order - 1 of the leading minor scipy's message names ("%d-th leading minor")."""
    import re

    found = re.search(r"(\d+)-th leading minor", str(error))
    return int(found.group(1)) - 1 if found else 0
