"""The function forms of the dense solvers: solve(a, b, ...) (scipy.linalg.solve's signature) and
direct_solver(a, b, ...) (nvmath-python's), backed by the area's plan cache on the GPU."""

from __future__ import annotations

import dataclasses
from typing import overload

import numpy as np

from .._core.errors import UnsupportedOperandError
from .._core.execution import ExecutionCUDA, normalize_execution
from .._core.options import check_or_create_options
from .._core.tensor import key_function, operand_keys, wrap_operand
from ..typing import AnyArray, ArrayLike, ArrayT, ExecutionLike, HostArrayLike, NumpyArrayT, OptionsLike, StreamLike
from ._function import plan_cache
from ._solver import DirectSolver, plan_detached
from ._solver_options import DirectSolverOptions

__all__ = ["solve", "direct_solver", "solve_plan_key"]


def solve_plan_key(a: ArrayLike, b: ArrayLike, *, options: OptionsLike = None,
                   execution: ExecutionLike = None) -> tuple:
    """The plan-cache key of a dense solve (:func:`direct_solver`, and :func:`solve` whose keywords
    fill ``options``): a hashable tuple of each operand's library, shape, strides, dtype and device,
    and the options and execution space. Values and addresses are not part of it."""
    return _key(a, b, options, execution)[0]


def _key(a, b, options, execution) -> tuple:
    sig_a, _, device_id = (operand_keys.get(type(a)) or key_function(a, "a"))(a)
    sig_b, _, _ = (operand_keys.get(type(b)) or key_function(b, "b"))(b)
    options = check_or_create_options(DirectSolverOptions, options, "options")
    if options.memory_resource is not None or options.logger is not None:
        # identity stands in for objects that may not hash; the cached plan keeps them alive
        options = (dataclasses.replace(options, memory_resource=None, logger=None), id(options.memory_resource),
                   id(options.logger))
    if isinstance(execution, dict):
        execution = normalize_execution(execution, device_id)
    return ("dense solve", sig_a, sig_b, options, execution), device_id


class _CachedSolve:
    """A planned GPU solver kept in the cache: its engine and the stream choice of its library."""

    __slots__ = ("engine", "streams")

    def __init__(self, engine, streams):
        self.engine = engine
        self.streams = streams

    @property
    def workspace_bytes(self) -> int:
        return self.engine.workspace_bytes

    def run(self, a, b, stream):
        holder = self.streams(stream)
        a_op, b_op = wrap_operand(a, "a"), wrap_operand(b, "b")
        return self.engine.factorize_and_solve(a_op, b_op, a_op, holder).obj

    def free(self) -> None:
        self.engine.free()


def _cached_entry(a, b, options, execution, stream) -> _CachedSolve:
    engine, streams = plan_detached(a, b, options, execution, stream)
    return _CachedSolve(engine, streams)


@overload
def direct_solver(a: NumpyArrayT, b: NumpyArrayT, *, options: OptionsLike = None, execution: ExecutionLike = None,
                  stream: StreamLike = None) -> np.ndarray: ...
@overload
def direct_solver(a: HostArrayLike, b: HostArrayLike, *, options: OptionsLike = None, execution: ExecutionLike = None,
                  stream: StreamLike = None) -> np.ndarray: ...
@overload
def direct_solver(a: ArrayT, b: ArrayT, *, options: OptionsLike = None, execution: ExecutionLike = None,
                  stream: StreamLike = None) -> ArrayT: ...
