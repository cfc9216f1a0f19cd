"""The stateful sparse Matmul: construct (check operands), plan (cuSPARSE descriptors, algorithm,
workspace), execute many times, reset operands of the same shapes and sparsity pattern."""

from __future__ import annotations

from typing import Any

from .._bindings import cuda_driver
from .._core.errors import InvalidStateError, OperandError, OptionsError, UnsupportedLayoutError
from .._core.execution import ExecutionCPU, normalize_execution
from .._core.lifetime import free_at_collection
from .._core.options import check_or_create_options
from .._core.streams import CallStreams, order_after, resolve_stream
from .._core.tensor import (
    Operand,
    SparseOperand,
    adapter_named,
    check_dense_companion,
    copy_to_host,
    stage_to_device,
    wrap_operand,
    wrap_sparse_operand,
)
from .._matmulcore.scalars import check_scalars
from ..typing import AnyArray, ArrayLike, ExecutionLike, OptionsLike, SparseArrayLike, StreamLike
from ._cpu import cpu_matmul
from ._cusparse_plan import CusparsePlan, result_strides
from ._options import MatmulOptions
from ._problem import SparseMatmulProblem, check_transpose, dense_layout, describe_problem

__all__ = ["Matmul", "rebind_call", "release_call"]

_CONSTRUCTED, _PLANNED, _FREED = "constructed", "planned", "freed"


def wrap_dense(value, argument: str, a: SparseOperand) -> Operand:
    """A dense operand (arrays, or lists and numbers as numpy does) of ``a``'s dense library and device."""
    operand = wrap_operand(value, argument, array_like=True)
    check_dense_companion(a, operand, argument)
    return operand


