"""The stateful sparse direct solver, :class:`DirectSolver`."""

from __future__ import annotations

from .._core.errors import InvalidStateError, OperandError, UnsupportedOperandError
from .._core.execution import ExecutionCPU, ExecutionCUDA, normalize_execution
from .._core.options import check_or_create_options
from .._core.tensor import check_dense_companion, wrap_operand, wrap_sparse_operand
from ..typing import AnyArray, ArrayLike, ExecutionLike, OptionsLike, SparseArrayLike, StreamLike
from ._solver_options import DirectSolverOptions, check_dtype_for_type
from ._solver_pattern import pattern_checksum
from ._solver_spaces import CpuSpace, CudaSpace

__all__ = ["DirectSolver", "FactorizationInfo", "SOLVER_DTYPES", "rebind_cached", "solver_of_checked"]

SOLVER_DTYPES = ("float32", "float64", "complex64", "complex128")


class FactorizationInfo(dict):
    """What the factorization reports (a dict; every figure the space does not give is None).

    Keys
    ----
    factor_nnz : int
        Non-zeros of the factors (cuDSS's ``LU_NNZ``; on the CPU, SuperLU's ``L.nnz + U.nnz``).
    peak_device_memory : int or None
        cuDSS's estimate of its peak device memory in bytes (None on the CPU).
    perturbed_pivots : int or None
        Pivots cuDSS perturbed (``NPIVOTS``); 0 on the CPU (SuperLU perturbs none).
    inertia : tuple or None
        ``(positive, negative)`` pivots of a symmetric or Hermitian matrix where the space
        defines it (cuDSS for the indefinite types; the CPU where SuperLU pivoted on the diagonal).
    """


