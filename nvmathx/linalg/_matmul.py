"""The stateful Matmul: construct (check operands), plan (choose algorithms), execute many times."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, NamedTuple

from .._core.errors import InvalidStateError, OperandError, OptionsError
from .._core.execution import ExecutionCPU, normalize_execution
from .._core.lifetime import free_at_collection
from .._core.logs import get_logger
from .._core.options import check_or_create_options, check_positive_int
from .._core.streams import CallStreams
from .._core.tensor import wrap_operand
from .._matmulcore.epilogs import EpilogLike, EpilogSpec, MatmulEpilog, epilog_spec
from .._matmulcore.scalars import check_scalars
from ..typing import AnyArray, ArrayLike, ExecutionLike, OptionsLike, StreamLike
from ._cpu import CpuMatmulState
from ._cublaslt_plan import MatmulAlgorithm
from ._gpu import GpuMatmulState
from ._operands import array_likes, check_together, info, input_argument, inputs_as_arrays, wrap_all, wrap_factor
from ._options import MatmulOptions, MatmulPlanPreferences, as_int
from ._planning import Runner
from ._problem import OperandInfo, check_quantization_scales, describe_problem
from ._space import DirectRun, MatmulSpace

__all__ = ["Matmul", "DetachedPlan", "plan_detached"]

_CONSTRUCTED, _PLANNED, _FREED = "constructed", "planned", "freed"
_AUTOTUNE_ITERATIONS = 10  # plan(preferences={"autotune": True}) times as autotune() does by default


class Matmul:
    """Stateful matrix multiplication ``alpha * a @ b + beta * c`` followed by an epilog.

    Semantics are ``numpy.matmul``'s: 1-D operands are promoted (and the added axis removed from
    the result), ``(..., M, K) @ (..., K, N)`` stacks are batched, and batch dimensions broadcast
    as numpy broadcasts them (missing or of extent 1), e.g. ``(2, 1, M, K) @ (3, K, N)`` gives
    ``(2, 3, M, N)``. Results are new arrays of the operands' library (numpy operands give numpy
    results); ``c`` is read, never written, and not even read when ``beta`` is 0.

    Parameters
    ----------
    a, b : array or array-like
        ``(..., M, K)`` and ``(..., K, N)`` arrays (or 1-D) of one library on one device: numpy,
        cupy, torch, jax or any DLPack / CUDA Array Interface producer. C-contiguous,
        Fortran-ordered and transposed views are used without copies. As ``numpy.matmul`` does,
        lists, tuples and Python or numpy scalars are taken too: they are converted with
        ``numpy.asarray`` and are then that numpy array in every respect (its dtype, which must
        be a supported one, and host memory, so they run on the CPU unless ``execution="cuda"``).
        Any extent may be 0 (see Notes).
    c : array or array-like, optional
        Addend of the result's shape, or of its matrix shape ``(M, N)`` under batch dimensions
        that broadcast to the result's (``(M, N)``, ``(1, B2, M, N)``, ...). On the GPU it must
        be row-major (last axis contiguous). Array-likes as for ``a``.
    alpha, beta : number
        Scalars: Python or numpy numbers, or numpy 0-d arrays (read when given); ``beta`` needs
        ``c``. With ``beta == 0`` (``0``, ``0.0``, ``0j``) ``c`` is not read, as in BLAS: NaN or
        Inf in it does not reach the result.
    quantization_scales : dict, optional
        float8 only: per-tensor scales ``{"a": sa, "b": sb, "d": sd}``: numbers (a one-element
        host array counts as its value, read when given), or one-element float32 device arrays
        read at execution. The result is ``sd * epilog(alpha * sa * sb * a @ b + beta * c)``;
        ``d`` needs a float8 result.
    options : MatmulOptions, dict or None
        See :class:`MatmulOptions`.
    execution : "cuda", "cpu", ExecutionCUDA, ExecutionCPU or None
        Where to run. None: where the operands live (numpy arrays run on the CPU with numpy);
        ``"cuda"`` with host operands copies them to the GPU and the results back.
    stream : cuda.core Stream, object with ``__cuda_stream__``, int or None
        The stream for planning and execution (default: the operand library's current stream,
        else the device's default stream). ``execute(stream=...)`` may override it per call.

    Raises
    ------
    OperandError, UnsupportedOperandError, UnsupportedLayoutError, OptionsError
        For bad operands or options; the message names the argument.

    See Also
    --------
    matmul : the function form, backed by a plan cache.

    Notes
    -----
    A plan is not thread-safe: use one per thread. ``execute()`` may be captured in a CUDA graph
    (it neither synchronises nor allocates outside the operand library's stream-ordered allocator,
    and the workspace is allocated by ``plan()``): pass the capturing stream, e.g.
    ``execute(stream=torch.cuda.current_stream())`` inside ``torch.cuda.graph`` or
    ``execute(stream=builder.stream)`` for a cuda.core GraphBuilder, and keep the plan alive while
    the graph is replayed. The function form follows the operand library's current stream, so it
    captures as it is once its plan is cached (call it once before capturing).

    Extents of 0 follow ``numpy.matmul``: any of M, N, K and the batch may be 0. With M, N or the
    batch 0 the result is empty (of the result's shape and dtype). With K = 0 the product is exactly
    0 whatever ``alpha`` (as in BLAS), so ``d`` is ``beta * c`` (zeros without ``c``) plus the bias,
    and the epilog applies to ``d`` as ever: ``relu_aux`` is the bitmask of ``d > 0``,
    ``gelu_aux`` is ``d``, DRELU and DGELU scale ``d`` by their input. A bias gradient sums over
    its axis, and a sum of nothing is 0: ``drelu_bgrad`` and ``dgelu_bgrad`` are zeros when M is 0,
    ``bgrada`` and ``bgradb`` zeros when K is 0 (and ``a`` or ``b`` summed over K when only the
    result is empty); ``result_amax`` of an empty result is 0. No cuBLASLt call is made for such a
    problem: on the GPU a small kernel writes the outputs on the stream (no synchronisation, so a
    CUDA graph captures it as it captures a product); ``plan()`` finds no algorithms (``algorithms``
    and ``preferences`` have nothing to choose) and ``autotune()`` returns ``[]``.

    What the plans are made for is exposed read-only: :attr:`options`, :attr:`operand_shapes`,
    :attr:`operand_dtypes`, :attr:`result_shape`, :attr:`result_dtype` and the planned
    :attr:`epilog` (as :class:`nvmathx.fft.FFT` exposes its options, axes and key); the working
    state (operands, handles, workspaces) is not.

    cuBLASLt takes one batch stride per operand. A batch whose operands are partly broadcast
    (or whose batch strides do not chain) runs as several cuBLASLt calls of one plan, or with
    the smaller inputs first copied to the full batch (float32, float64, complex64 and
    complex128 inputs only), whichever moves fewer bytes counting a launch as 32 MiB; the
    ``nvmathx`` logger says which at DEBUG level. Such a plan is not on the single-call fast
    path of ``execute()``.

    Examples
    --------
    >>> import numpy as np
    >>> from nvmathx.linalg import Matmul
    >>> a, b = np.ones((4, 3), np.float32), np.ones((3, 2), np.float32)
    >>> with Matmul(a, b, alpha=2.0) as mm:
    ...     _ = mm.plan()
    ...     mm.execute()
    array([[6., 6.],
           [6., 6.],
           [6., 6.],
           [6., 6.]], dtype=float32)
    """

    _state = _FREED  # until construction succeeds: free() (and __del__) have nothing to release

    def __init__(self, a: ArrayLike, b: ArrayLike, c: ArrayLike | None = None, *, alpha: complex | ArrayLike = 1,
                 beta: complex | ArrayLike = 0, quantization_scales: dict[str, Any] | None = None,
                 options: OptionsLike = None, execution: ExecutionLike = None, stream: StreamLike = None) -> None:
        self._ready: DirectRun | None = None  # planned: what execute() calls when given no arguments
        self._options = check_or_create_options(MatmulOptions, options, "options")
        self._logger = get_logger(self._options.logger)
        a, b, c = array_likes(a, b, c)
        a_op, b_op, c_op, _ = wrap_all(a, b, c, None)
        self._infos = {"a": info(a_op), "b": info(b_op), "c": info(c_op)}
        self._input_infos: dict[str, OperandInfo] = {}  # the planned epilog inputs'
        # the info and operand dicts hold an Optional c; a and b are never None
        self._base = describe_problem(self._infos["a"], self._infos["b"], self._infos["c"], beta=beta, epilog=None,  # type: ignore[arg-type]
                                      epilog_inputs={}, options=self._options)
        self._alpha, self._beta = check_scalars(alpha, beta, complex_ok=self._base.a_dtype.startswith("complex"),
                                                has_c=c is not None)
        self._scales = check_quantization_scales(quantization_scales, self._base)
        self._host = a_op
        self._epilog: EpilogSpec | None = None
        execution_space = normalize_execution(execution, a_op.device_id)
        space = CpuMatmulState if isinstance(execution_space, ExecutionCPU) else GpuMatmulState
        self._space: MatmulSpace = space({"a": a_op, "b": b_op, "c": c_op}, {"a": a, "b": b, "c": c},
                                         execution=execution_space, options=self._options, stream=stream)
        self._state = _CONSTRUCTED

    # -- what was planned (read-only: the plans are made for them) -------------------------------

    @property
    def options(self) -> MatmulOptions:
        """The :class:`MatmulOptions` this Matmul was made with (frozen)."""
        return self._options

    @property
    def operand_shapes(self) -> Mapping[str, tuple | None]:
        """``{"a": shape, "b": shape, "c": shape or None}``, as given (a read-only mapping)."""
        return MappingProxyType({name: None if op is None else op.shape for name, op in self._infos.items()})

    @property
    def operand_dtypes(self) -> Mapping[str, str | None]:
        """``{"a": dtype, "b": dtype, "c": dtype or None}`` by name ("float32", ...; read-only mapping)."""
        return MappingProxyType({name: None if op is None else op.dtype for name, op in self._infos.items()})

    @property
    def result_shape(self) -> tuple:
        """The result's shape (``numpy.matmul``'s)."""
        return self._base.shape.result_shape

    @property
    def result_dtype(self) -> str:
        """The result's dtype by name."""
        return self._base.result_dtype

    @property
    def epilog(self) -> MatmulEpilog | None:
        """The planned epilog (None before :meth:`plan`, or when planned without one)."""
        return None if self._epilog is None else self._epilog.epilog

    # -- lifecycle -----------------------------------------------------------------------------

    def _check_state(self, *allowed):
        if self._state not in allowed:
            if self._state == _FREED:
                raise InvalidStateError("this Matmul was freed; create a new one")
            raise InvalidStateError("call plan() before execute() or autotune()")

    def free(self) -> None:
        """Release the plan, workspace and device copies. Safe to call twice; afterwards every
        method raises InvalidStateError."""
        if self._state == _FREED:
            return
        self._state, self._ready = _FREED, None
        self._space.free()

    def __enter__(self) -> Matmul:
        self._check_state(_CONSTRUCTED, _PLANNED)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.free()

    def __del__(self):
        free_at_collection(self, "Matmul")

    @property
    def _runner(self) -> Runner | None:
        """The GPU space's planned runner (None on the CPU and before plan()), which tests and
        ``scripts/matmul-survey`` inspect."""
        space = self.__dict__.get("_space")
        return space.runner if isinstance(space, GpuMatmulState) else None

    # -- planning ------------------------------------------------------------------------------

    def plan(self, *, epilog: EpilogLike = None, epilog_inputs: dict[str, Any] | None = None,
             preferences: OptionsLike = None,
             algorithms: Sequence[MatmulAlgorithm] | None = None) -> list[MatmulAlgorithm]:
        """Choose how to run: check the epilog and its inputs, and find candidate algorithms.

        Parameters
        ----------
        epilog : MatmulEpilog, str, int or None
            The operation fused after the product (see :class:`MatmulEpilog`): a member, its name in
            any case, or its cuBLASLt code as a plain integer. Members of other enums are refused,
            whatever their values.
        epilog_inputs : dict, optional
            ``{"bias": ...}``, ``{"relu_aux": ...}`` or ``{"gelu_aux": ...}`` as the epilog needs.
            A bias has shape ``(N,)``, ``(..., 1, N)`` or (added through C, without ``c``)
            ``(..., M, N)``; the batch dimensions of every input broadcast to the result's.
            Array-likes are converted as ``a`` is.
        preferences : MatmulPlanPreferences, dict or None
            What the heuristic may return, and whether to autotune its candidates now.
        algorithms : list of MatmulAlgorithm, optional
            Algorithms from an earlier ``plan()`` of the same problem (e.g. unpickled); the
            heuristic is skipped. GPU execution only: the CPU space refuses them (OptionsError).

        Returns
        -------
        list of MatmulAlgorithm
            The candidates, best first (empty for CPU execution, and for an extent of 0, which
            have none to choose); with ``preferences.autotune``, fastest first as
            :meth:`autotune` timed them.
        """
        return self._plan(epilog, epilog_inputs, preferences, algorithms)

    def _plan(self, epilog, epilog_inputs, preferences, algorithms, keep=None) -> list:
        """plan(); ``keep`` limits the candidates (and so the workspace) to the best ``keep``."""
        self._check_state(_CONSTRUCTED, _PLANNED)
        preferences = check_or_create_options(MatmulPlanPreferences, preferences, "preferences")
        spec = epilog_spec(epilog)
        given = _input_dict(inputs_as_arrays(epilog_inputs))
        inputs = {name: wrap_operand(value, input_argument(name)) for name, value in given.items()}
        check_together(self._host, [(input_argument(name), op) for name, op in inputs.items()])
        input_infos = {name: info(op) for name, op in inputs.items()}
        # the info and operand dicts hold an Optional c; a and b are never None
        problem = describe_problem(self._infos["a"], self._infos["b"], self._infos["c"], beta=self._beta, epilog=spec,  # type: ignore[arg-type]
                                   epilog_inputs=input_infos, options=self._options)
        self._logger.info("matmul plan: %s", problem)
        found = self._space.plan(problem, inputs, given, preferences=preferences, algorithms=algorithms,
                                 alpha=self._alpha, beta=self._beta, scales=self._scales,
                                 keep=None if preferences.autotune else keep)
        self._state, self._epilog, self._input_infos = _PLANNED, spec, input_infos
        self._ready = self._space.direct()
        if not preferences.autotune:
            return found
        self._space.autotune(_AUTOTUNE_ITERATIONS, keep=keep)
        return self._space.algorithms

    @property
    def algorithms(self) -> list:
        """The planned candidate algorithms, in the order ``execute()`` prefers them."""
        self._check_state(_PLANNED)
        return self._space.algorithms

    def autotune(self, iterations: int = 10) -> list:
        """Time every candidate on the actual operands and reorder them, fastest first.

        After 0.3 s of sustained work (so that no timing sees the clocks ramping up), every
        candidate is timed in five samples that flush L2 and then run it back to back for about
        20 ms (at least ``iterations`` runs; sustained clocks, as in a workload), the candidates
        interleaved in a rotating order; its time is the median sample. The product is written to
        scratch buffers: ``c`` and earlier results are never touched.

        Returns ``[(milliseconds per run, algorithm), ...]`` sorted by time, the order that
        :attr:`algorithms` and ``execute()`` use from now on; a candidate that fails to run is
        reported with ``inf``, last. Empty for CPU execution and for a problem with an extent of 0
        (nothing is timed). ``iterations`` is a Python or numpy integer >= 1.
        """
        self._check_state(_PLANNED)
        iterations = check_positive_int(as_int(iterations), "iterations")
        return self._space.autotune(iterations)

    # -- execution -----------------------------------------------------------------------------

    def execute(self, *, algorithm: MatmulAlgorithm | None = None, stream: StreamLike = None,
                release_workspace: bool = False) -> AnyArray:
        """Run the planned product.

        Parameters
        ----------
        algorithm : MatmulAlgorithm, optional
            One of the planned algorithms (default: the first, i.e. the best after ``autotune()``).
        stream : stream-like, optional
            Run on this stream (ordered after this plan's previous use of its workspace). Default:
            the stream given at construction; without one, the operand library's current stream
            at the time of this call (torch, cupy; so ``torch.cuda.graph`` captures it), else the
            device's default stream.
        release_workspace : bool
            Give the workspace back to its memory resource after this call.

        Returns
        -------
        array or (array, dict)
            The result, plus a dict of auxiliary outputs when the epilog (or ``result_amax``)
            produces some.
        """
        ready = self._ready
        if ready is not None and algorithm is None and release_workspace is False:
            run, streams = ready
            return run(streams(stream))
        self._check_state(_PLANNED)
        if not isinstance(release_workspace, bool):
            raise OptionsError("release_workspace", f"expected True or False (got {release_workspace!r})")
        return self._space.execute(algorithm, stream, release_workspace)

    # -- new operands --------------------------------------------------------------------------

    def reset_operands(self, a: ArrayLike | None = None, b: ArrayLike | None = None, c: ArrayLike | None = None, *,
                       alpha: complex | ArrayLike | None = None, beta: complex | ArrayLike | None = None,
                       epilog_inputs: dict[str, Any] | None = None,
                       quantization_scales: dict[str, Any] | None = None) -> None:
        """Swap in new operands of the same shape, strides, dtype, library and device (and at
        least the planned pointer alignment); alpha, beta, epilog inputs and scales likewise.

        Raises
        ------
        OperandError
            When a new operand differs from the one it replaces (the message names it and says how),
            or, naming ``a``, when nothing at all is given (every argument None).
        """
        if alpha is None and beta is None and quantization_scales is None:
            if a is None and b is None and c is None and epilog_inputs is None:
                self._check_state(_CONSTRUCTED, _PLANNED)
                raise OperandError("a", "reset_operands() was given nothing to swap in: pass the new arrays or "
                                        "scalars (None keeps the current one)")
            if self._state != _FREED and self._space.reset_held(a, b, c, epilog_inputs):
                return
        self._check_state(_CONSTRUCTED, _PLANNED)
        a, b, c = array_likes(a, b, c)
        epilog_inputs = inputs_as_arrays(epilog_inputs)
        operands = {}  # by name: (the operand viewed, the array given)
        for name, value in (("a", a), ("b", b), ("c", c)):
            if value is None:
                continue
            expected = self._infos[name]
            if expected is None:
                raise OperandError(name, "was not given at construction, so it cannot be reset")
            operand = wrap_factor(value, name) if name != "c" else wrap_operand(value, name)
            operands[name] = (self._checked(operand, name, expected), value)
        inputs = {}
        for name, value in _input_dict(epilog_inputs).items():
            if name not in self._input_infos:
                raise OperandError("epilog_inputs", f"{name!r} is not an input of the planned epilog")
            argument = input_argument(name)
            inputs[name] = (self._checked(wrap_operand(value, argument), argument, self._input_infos[name]), value)
        if alpha is None and beta is None:  # the values held were checked when they were given
            alpha, beta = self._alpha, self._beta
        else:
            alpha, beta = check_scalars(self._alpha if alpha is None else alpha, self._beta if beta is None else beta,
                                        complex_ok=self._base.a_dtype.startswith("complex"),
                                        has_c=self._infos["c"] is not None)
        scales = check_quantization_scales(quantization_scales, self._base) if quantization_scales is not None else {}
        scalars = (alpha, beta) if alpha is not self._alpha or beta is not self._beta else None
        self._alpha, self._beta = alpha, beta
        self._scales.update(scales)
        self._space.reset(operands, inputs, scalars=scalars, scales=scales)

    def _checked(self, operand, name, expected: OperandInfo):
        """``operand``, once it is known to take the place of the operand ``name`` was planned with:
        the same library, device and layout (:func:`info`'s fields, compared one by one), and what
        the execution space holds it to (on the GPU, the planned pointer alignment)."""
        if operand.package != self._host.package or operand.device_id != self._host.device_id:
            raise OperandError(name, f"must be a {self._host.package} array on the same device as before")
        if (tuple(operand.shape) != expected.shape or tuple(operand.strides) != expected.strides
                or operand.dtype.name != expected.dtype or operand.conj != expected.conj):
            raise OperandError(name, f"must match the planned operand: {_layout(expected)} (got {_layout(operand)})")
        self._space.check_alignment(operand, name)
        return operand

    def _gpu_space(self) -> GpuMatmulState:
        """The GPU space, for :func:`plan_detached` (the function form caches GPU plans only)."""
        space = self._space
        if not isinstance(space, GpuMatmulState):
            raise InvalidStateError("only a GPU plan can be detached")
        return space


def _layout(operand) -> str:
    """An Operand's or OperandInfo's layout, for messages."""
    lazy = ", a conjugate view" if operand.conj else ""
    return f"shape {operand.shape}, strides {operand.strides}, dtype {operand.dtype}{lazy}"


def _input_dict(epilog_inputs) -> dict:
    if epilog_inputs is None:
        return {}
    if not isinstance(epilog_inputs, dict):
        raise OptionsError("epilog_inputs", f"expected a dict of arrays or None (got {type(epilog_inputs).__name__})")
    return epilog_inputs


class DetachedPlan(NamedTuple):
    """A GPU plan taken out of a :class:`Matmul` for the function form's cache (:func:`plan_detached`)."""

    runner: Runner  # planned, bound to no operand
    streams: CallStreams  # the operand library's stream choice
    alpha: Any  # the checked scalars (a 0-d array is its value)
    beta: Any
    views_copied: bool  # a, b or c was a copy of a lazy view (torch's conjugate or negative bit)
    inputs_copied: bool  # an epilog input was


def plan_detached(a, b, c, *, alpha, beta, epilog, epilog_inputs, scales, options, preferences, execution, stream,
                  keep: int | None = None) -> DetachedPlan:
    """``Matmul(a, b, c, ...).plan(epilog=, epilog_inputs=, preferences=)`` on the GPU, keeping the
    best ``keep`` candidates, with its runner taken out and the Matmul freed: the function form's
    cache binds each call's operands to the runner itself. Raises as the constructor and ``plan()`` do."""
    mm = Matmul(a, b, c, alpha=alpha, beta=beta, quantization_scales=scales, options=options, execution=execution,
                stream=stream)
    try:
        mm._plan(epilog, epilog_inputs, preferences, None, keep=keep)
        space = mm._gpu_space()
        inputs_copied = space.inputs_copied(epilog_inputs if isinstance(epilog_inputs, dict) else {})
        runner = space.detach()
        return DetachedPlan(runner, space.library_streams, mm._alpha, mm._beta, space.views_copied, inputs_copied)
    finally:
        mm.free()
