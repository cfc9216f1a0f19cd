"""The direct solver's CPU space: SuperLU through ``scipy.sparse.linalg.splu``.

The same contract as the GPU's: the matrix type and stored triangle are honoured (a symmetric or
Hermitian matrix is rebuilt from its stored triangle, the lower one when the whole matrix is
stored), an exactly zero pivot raises
:class:`~nvmathx.SingularMatrixError` (scipy's ``spsolve`` returns NaN with a warning instead), a
positive definite type whose pivots are not all positive raises it too, and iterative refinement
runs the requested steps. SuperLU perturbs no pivots; where it pivots only on the diagonal (the
symmetric types), the signs of ``U``'s diagonal give the inertia.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._core.errors import SingularMatrixError
from ._solver_options import DirectSolverOptions, superlu_settings

__all__ = ["CpuFactorization", "full_matrix", "check_finite_host"]


def full_matrix(csr, options: DirectSolverOptions):
    """The matrix the solver factorizes: ``csr`` itself for a general matrix, else the symmetric or
    Hermitian matrix whose stored triangle is the one read (lower for ``"full"`` and ``"lower"``)."""
    import scipy.sparse

    csr = scipy.sparse.csr_array(csr)
    if options.matrix_type == "general":
        return csr.tocsc()
    triangle = scipy.sparse.triu(csr) if options.triangle == "upper" else scipy.sparse.tril(csr)
    strict = triangle - scipy.sparse.diags_array(triangle.diagonal())
    other = strict.conj().T if options.matrix_type in ("hermitian", "hpd") else strict.T
    matrix = scipy.sparse.csc_array(triangle + other)
    if options.matrix_type in ("hermitian", "hpd"):  # a Hermitian matrix's diagonal is real
        matrix.setdiag(matrix.diagonal().real)
    return matrix


def check_finite_host(array, argument: str) -> None:
    from .._core.errors import OperandError

    if not np.isfinite(array).all():
        raise OperandError(argument, "holds NaN or infinite values (pass options={'check_finite': False} to skip "
                                     "this check)")


class CpuFactorization:
    """SuperLU's factors of one matrix, and what it reports."""

    __slots__ = ("matrix", "lu", "options", "factor_nnz", "inertia")

    def __init__(self, csr, options: DirectSolverOptions):
        import scipy.sparse.linalg

        self.options = options
        self.matrix = full_matrix(csr, options)
        n = self.matrix.shape[0]
        self.inertia: tuple | None = None
        self.lu: Any = None
        if n == 0:
            self.lu, self.factor_nnz = None, 0
            return
        try:
            self.lu = scipy.sparse.linalg.splu(self.matrix, **superlu_settings(options))
        except RuntimeError as error:  # SuperLU: "Factor is exactly singular"
            raise SingularMatrixError(f"a is singular: SuperLU met an exactly zero pivot ({error})") from None
        self.factor_nnz = int(self.lu.L.nnz + self.lu.U.nnz)
        self._check_pivots()

    def _check_pivots(self) -> None:
        pivots = self.lu.U.diagonal()
        zero = np.flatnonzero(pivots == 0)
        if zero.size:  # (SuperLU reports most of these itself)
            raise SingularMatrixError("a is singular: an exactly zero pivot", pivot=int(zero[0]))
        if self.options.matrix_type == "general" or not np.array_equal(self.lu.perm_r, self.lu.perm_c):
            return
        real = pivots.real  # symmetric pivoting: A = P' L D L^T P with D = diag(U), so these signs are A's
        positive, negative = int((real > 0).sum()), int((real < 0).sum())
        self.inertia = (positive, negative)
        if self.options.matrix_type in ("spd", "hpd") and negative:
            raise SingularMatrixError(f"a is not positive definite ({negative} negative pivot(s)) but "
                                      f"options.matrix_type is {self.options.matrix_type!r}",
                                      pivot=int(np.flatnonzero(real < 0)[0]))

    def solve(self, b: np.ndarray) -> np.ndarray:
        """``op(A) x = b`` for ``b`` of shape (n,) or (n, k), with the refinement steps asked for."""
        if self.lu is None:
            return np.empty_like(b)
        trans = {"normal": "N", "transpose": "T", "conjugate_transpose": "H"}[self.options.solve_mode]
        x = self.lu.solve(b, trans=trans)
        if self.options.refinement_steps:
            operator = {"N": self.matrix, "T": self.matrix.T, "H": self.matrix.conj().T}[trans]
            for _ in range(self.options.refinement_steps):
                x = x + self.lu.solve(b - operator @ x, trans=trans)
        return x
