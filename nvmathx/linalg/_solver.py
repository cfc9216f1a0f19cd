"""The stateful dense solver: construct (check operands), plan (choose the engine and allocate),
factorize, solve many times."""

from __future__ import annotations

from typing import Any

from .._bindings import cuda_driver
from .._core.errors import InvalidStateError, OperandError, OptionsError
from .._core.execution import ExecutionCPU, normalize_execution
from .._core.lifetime import free_at_collection
from .._core.logs import get_logger
from .._core.options import check_or_create_options
from .._core.streams import CallStreams, resolve_stream
from .._core.tensor import Operand, copy_to_host, host_array, wrap_operand
from ..typing import AnyArray, ArrayLike, ExecutionLike, OptionsLike, StreamLike
from ._operands import check_together, stage
from ._solver_cpu import CpuSolverState
from ._solver_options import DirectSolverOptions
from ._solver_problem import SolveProblem, choose_solver_engine, describe_solve

_FUSED_LIBRARIES = ("mathdx", "nvrtc", "nvJitLink")
_fused: list = []  # whether the fused engine's libraries load, once known


def fused_available() -> bool:
    """Whether the fused cuSOLVERDx engine can be built here: libmathdx, NVRTC and nvJitLink load."""
    if not _fused:
        from .._bindings._loader import load_library
        from .._core.errors import LibraryNotFoundError

        try:
            for name in _FUSED_LIBRARIES:
                load_library(name)
            _fused.append(True)
        except LibraryNotFoundError:
            _fused.append(False)
    return _fused[0]

__all__ = ["DirectSolver", "plan_detached"]

_CONSTRUCTED, _PLANNED, _FACTORIZED, _FREED = "constructed", "planned", "factorized", "freed"