class Matmul:
    """Stateful sparse @ dense product ``alpha * op(a) @ b + beta * c`` on cuSPARSE (or scipy on the CPU).

    Parameters
    ----------
    a : sparse matrix
        A CSR matrix of shape ``(M, K)``: ``scipy.sparse.csr_matrix`` / ``csr_array``,
        ``cupyx.scipy.sparse.csr_matrix`` or a torch tensor of layout ``torch.sparse_csr``, with
        int32 or int64 indices and float16, bfloat16 (torch), float32, float64, complex64 or
        complex128 values. CSC and COO matrices of these libraries are converted to CSR (one
        copy); unsorted or duplicate column indices are summed as scipy sums them (one copy).
    b : array
        A vector of length ``K`` (SpMV) or a ``(K, N)`` matrix (SpMM) of ``a``'s dense library
        (numpy for scipy, cupy for cupyx, torch for torch) and dtype, on ``a``'s device. On the
        GPU a matrix must be row- or column-major (one axis contiguous, views with a larger
        leading dimension included) and a vector contiguous, starting at a multiple of 16 bytes.
    c : array, optional
        The addend, of the result's shape and dtype, of ``a``'s dense library. On the GPU it is laid
        out like the result (C order; Fortran order when ``b`` is column-major).
    alpha, beta : number
        Scalars (complex ones for complex operands); ``beta`` needs ``c``. With ``beta == 0``
        ``c`` is not read.
    transpose_a : bool
        Multiply by ``a.T`` (of shape ``(K, M)``) instead of ``a`` (no copy of ``a`` is made).
    options : MatmulOptions, dict or None
        See :class:`MatmulOptions`.
    execution : "cuda", "cpu", ExecutionCUDA, ExecutionCPU or None
        Where to run. None: where ``a`` lives (host matrices run on the CPU with scipy);
        ``"cuda"`` with host operands copies them to the GPU and the result back.
    stream : cuda.core Stream, object with ``__cuda_stream__``, int or None
        The stream for planning and execution (default: the operand library's current stream,
        else the device's default stream); ``execute(stream=...)`` may override it per call.

    Raises
    ------
    OperandError, UnsupportedOperandError, UnsupportedLayoutError, OptionsError
        For bad operands or options; the message names the argument.

    See Also
    --------
    matmul : the function form, backed by a plan cache.

    Notes
    -----
    The result is a new array of ``a``'s dense library: ``(M,)`` for a vector ``b``, ``(M, N)``
    otherwise. float16 and bfloat16 operands are multiplied and summed in float32 (cuSPARSE's mixed
    precision) and the result rounded once, on both execution spaces. With ``transpose_a`` cuSPARSE
    may sum in another order from run to run (the last bits of the result may differ).

    ``plan()`` creates the cuSPARSE descriptors, sizes the workspace once and, for a matrix ``b``,
    runs ``cusparseSpMM_preprocess``; ``execute()`` allocates the result and makes one cuSPARSE call
    (after a copy of ``c`` when ``beta`` is nonzero), with no synchronisation, so it can be captured
    in a CUDA graph: pass the capturing stream (``execute(stream=...)``) and keep the Matmul alive
    while the graph is replayed. ``reset_operands()`` takes new values of the same shapes, dtypes
    and layouts; a new ``a`` must have the planned sparsity pattern (its row offsets and column
    indices are compared, on the GPU with one synchronisation, unless they are the planned arrays
    themselves).

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from nvmathx.sparse import Matmul
    >>> a = sp.csr_array(np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]]))
    >>> with Matmul(a, np.ones(3), alpha=2.0) as mm:
    ...     mm.plan()
    ...     mm.execute()
    array([6., 6.])
    """

    def __init__(self, a: SparseArrayLike, b: ArrayLike, c: ArrayLike | None = None, *, alpha: complex = 1,
                 beta: complex = 0, transpose_a: bool = False, options: OptionsLike = None,
                 execution: ExecutionLike = None, stream: StreamLike = None) -> None:
        self._state = _FREED  # until construction succeeds
        self._ready = False
        self._options = check_or_create_options(MatmulOptions, options, "options")
        transpose = check_transpose(transpose_a)
        a_op = wrap_sparse_operand(a, "a")
        b_op = wrap_dense(b, "b", a_op)
        c_op = None if c is None else wrap_dense(c, "c", a_op)
        self._problem = describe_problem(a_op, b_op, c_op, transpose)
        self._alpha, self._beta = check_scalars(alpha, beta, complex_ok=a_op.dtype.kind == "c", has_c=c is not None)
        self._execution = normalize_execution(execution, a_op.device_id)
        self._cpu = isinstance(self._execution, ExecutionCPU)
        # as given (what reset_operands compares against), and as used (on the execution device)
        self._host: dict[str, Any] = {"a": a_op, "b": b_op, "c": c_op}
        self._operands: dict[str, Any]
        self._plan: CusparsePlan | None = None
        if self._cpu:
            if stream is not None:
                raise OptionsError("stream", "CPU execution takes no stream")
            self._operands = dict(self._host)
        else:
            device_id = self._execution.device_id
            current = a_op.dense_adapter.current_stream if a_op.device_id >= 0 else None
            fixed = resolve_stream(stream, device_id) if stream is not None else None
            self._streams = CallStreams(device_id, current, fixed)
            self._last_stream = self._streams()
            self._staged = a_op.device_id < 0
            self._blocking = self._staged or self._options.blocking is True
            self._operands = {name: self._on_device(name, op) for name, op in self._host.items()}
            self._check_layouts()
        self._state = _CONSTRUCTED

    # -- what was planned ----------------------------------------------------------------------

    @property
    def options(self) -> MatmulOptions:
        """The :class:`MatmulOptions` this Matmul was made with (frozen)."""
        return self._options

    @property
    def result_shape(self) -> tuple:
        """``(M,)`` for a vector ``b``, ``(M, N)`` for a matrix."""
        return self._problem.result_shape

    @property
    def result_dtype(self) -> str:
        """The result's dtype by name (``a``'s)."""
        return self._problem.dtype

    @property
    def problem(self) -> SparseMatmulProblem:
        """The sizes, dtypes and transposition of the product (read-only)."""
        return self._problem

    @property
    def workspace_bytes(self) -> int:
        """Bytes of cuSPARSE workspace held (0 before ``plan()`` and on the CPU)."""
        return getattr(self._plan, "workspace_bytes", 0) if self._plan is not None else 0

    # -- device operands -----------------------------------------------------------------------

    def _on_device(self, name: str, operand):
        """``operand`` on the execution device (a host operand is copied there)."""
        if operand is None or operand.device_id >= 0:
            return operand
        stream, memory_resource = self._last_stream, self._options.memory_resource
        if isinstance(operand, SparseOperand):
            return operand.to_device(self._execution.device_id, stream, memory_resource)
        return stage_to_device(operand, self._execution.device_id, stream, memory_resource)

    def _check_layouts(self) -> None:
        b, c = self._operands["b"], self._operands["c"]
        dense_layout(tuple(b.shape), tuple(b.strides), "b")
        check_alignment(b, "b")
        check_alignment(c, "c")
        if c is not None and not self._problem.is_empty:
            strides = result_strides(self._problem, b)
            # (strides of axes of extent 1 step nowhere: only the others must match)
            if any(extent > 1 and given != wanted for extent, given, wanted in zip(c.shape, c.strides, strides)):
                raise UnsupportedLayoutError("c", f"has strides {tuple(c.strides)} but the result has {strides}",
                                             "pass c laid out like the result (C order; Fortran order when b is "
                                             "column-major)")

    # -- lifecycle -----------------------------------------------------------------------------

    def _check_state(self, *allowed) -> None:
        if self._state not in allowed:
            if self._state == _FREED:
                raise InvalidStateError("this Matmul was freed; create a new one")
            raise InvalidStateError("call plan() before execute()")

    def free(self) -> None:
        """Release the descriptors, workspace and device copies. Safe to call twice; afterwards every
        method raises InvalidStateError."""
        if self._state == _FREED:
            return
        self._state, self._ready = _FREED, False
        plan, self._plan = self._plan, None
        self._operands = self._host = {}
        if plan is not None:
            plan.free()

    def __enter__(self) -> Matmul:
        self._check_state(_CONSTRUCTED, _PLANNED)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.free()

    def __del__(self):
        free_at_collection(self, "sparse Matmul")

    # -- planning and execution ----------------------------------------------------------------

    def plan(self, *, preprocess: bool = True) -> None:
        """Create the cuSPARSE descriptors, choose the algorithm (``options.algorithm``) and size the
        workspace; for a matrix ``b`` (SpMM) also run ``cusparseSpMM_preprocess`` unless
        ``preprocess`` is False. Nothing to do on the CPU. Planning again replaces the plan."""
        self._check_state(_CONSTRUCTED, _PLANNED)
        if not self._cpu:
            stream = self._last_stream = self._streams()
            a, b, c = (self._operands[name] for name in ("a", "b", "c"))
            plan = CusparsePlan(self._problem, a, b, c, self._alpha, self._beta, algorithm=self._options.algorithm,
                                allocate=self._result_allocator(b), stream=stream,
                                memory_resource=self._options.memory_resource, preprocess=preprocess)
            if self._plan is not None:
                self._plan.free()
            self._plan, self._ready = plan, True
        self._state = _PLANNED

    def _result_allocator(self, b: Operand):
        """Results in ``a``'s dense library on the device, or (host operands) nvmathx DeviceArrays
        that execute() copies back."""
        problem, device_id = self._problem, self._execution.device_id
        adapter = adapter_named("nvmathx") if self._staged else self._host["a"].dense_adapter
        strides = result_strides(problem, b)
        return adapter.result_allocator(problem.result_shape, problem.dtype, device_id, strides=strides,
                                        memory_resource=self._options.memory_resource)

    def execute(self, *, stream: StreamLike = None) -> AnyArray:
        """Run the planned product and return the result (a new array of ``a``'s dense library).

        Parameters
        ----------
        stream : stream-like, optional
            Run on this stream (ordered after this plan's previous use of its workspace). Default:
            the stream given at construction; without one, the operand library's current stream at
            the time of this call (torch, cupy; so ``torch.cuda.graph`` captures it), else the
            device's default stream.
        """
        plan = self._plan
        if not self._ready or plan is None:
            return self._execute_unready(stream)
        holder = self._streams(stream)
        if holder is not self._last_stream:
            order_after(holder, self._last_stream)  # the workspace was last used there
            self._last_stream = holder
        result = plan.run(holder)
        if self._staged:
            return copy_to_host(wrap_operand(result, "result"), self._host["b"], holder)
        if self._blocking:
            cuda_driver.stream_synchronize(holder.handle)
        return result

    def _execute_unready(self, stream):
        self._check_state(_PLANNED)
        if stream is not None:
            raise OptionsError("stream", "CPU execution takes no stream")
        operands = self._operands
        return cpu_matmul(self._problem, operands["a"], operands["b"], operands["c"], self._alpha, self._beta)

    # -- new operands --------------------------------------------------------------------------

    def reset_operands(self, a: SparseArrayLike | None = None, b: ArrayLike | None = None,
                       c: ArrayLike | None = None, *, alpha: complex | None = None,
                       beta: complex | None = None) -> None:
        """Swap in new operands of the planned shapes, dtypes, layouts, library and device (and, for
        ``a``, sparsity pattern), and new scalars.

        Raises
        ------
        OperandError
            When a new operand differs from the one it replaces (the message names it and says how);
            a new ``a`` with another sparsity pattern is refused: create a new Matmul for it.
        """
        self._check_state(_CONSTRUCTED, _PLANNED)
        held = self._host["a"]
        new_a = None if a is None else wrap_sparse_operand(a, "a")
        new_b = None if b is None else wrap_dense(b, "b", held)
        new_c = None if c is None else wrap_dense(c, "c", held)
        self._reset_wrapped(new_a, new_b, new_c, alpha, beta)

    def _unbind(self) -> None:
        """Drop the references to the operands (a cached plan must not keep a call's arrays alive);
        the next call resets every operand before it executes."""
        self._host = dict.fromkeys(self._host)
        self._operands = dict.fromkeys(self._operands)

    def _reset_wrapped(self, a: SparseOperand | None, b: Operand | None, c: Operand | None, alpha, beta,
                       checked: bool = False) -> None:
        """reset_operands() of wrapped operands; ``checked``: the caller vouches that they match the
        held ones (the function form's key holds their shapes, dtypes and layouts)."""
        if not checked:
            if a is not None:
                _check_same_matrix(self._host["a"], a)
            for name, operand in (("b", b), ("c", c)):
                if operand is not None:
                    _check_same_dense(self._host[name], operand, name)
        news: dict[str, Any] = {name: operand for name, operand in (("a", a), ("b", b), ("c", c))
                                if operand is not None}
        used = news if self._cpu else {name: self._on_device(name, operand) for name, operand in news.items()}
        if not self._cpu:
            for name in ("b", "c"):
                check_alignment(used.get(name), name)
        alpha = self._alpha if alpha is None else alpha
        beta = self._beta if beta is None else beta
        if not (_same_number(alpha, self._alpha) and _same_number(beta, self._beta)):
            alpha, beta = check_scalars(alpha, beta, complex_ok=self._problem.dtype.startswith("complex"),
                                        has_c=self._problem.has_c)
            self._alpha, self._beta = alpha, beta
            if self._plan is not None:
                self._plan.set_scalars(alpha, beta)
        self._host.update(news)
        self._operands.update(used)
        if self._plan is not None:
            for name, operand in used.items():
                getattr(self._plan, f"set_{name}")(operand)


