"""The function form of the sparse direct solver, :func:`spsolve`, backed by a plan cache."""

from __future__ import annotations

from typing import overload

import numpy as np

from .._core.execution import ExecutionCUDA, normalize_execution
from .._core.options import check_or_create_options
from .._core.plan_cache import PlanCache
from .._core.tensor import wrap_sparse_operand
from ..typing import (
    AnyArray,
    ArrayLike,
    ArrayT,
    ExecutionLike,
    HostArrayLike,
    NumpyArrayT,
    OptionsLike,
    SparseArrayLike,
    StreamLike,
)
from ._solver import _check_matrix, rebind_cached, solver_of_checked
from ._solver_options import DirectSolverOptions
from ._solver_pattern import pattern_checksum

__all__ = ["spsolve", "spsolve_plan_key", "spsolve_plan_cache"]

spsolve_plan_cache = PlanCache("nvmathx.sparse.spsolve", max_size=8, max_memory_bytes=8 << 30)
"""The GPU plans (planned :class:`DirectSolver` objects, factors included) :func:`spsolve` keeps, per
device and thread, keyed by :func:`spsolve_plan_key`; ``clear()`` releases them."""


def _key(a, b_shape, options, execution, checksum) -> tuple:
    return ("spsolve", execution, a.package, a.device_id, a.shape, a.nnz, a.dtype.str, a.index_dtype.str,
            tuple(b_shape), options, checksum)


def spsolve_plan_key(a: SparseArrayLike, b: ArrayLike, *, options: OptionsLike = None,
                     execution: ExecutionLike = None, stream: StreamLike = None) -> tuple:
    """The key of :func:`spsolve`'s plan for these operands: execution space, library, device,
    shape, number of entries, dtypes, ``b``'s shape, options and the checksum of ``a``'s pattern
    (computed where the pattern lives; never its addresses)."""
    options = check_or_create_options(DirectSolverOptions, options, "options")
    operand = _check_matrix(wrap_sparse_operand(a, "a"))
    execution = normalize_execution(execution, operand.device_id, "execution")
    stream_holder = _checksum_stream(operand, stream)
    return _key(operand, _shape(b), options, execution, pattern_checksum(operand, stream_holder))


def _shape(b) -> tuple:
    return tuple(getattr(b, "shape", ()))


def _checksum_stream(a, stream):
    if not a.is_device:
        return None
    from .._core.streams import resolve_stream

    return resolve_stream(stream, a.device_id, a.dense_adapter.current_stream)


@overload
def spsolve(a: SparseArrayLike, b: NumpyArrayT, *, options: OptionsLike = None, execution: ExecutionLike = None,
            stream: StreamLike = None) -> np.ndarray: ...
@overload
def spsolve(a: SparseArrayLike, b: HostArrayLike, *, options: OptionsLike = None, execution: ExecutionLike = None,
            stream: StreamLike = None) -> np.ndarray: ...
@overload
def spsolve(a: SparseArrayLike, b: ArrayT, *, options: OptionsLike = None, execution: ExecutionLike = None,
            stream: StreamLike = None) -> ArrayT: ...
def spsolve(a: SparseArrayLike, b: ArrayLike, *, options: OptionsLike = None, execution: ExecutionLike = None,
            stream: StreamLike = None) -> AnyArray:
    """Solve ``A x = b`` for a sparse square ``A``, with ``scipy.sparse.linalg.spsolve``'s semantics.

    Parameters
    ----------
    a : sparse matrix
        A square CSR, CSC or COO matrix of scipy.sparse, cupyx.scipy.sparse or torch, of float32,
        float64, complex64 or complex128.
    b : array
        Shape ``(n,)`` or ``(n, k)``: a dense array of ``a``'s library and dtype on ``a``'s device.
    options : DirectSolverOptions, dict or None
        See :class:`DirectSolverOptions` (the matrix type and triangle, reordering, pivoting,
        refinement, solve mode, ``check_finite``).
    execution : "cuda", "cpu", ExecutionCUDA, ExecutionCPU, dict or None
        Where it runs (None: where ``a`` lives; host matrices on the CPU with SuperLU).
    stream : cuda.core Stream, object with ``__cuda_stream__``, int or None
        The stream of the GPU work.

    Returns
    -------
    array
        ``x`` of ``b``'s library and dtype, and of its shape, except that a ``b`` of shape ``(n, 1)``
        gives ``x`` of shape ``(n,)``, as scipy's does.

    Raises
    ------
    SingularMatrixError
        ``a`` is singular (an exactly zero pivot; ``"spd"``/``"hpd"``: not positive definite).
    OperandError, UnsupportedOperandError, OptionsError
        As :class:`DirectSolver`.

    See Also
    --------
    DirectSolver, spsolve_plan_key, spsolve_plan_cache

    Notes
    -----
    Where scipy returns NaN (with a ``MatrixRankWarning``) for a singular matrix, this raises
    :class:`~nvmathx.SingularMatrixError`, on every execution space. ``b`` must have ``a``'s
    dtype (scipy promotes). The analysis of a pattern is kept in :data:`spsolve_plan_cache`: a
    repeated call with a matrix of the same pattern (the checksum of its indices, not their
    addresses, decides) factorizes and solves without analysing again; on the CPU, SuperLU orders and
    factorizes in one step, so nothing is kept. The call waits for the factorization (to raise on a
    zero pivot), not for the solve.

    Examples
    --------
    >>> import numpy as np, scipy.sparse
    >>> import nvmathx
    >>> a = scipy.sparse.csr_array(np.array([[3.0, 0.0, 1.0], [0.0, 2.0, 0.0], [1.0, 0.0, 4.0]]))
    >>> x = nvmathx.sparse.spsolve(a, np.array([4.0, 2.0, 5.0]))
    >>> np.round(x, 12)
    array([1., 1., 1.])
    """
    options = check_or_create_options(DirectSolverOptions, options, "options")
    operand = _check_matrix(wrap_sparse_operand(a, "a"))
    execution = normalize_execution(execution, operand.device_id, "execution")
    if not isinstance(execution, ExecutionCUDA):  # SuperLU analyses within each factorization: nothing to keep
        with solver_of_checked(operand, b, options, execution, stream, b"") as solver:
            solver.plan()
            solver.factorize()
            return solver.solve()
    checksum = pattern_checksum(operand, _checksum_stream(operand, stream))
    key = _key(operand, _shape(b), options, execution, checksum)
    device_id = execution.device_id
    solver = spsolve_plan_cache.get(device_id, key)
    if solver is None:
        solver = solver_of_checked(operand, b, options, execution, stream, checksum)
        try:
            solver.plan()
            solver.factorize()
        except BaseException:
            solver.free()
            raise
        spsolve_plan_cache.put(device_id, key, solver)
    else:
        rebind_cached(solver, operand, stream)
        solver.reset_operands(b=b)
        solver.factorize()
    return solver.solve()