def direct_solver(a: ArrayLike, b: ArrayLike, *, options: OptionsLike = None, execution: ExecutionLike = None,
                  stream: StreamLike = None) -> AnyArray:
    """Solve ``op(a) x = b`` in one call: :class:`DirectSolver`'s plan, factorize and solve.

    nvmath-python's spelling of :func:`solve`: the structure, transpose and checks come from
    ``options`` (:class:`DirectSolverOptions`). GPU plans are kept in the area's plan cache
    (:data:`plan_cache`), keyed by :func:`solve_plan_key`, so a repeated call of one shape costs a
    key, a lookup and the library calls. Host operands run on the CPU with scipy unless
    ``execution="cuda"`` (not cached).

    Parameters
    ----------
    a, b : array or array-like
        ``a`` is ``(..., n, n)``; ``b`` is ``(n,)`` (one right-hand side for every matrix) or
        ``(..., n, k)``, its batch dimensions broadcasting with ``a``'s; one library and dtype
        (float32, float64, complex64 or complex128).
    options : DirectSolverOptions, dict or None
        The structure (``assume_a``, ``lower``), ``transposed``, ``check_finite``, ``check``,
        ``engine``, ``memory_resource``, ``blocking`` and ``logger`` (see
        :class:`DirectSolverOptions`).
    execution : "cuda", "cpu", ExecutionCUDA, ExecutionCPU, dict or None
        Where to run. None: where the operands live (numpy arrays run on the CPU with scipy);
        ``"cuda"`` with host operands copies them to the GPU and the result back (not cached).
    stream : cuda.core Stream, object with ``__cuda_stream__``, int or None
        The stream to run on (default: the operand library's current stream). CPU execution takes
        none.

    Returns
    -------
    array
        ``x``, of ``b``'s shape broadcast over the batch (see :class:`DirectSolver`).

    Raises
    ------
    SingularMatrixError
        When a matrix is exactly singular (or not positive definite where that is assumed),
        naming the first failing matrix and pivot; also a :class:`numpy.linalg.LinAlgError`.
    OperandError, UnsupportedOperandError, OptionsError
        For bad operands, NaN or Inf with ``check_finite``, or bad options; the message names the
        argument.

    Examples
    --------
    >>> import numpy as np
    >>> from nvmathx.linalg import direct_solver
    >>> direct_solver(np.array([[2.0, 0.0], [1.0, 4.0]]), np.array([2.0, 9.0]),
    ...               options={"assume_a": "lower triangular"})
    array([1., 2.])
    """
    try:
        key, device_id = _key(a, b, options, execution)
    except UnsupportedOperandError:
        return _uncached(a, b, options, execution, stream)  # lists and scalars: numpy arrays, uncached
    if device_id < 0 or not (execution is None or execution == "cuda"
                             or (isinstance(execution, ExecutionCUDA) and execution.device_id == device_id)):
        return _uncached(a, b, options, execution, stream)
    entry = plan_cache.get(device_id, key)
    if entry is None:
        entry = _cached_entry(a, b, options, execution, stream)
        plan_cache.put(device_id, key, entry)
    return entry.run(a, b, stream)


def _uncached(a, b, options, execution, stream):
    with DirectSolver(a, b, options=options, execution=execution, stream=stream) as solver:
        solver.plan()
        solver.factorize()
        return solver.solve()


# solve()'s keywords merged into its options, memoized: building and checking the frozen options
# twice per call was a measurable part of a small solve's host time. Keys carry each value's type, so
# that 1 and True (equal, and equally hashed) are told apart and a bad value is still refused.
_OPTIONS_MEMO: dict = {}
_OPTIONS_MEMO_SIZE = 256


def _solve_options(options, assume_a, lower, transposed, check_finite) -> DirectSolverOptions:
    keywords = (type(assume_a), assume_a, type(lower), lower, type(transposed), transposed, type(check_finite),
                check_finite)
    if options is None:
        memo_key: tuple | None = (None, keywords)
    elif type(options) is dict:
        memo_key = (tuple((name, type(value), value) for name, value in options.items()), keywords)
    else:
        memo_key = (id(options), keywords)  # an instance: kept alive by its entry (below)
    try:
        entry = _OPTIONS_MEMO.get(memo_key)
    except TypeError:  # an unhashable value: no memo
        entry, memo_key = None, None
    if entry is not None and (options is None or type(options) is dict or entry[0] is options):
        return entry[1]
    merged = check_or_create_options(DirectSolverOptions, options, "options")
    merged = dataclasses.replace(merged, assume_a=assume_a, lower=lower, transposed=transposed,
                                 check_finite=check_finite)
    if memo_key is not None:
        if len(_OPTIONS_MEMO) >= _OPTIONS_MEMO_SIZE:
            _OPTIONS_MEMO.clear()
        _OPTIONS_MEMO[memo_key] = (options if isinstance(options, DirectSolverOptions) else None, merged)
    return merged


@overload
def solve(a: NumpyArrayT, b: NumpyArrayT, *, assume_a: str | None = None, lower: bool = False,
          transposed: bool | str = False, check_finite: bool = True, options: OptionsLike = None,
          execution: ExecutionLike = None, stream: StreamLike = None) -> np.ndarray: ...