class DirectSolver:
    """Stateful dense solver of ``op(a) x = b``: plan once, factorize, solve for many right-hand sides.

    Semantics are :func:`scipy.linalg.solve`'s (scipy 1.17): ``a`` is ``(..., n, n)``; a 1-D ``b``
    of length ``n`` is one right-hand side for every matrix (the result is ``(..., n)``); otherwise
    ``b`` is ``(..., n, k)`` and the batch dimensions of ``a`` and ``b`` broadcast. The structure
    (``assume_a``), the triangle (``lower``), the transpose and the checks come from
    :class:`DirectSolverOptions`. Results are new arrays of the operands' library.

    Parameters
    ----------
    a, b : array or array-like
        Of one library on one device, float32, float64, complex64 or complex128, both of one
        dtype; any strides (they are copied). Lists and scalars are converted with
        ``numpy.asarray``.
    options : DirectSolverOptions, dict or None
        See :class:`DirectSolverOptions`.
    execution : "cuda", "cpu", ExecutionCUDA, ExecutionCPU or None
        Where to run. None: where the operands live (numpy arrays run on the CPU with scipy);
        ``"cuda"`` with host operands copies them to the GPU and the result back.
    stream : stream-like or None
        The stream of every call (default: the operand library's current stream at each call,
        else the device's default stream); ``factorize(stream=)`` and ``solve(stream=)`` override it.

    Raises
    ------
    OperandError, UnsupportedOperandError, OptionsError
        For bad operands or options; the message names the argument.

    See Also
    --------
    solve, direct_solver : the function forms, backed by a plan cache.

    Notes
    -----
    Life cycle: :meth:`plan` (choose the engine, allocate), :meth:`factorize` (factor ``a``; with
    ``check="raise"`` an exactly singular matrix raises :class:`~nvmathx.SingularMatrixError`),
    :meth:`solve` (any number of times). :meth:`reset_operands` swaps in new values of the same
    shape and dtype: a new ``a`` needs :meth:`factorize` again, a new ``b`` only :meth:`solve`.
    After :meth:`free` every method raises :class:`~nvmathx.InvalidStateError`. A solver is not
    thread-safe: use one per thread.

    On the GPU, ``check="raise"`` reads the factorization's status back (one synchronisation per
    ``factorize()``, and one per ``solve()`` for ``check_finite``); ``check="none"`` reads nothing,
    so ``solve()`` (and ``factorize()``) can be captured in a CUDA graph, and a singular system
    gives Inf or NaN in its solution instead of an error. The CPU space gives NaN there too.

    Examples
    --------
    >>> import numpy as np
    >>> from nvmathx.linalg import DirectSolver
    >>> a = np.array([[4.0, 1.0], [1.0, 3.0]])
    >>> with DirectSolver(a, np.array([1.0, 2.0]), options={"assume_a": "positive definite"}) as solver:
    ...     solver.plan()
    ...     solver.factorize()
    ...     x = solver.solve()
    ...     solver.reset_operands(b=np.array([5.0, 4.0]))
    ...     y = solver.solve()
    >>> np.allclose(a @ x, [1.0, 2.0]), np.allclose(a @ y, [5.0, 4.0])
    (True, True)
    """

    _state = _FREED  # until construction succeeds: a half-built solver has nothing to free

    def __init__(self, a: ArrayLike, b: ArrayLike, *, options: OptionsLike = None, execution: ExecutionLike = None,
                 stream: StreamLike = None) -> None:
        self._state = _FREED  # until construction succeeds
        self._options = check_or_create_options(DirectSolverOptions, options, "options")
        self._logger = get_logger(self._options.logger)
        a_op = wrap_operand(a, "a", array_like=True)
        b_op = wrap_operand(b, "b", array_like=True)
        check_together(a_op, [("b", b_op)])
        options_ = self._options
        self._problem = describe_solve(a_op.shape, a_op.dtype.name, b_op.shape, b_op.dtype.name,
                                       structure=options_.structure, operation=options_.operation,
                                       lower=options_.lower)
        self._execution = normalize_execution(execution, a_op.device_id)
        self._cpu = isinstance(self._execution, ExecutionCPU)
        self._host = a_op
        self._operands: dict[str, Operand] = {"a": a_op, "b": b_op}
        self._engine: Any = None
        if self._cpu:
            if stream is not None:
                raise OptionsError("stream", "CPU execution takes no stream")
        else:
            device_id = self._execution.device_id
            current = a_op.adapter.current_stream if a_op.device_id >= 0 else None
            fixed = resolve_stream(stream, device_id) if stream is not None else None
            self._streams = CallStreams(device_id, current, fixed)
            self._staged = a_op.device_id < 0
            self._stage_all()
        self._state = _CONSTRUCTED

    # -- what was planned ------------------------------------------------------------------------

    @property
    def options(self) -> DirectSolverOptions:
        """The :class:`DirectSolverOptions` this solver was made with (frozen)."""
        return self._options

    @property
    def problem(self) -> SolveProblem:
        """The problem solved: batch, ``n``, right-hand sides, dtype, structure, operation."""
        return self._problem

    @property
    def result_shape(self) -> tuple:
        """The shape of :meth:`solve`'s result (scipy.linalg.solve's)."""
        return self._problem.result_shape

    @property
    def engine(self) -> str | None:
        """The engine planned: ``"scipy"`` (CPU), ``"cusolver"`` or ``"batched"``; None before :meth:`plan`."""
        if self._engine is None:
            return None
        return "scipy" if self._cpu else self._engine.name

    @property
    def workspace_bytes(self) -> int:
        """Device bytes held by the planned factors, pivots and workspaces (0 on the CPU and before
        :meth:`plan`)."""
        return 0 if self._cpu or self._engine is None else self._engine.workspace_bytes

    # -- lifecycle ---------------------------------------------------------------------------------

    def _check_state(self, *allowed) -> None:
        if self._state not in allowed:
            if self._state == _FREED:
                raise InvalidStateError("this DirectSolver was freed; create a new one")
            if self._state == _CONSTRUCTED:
                raise InvalidStateError("call plan() first")
            raise InvalidStateError("call factorize() before solve() (a new a needs factorize() again)")

    def free(self) -> None:
        """Release the factors, workspaces and handles. Safe to call twice; afterwards every method
        raises InvalidStateError."""
        if self._state == _FREED:
            return
        self._state = _FREED
        engine, self._engine = self._engine, None
        self._operands = {}
        if engine is not None and not self._cpu:
            engine.free()

    def __enter__(self) -> DirectSolver:
        self._check_state(_CONSTRUCTED, _PLANNED, _FACTORIZED)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.free()

    def __del__(self):
        free_at_collection(self, "DirectSolver")

    # -- the calls -------------------------------------------------------------------------------

    def plan(self, *, stream: StreamLike = None) -> None:
        """Choose the engine (see :func:`choose_solver_engine`) and allocate the factors' memory."""
        self._check_state(_CONSTRUCTED, _PLANNED, _FACTORIZED)
        options, problem = self._options, self._problem
        engine: Any
        if self._cpu:
            if stream is not None:
                raise OptionsError("stream", "CPU execution takes no stream")
            engine = CpuSolverState(problem, check=options.check, check_finite=options.check_finite)
        else:
            from ._solver_gpu import ENGINE_CLASSES, fused_kernels_cached

            device_id = self._execution.device_id
            name = choose_solver_engine(problem, options.engine, fused=True)
            if name == "fused" and options.engine == "auto" and not (
                    fused_available() and fused_kernels_cached(problem, options.check, device_id)):
                name = choose_solver_engine(problem, options.engine, fused=False)
            engine = ENGINE_CLASSES[name](problem, device_id=device_id, stream=self._streams(stream),
                                          memory_resource=options.memory_resource, check=options.check,
                                          check_finite=options.check_finite)
        self._logger.info("direct solver plan: %s on %s", problem, "scipy" if self._cpu else engine.name)
        if self._engine is not None and not self._cpu:
            self._engine.free()
        self._engine, self._state = engine, _PLANNED

    def factorize(self, *, stream: StreamLike = None) -> None:
        """Factor ``a`` (for triangular and diagonal systems: copy it and check its diagonal).

        Raises
        ------
        SingularMatrixError
            With ``check="raise"``, when a matrix is exactly singular (for ``"positive definite"``:
            not positive definite); it names the first failing matrix and pivot.
        OperandError
            With ``check_finite``, when ``a`` holds NaN or Inf.
        """
        self._check_state(_PLANNED, _FACTORIZED)
        self._state = _PLANNED  # until this factorization succeeds
        if self._cpu:
            if stream is not None:
                raise OptionsError("stream", "CPU execution takes no stream")
            self._engine.factorize(host_array(self._operands["a"]))
        else:
            self._engine.factorize(self._operands["a"], self._streams(stream))
        self._state = _FACTORIZED

    def solve(self, *, stream: StreamLike = None) -> AnyArray:
        """The solution ``x`` of ``op(a) x = b`` (a new array of the operands' library).

        Raises
        ------
        OperandError
            With ``check_finite``, when ``b`` holds NaN or Inf.
        """
        self._check_state(_FACTORIZED)
        if self._cpu:
            if stream is not None:
                raise OptionsError("stream", "CPU execution takes no stream")
            return self._host.adapter.from_host(self._engine.solve(host_array(self._operands["b"])))
        holder = self._streams(stream)
        result = self._engine.solve(self._operands["b"], self._operands["a"], holder)
        if self._staged:
            return copy_to_host(result, self._host, holder)
        if self._options.blocking is True:
            cuda_driver.stream_synchronize(holder.handle)
        return result.obj

    def reset_operands(self, a: ArrayLike | None = None, b: ArrayLike | None = None) -> None:
        """Swap in a new ``a`` and/or ``b`` of the same shape, dtype, library and device (any strides).

        A new ``a`` needs :meth:`factorize` before the next :meth:`solve`; a new ``b`` does not.
        """
        self._check_state(_CONSTRUCTED, _PLANNED, _FACTORIZED)
        new = {}
        for name, value in (("a", a), ("b", b)):
            if value is None:
                continue
            operand = wrap_operand(value, name, array_like=True)
            held = self._operands[name]
            if operand.package != self._host.package or operand.device_id != self._host.device_id:
                raise OperandError(name, f"must be a {self._host.package} array on the same device as before")
            if tuple(operand.shape) != tuple(held.shape) or operand.dtype != held.dtype:
                raise OperandError(name, f"must have the planned shape {tuple(held.shape)} and dtype {held.dtype} "
                                         f"(got {tuple(operand.shape)}, {operand.dtype})")
            new[name] = operand
        self._operands.update(new)
        if not self._cpu and self._staged:
            self._stage_all(list(new))
        if "a" in new and self._state == _FACTORIZED:
            self._state = _PLANNED

    def _detach(self) -> tuple:
        """(the planned GPU engine, the operand library's stream choice), handed to the function
        form's cache, which passes each call's operands itself; this solver is freed without the
        engine."""
        engine, self._engine = self._engine, None
        self.free()
        return engine, CallStreams(self._execution.device_id, self._host.adapter.current_stream)

    def _stage_all(self, names=("a", "b")) -> None:
        """Device copies of host operands (for execution="cuda")."""
        if not self._staged:
            return
        holder = self._streams()
        for name in names:
            self._operands[name] = stage(self._operands[name], self._execution.device_id, holder,
                                         self._options.memory_resource)


def plan_detached(a, b, options, execution, stream) -> tuple:
    """``DirectSolver(a, b, ...).plan()`` with its GPU engine taken out and the solver freed:
    (engine, the operand library's stream choice), for the function form's cache."""
    solver = DirectSolver(a, b, options=options, execution=execution, stream=stream)
    try:
        solver.plan()
        return solver._detach()
    finally:
        solver.free()