class DirectSolver:
    """Solve ``A x = b`` for a sparse matrix ``A``: reordering and symbolic analysis once
    (:meth:`plan`), the numerical factorization (:meth:`factorize`) whenever ``A``'s values change,
    and any number of solves (:meth:`solve`).

    Parameters
    ----------
    a : sparse matrix
        A square CSR, CSC or COO matrix of scipy.sparse, cupyx.scipy.sparse or torch, of float32,
        float64, complex64 or complex128, with int32 or int64 indices.
    b : array
        The right-hand side(s), shape ``(n,)`` or ``(n, k)``, a dense array of ``a``'s library (numpy
        for scipy) of ``a``'s dtype, on ``a``'s device.
    options : DirectSolverOptions, dict or None
        The matrix type, stored triangle, reordering, pivoting, refinement and solve mode.
    execution : "cuda", "cpu", ExecutionCUDA, ExecutionCPU, dict or None
        Where it runs: None runs where ``a`` lives (host matrices on the CPU with SuperLU); "cuda"
        copies host operands to the GPU and results back.
    stream : cuda.core Stream, object with ``__cuda_stream__``, int or None
        The stream of the GPU work (None: the operand library's current stream).

    Raises
    ------
    UnsupportedOperandError
        ``a`` is no sparse matrix, or of another dtype; ``b`` is of another library than ``a``.
    OperandError
        ``a`` is not square; ``b``'s shape, dtype or device does not fit ``a``; NaN or Inf in either
        (``options.check_finite``).
    OptionsError
        A bad option, or one the loaded cuDSS lacks (Bunch-Kaufman pivoting, transposed solves).

    See Also
    --------
    spsolve, DirectSolverOptions

    Notes
    -----
    :meth:`factorize` and, on a GPU, the constructor and :meth:`reset_operands` (which compute the
    checksum of the pattern) wait for the stream: a zero pivot must be known before ``solve``
    returns. :meth:`solve` itself does not wait on a GPU. cuDSS 1.x compiles some kernels at run
    time on first use: warm up before timing.

    Examples
    --------
    >>> import numpy as np, scipy.sparse
    >>> import nvmathx
    >>> a = scipy.sparse.csr_array(np.array([[4.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 2.0]]))
    >>> b = np.array([1.0, 2.0, 3.0])
    >>> with nvmathx.sparse.DirectSolver(a, b, options={"matrix_type": "spd"}) as solver:
    ...     solver.plan()
    ...     info = solver.factorize()
    ...     x = solver.solve()
    ...     solver.reset_operands(b=np.array([0.0, 1.0, 0.0]))
    ...     y = solver.solve()
    >>> bool(np.allclose(a @ x, b)), bool(np.allclose(a @ y, [0.0, 1.0, 0.0]))
    (True, True)
    >>> info["factor_nnz"] > 0
    True
    """

    def __init__(self, a: SparseArrayLike, b: ArrayLike, *, options: OptionsLike = None,
                 execution: ExecutionLike = None, stream: StreamLike = None) -> None:
        options = check_or_create_options(DirectSolverOptions, options, "options")
        a_operand = _check_matrix(wrap_sparse_operand(a, "a"))
        self._setup(a_operand, b, options, normalize_execution(execution, a_operand.device_id, "execution"), stream)

    def _setup(self, a, b, options, execution, stream, checksum: bytes | None = None,
               vector_result: bool = False) -> None:
        """The constructor's work on a checked matrix (``spsolve`` passes the checksum it computed,
        and asks for scipy's 1-D result of a one-column ``b``)."""
        self._options = options
        self._a = a
        check_dtype_for_type(options, a.dtype)
        self._execution = execution
        self._b = self._check_rhs(b)
        if isinstance(execution, ExecutionCUDA):
            self._space: CpuSpace | CudaSpace = CudaSpace(a, self._b, options, execution.device_id, stream)
        else:
            self._space = CpuSpace(a, self._b, options)
        self._space.vector_result = vector_result
        self._space.check_finite(a, self._b)
        self._checksum = checksum if checksum is not None else pattern_checksum(a, self._space.checksum_stream())
        self._state = "new"  # new -> planned -> factorized; "freed" after free()
        self._info: FactorizationInfo | None = None

    def _check_rhs(self, b):
        operand = wrap_operand(b, "b")
        check_dense_companion(self._a, operand, "b")
        n = self._a.shape[0]
        if operand.dtype != self._a.dtype:
            raise OperandError("b", f"has dtype {operand.dtype} but a has {self._a.dtype}: pass b of a's dtype")
        if len(operand.shape) not in (1, 2) or operand.shape[0] != n:
            raise OperandError("b", f"expected shape ({n},) or ({n}, k) for a of shape {self._a.shape} "
                                    f"(got {tuple(operand.shape)})")
        return operand

    # -- life cycle ---------------------------------------------------------------------------

    def _check_state(self, *allowed: str) -> None:
        if self._state == "freed":
            raise InvalidStateError("this DirectSolver has been freed: make a new one")
        if self._state not in allowed:
            step = {"new": "plan()", "planned": "factorize()"}[self._state]
            raise InvalidStateError(f"call {step} first")

    def plan(self) -> None:
        """Reordering and symbolic factorization of ``a``'s pattern (once per solver)."""
        self._check_state("new", "planned", "factorized")
        self._space.plan()
        self._state = "planned"
        self._info = None

    def factorize(self) -> FactorizationInfo:
        """The numerical factorization of ``a``'s current values; returns what it reports.

        Raises
        ------
        SingularMatrixError
            An exactly zero pivot (or, for ``"spd"``/``"hpd"``, a matrix that is not positive
            definite).
        """
        self._check_state("planned", "factorized")
        self._state = "planned"
        self._info = FactorizationInfo(self._space.factorize())
        self._state = "factorized"
        return self._info

    def solve(self) -> AnyArray:
        """``x`` with ``op(a) x = b`` for the current ``b``: a new array of ``b``'s kind and shape."""
        self._check_state("factorized")
        return self._space.solve()

    def reset_operands(self, a: SparseArrayLike | None = None, b: ArrayLike | None = None) -> None:
        """New values: ``a`` of the same shape, dtypes and pattern (call :meth:`factorize` next;
        :meth:`plan` need not run again), and/or ``b`` of the same shape and dtype.

        Raises
        ------
        OperandError
            ``a`` differs in shape, number of entries, dtypes or pattern (named ``a``); ``b`` in shape
            or dtype.
        """
        self._check_state("new", "planned", "factorized")
        if a is not None:
            new = _check_matrix(wrap_sparse_operand(a, "a"))
            self._check_same_kind(new)
            if pattern_checksum(new, self._space.checksum_stream()) != self._checksum:
                raise OperandError("a", "has another sparsity pattern than the planned one: make a new DirectSolver "
                                        "(or call spsolve) for it")
            self._set_matrix(new)
        if b is not None:
            operand = self._check_rhs(b)
            if tuple(operand.shape) != tuple(self._b.shape):
                raise OperandError("b", f"expected shape {tuple(self._b.shape)}, the planned one "
                                        f"(got {tuple(operand.shape)})")
            self._space.check_finite(None, operand)
            self._b = operand
            self._space.set_rhs(operand)

    def _set_matrix(self, new) -> None:
        """Take a checked matrix of the planned pattern (``spsolve`` matched it by its key)."""
        self._space.check_finite(new, None)
        self._a = new
        self._space.set_matrix(new)
        if self._state == "factorized":
            self._state = "planned"

    def _set_stream(self, stream) -> None:
        self._space.set_stream(stream)

    def _check_same_kind(self, new) -> None:
        old = self._a
        for what, before, after in (("shape", old.shape, new.shape), ("number of entries", old.nnz, new.nnz),
                                    ("dtype", old.dtype, new.dtype), ("index dtype", old.index_dtype, new.index_dtype),
                                    ("library", old.package, new.package), ("device", old.device_id, new.device_id)):
            if before != after:
                raise OperandError("a", f"has {what} {after} but the planned matrix has {before}")

    def free(self) -> None:
        """Release the factorization and the library objects. Safe to call twice."""
        if self._state == "freed":
            return
        self._state = "freed"
        self._space.free()

    def __enter__(self) -> DirectSolver:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.free()

    # -- what it was made for -----------------------------------------------------------------

    @property
    def options(self) -> DirectSolverOptions:
        return self._options

    @property
    def execution(self) -> ExecutionCPU | ExecutionCUDA:
        return self._execution

    @property
    def shape(self) -> tuple:
        return self._a.shape

    @property
    def memory_bytes(self) -> int:
        """Device bytes of cuDSS's peak estimate for the last factorization (0 before it and on the CPU);
        what a plan cache counts."""
        info = self._info
        return int(info["peak_device_memory"] or 0) if info else 0

    @property
    def factorization(self) -> FactorizationInfo | None:
        """What the last :meth:`factorize` reported (None before it)."""
        return self._info


def _check_matrix(a):
    if a.shape[0] != a.shape[1]:
        raise OperandError("a", f"expected a square matrix (got shape {a.shape})")
    if a.dtype.name not in SOLVER_DTYPES:
        raise UnsupportedOperandError("a", f"values of dtype {a.dtype} are not supported by the direct solver "
                                           f"(expected {', '.join(SOLVER_DTYPES)})")
    return a


# spsolve's interface to the solvers it makes and caches.

def solver_of_checked(a, b, options, execution, stream, checksum: bytes) -> DirectSolver:
    """A DirectSolver of a matrix spsolve has checked (and whose pattern checksum it computed), with
    scipy's 1-D result for a one-column ``b``."""
    solver = DirectSolver.__new__(DirectSolver)
    solver._setup(a, b, options, execution, stream, checksum, vector_result=True)
    return solver


def rebind_cached(solver: DirectSolver, a, stream) -> None:
    """Point a cached solver at a checked matrix of its pattern (matched by spsolve's key), on ``stream``."""
    solver._set_stream(stream)
    solver._set_matrix(a)