@overload
def solve(a: HostArrayLike, b: HostArrayLike, *, assume_a: str | None = None, lower: bool = False,
          transposed: bool | str = False, check_finite: bool = True, options: OptionsLike = None,
          execution: ExecutionLike = None, stream: StreamLike = None) -> np.ndarray: ...
@overload
def solve(a: ArrayT, b: ArrayT, *, assume_a: str | None = None, lower: bool = False,
          transposed: bool | str = False, check_finite: bool = True, options: OptionsLike = None,
          execution: ExecutionLike = None, stream: StreamLike = None) -> ArrayT: ...
def solve(a: ArrayLike, b: ArrayLike, *, assume_a: str | None = None, lower: bool = False,
          transposed: bool | str = False, check_finite: bool = True, options: OptionsLike = None,
          execution: ExecutionLike = None, stream: StreamLike = None) -> AnyArray:
    """Solve ``op(a) x = b`` with :func:`scipy.linalg.solve`'s semantics (scipy 1.17).

    ``a`` is ``(..., n, n)``; a 1-D ``b`` of length ``n`` is one right-hand side for every matrix
    (the result is ``(..., n)``); otherwise ``b`` is ``(..., n, k)`` and the batch dimensions of
    ``a`` and ``b`` broadcast. Backed on the GPU by the area's plan cache (see
    :func:`direct_solver`, which this is with the keywords below set in ``options``).

    Parameters
    ----------
    a, b : array or array-like
        Of one library and dtype (float32, float64, complex64 or complex128).
    assume_a : str or None
        ``"general"`` (LU with partial pivoting; also None, ``"symmetric"`` and ``"hermitian"``,
        which run as general), ``"positive definite"`` (Cholesky), ``"lower triangular"``,
        ``"upper triangular"`` or ``"diagonal"``. ``"tridiagonal"`` and ``"banded"`` raise
        :class:`~nvmathx.OptionsError` for now.
    lower : bool
        For ``"positive definite"``: read the lower triangle of ``a`` (default: the upper one).
    transposed : bool or "conjugate"
        True solves ``aᵀ x = b``, ``"conjugate"`` ``aᴴ x = b``.
    check_finite : bool
        Refuse NaN or Inf in ``a`` or ``b`` (an :class:`~nvmathx.OperandError` naming it).
    options : DirectSolverOptions, dict or None
        The rest: ``check``, ``engine``, ``memory_resource``, ``blocking``, ``logger``; the keywords
        above replace the fields of the same names.
    execution : "cuda", "cpu", ExecutionCUDA, ExecutionCPU, dict or None
        Where to run. None: where the operands live (numpy arrays run on the CPU with scipy);
        ``"cuda"`` with host operands copies them to the GPU and the result back (not cached).
    stream : cuda.core Stream, object with ``__cuda_stream__``, int or None
        The stream to run on (default: the operand library's current stream). CPU execution takes
        none.

    Returns
    -------
    array
        ``x``, a new array of the operands' library.

    Raises
    ------
    SingularMatrixError
        When a matrix is exactly singular (not positive definite, for ``"positive definite"``);
        it names the first failing matrix and pivot. A :class:`numpy.linalg.LinAlgError`.
    OperandError, UnsupportedOperandError, OptionsError
        For bad operands or options; the message names the argument.

    Notes
    -----
    Two deliberate differences from scipy: ``assume_a=None`` is general with no detection of
    structure (scipy inspects the matrix, which would cost a pass and a synchronisation), and no
    ``LinAlgWarning`` is given for ill-conditioned matrices. ``transposed=True`` works for complex
    matrices too (scipy refuses them), and ``"conjugate"`` is added. ``a`` and ``b`` must have one
    dtype (scipy promotes).

    Examples
    --------
    >>> import numpy as np
    >>> from nvmathx.linalg import solve
    >>> a = np.array([[3.0, 2.0, 0.0], [1.0, -1.0, 0.0], [0.0, 5.0, 1.0]])
    >>> solve(a, np.array([2.0, 4.0, -1.0]))
    array([ 2., -2.,  9.])
    >>> solve(np.stack([a, 2 * a]), np.array([2.0, 4.0, -1.0])).shape  # one b for each matrix
    (2, 3)
    """
    options = _solve_options(options, assume_a, lower, transposed, check_finite)
    # Two ArrayLike unions are more than mypy splits over direct_solver's overloads; the same kind comes back.
    return direct_solver(a, b, options=options, execution=execution, stream=stream)  # type: ignore[misc, type-var]