def _same_number(new, held) -> bool:
    """Whether a scalar is the held one (checked and stored already): the function form passes
    alpha and beta at every call, mostly unchanged."""
    return type(new) is type(held) and bool(new == held)


def check_alignment(operand: Operand | None, name: str) -> None:
    """cuSPARSE's generic API takes dense arrays at addresses that are multiples of 16 bytes."""
    if operand is not None and operand.ptr % 16 and operand.size:
        raise UnsupportedLayoutError(name, f"starts at {operand.ptr:#x}, not at a multiple of 16 bytes as cuSPARSE "
                                           f"requires", "pass a copy")


def _check_same_matrix(held: SparseOperand, new: SparseOperand) -> None:
    if new.key() != held.key():
        expected = f"{held.describe()} of shape {held.shape}, {held.nnz} entries, {held.dtype.name} values and " \
                   f"{held.index_dtype.name} indices"
        raise OperandError("a", f"expected {expected} (got {new.describe()} of shape {new.shape}, {new.nnz} entries, "
                                f"{new.dtype.name} values, {new.index_dtype.name} indices)")
    if not held.same_pattern(new):
        raise OperandError("a", "has another sparsity pattern than the planned matrix (its row offsets or column "
                                "indices differ): create a new Matmul for it")


def _check_same_dense(held: Operand, new: Operand, name: str) -> None:
    if held is None:
        raise OperandError(name, "was not given at construction, so it cannot be reset")
    was = (tuple(held.shape), tuple(held.strides), held.dtype, held.device_id)
    now = (tuple(new.shape), tuple(new.strides), new.dtype, new.device_id)
    if was != now:
        raise OperandError(name, f"expected shape {was[0]}, strides {was[1]}, dtype {was[2]} on device {was[3]} "
                                 f"(got shape {now[0]}, strides {now[1]}, dtype {now[2]} on device {now[3]})")


# The function form's interface to a cached plan (it rebinds each call's operands itself).

def rebind_call(plan: Matmul, a, b, c, alpha, beta) -> None:
    """Give a cached plan one call's operands; the function form's key vouches that they match."""
    plan._reset_wrapped(a, b, c, alpha, beta, checked=True)


def release_call(plan: Matmul) -> None:
    """Drop a call's operands from a cached plan, so that the cache keeps no array alive."""
    plan._unbind()
