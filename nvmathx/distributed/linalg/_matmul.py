"""The stateful distributed Matmul: agree, plan once, execute many times."""

from __future__ import annotations

from typing import Any

from ..._core.errors import InvalidStateError, OperandError, OptionsError
from ..._core.logs import get_logger
from ..._core.options import check_or_create_options
from ..._core.streams import CallStreams, resolve_stream
from ..._core.tensor import wrap_operand
from ..._matmulcore.epilogs import EpilogLike
from ..._matmulcore.scalars import check_scalars
from ...typing import AnyArray, ArrayLike, OptionsLike, StreamLike
from .._agree import agree, check_same
from .._context import current, warn_leaked
from .._distributions import MatrixDistribution
from ._cpu import GatherRunner
from ._layout import describe_layout
from ._local import LocalRunner
from ._options import MatmulOptions
from ._problem import describe, describe_epilog, resolve, resolve_epilog

__all__ = ["Matmul", "CachedMatmul", "describe_call"]


def describe_call(holder, context, a, b, c, distributions, alpha, beta, options, stream):
    """This rank's checks and description of a call's operands and arguments (run inside the
    agreement, so a rank that fails still takes part); the wrapped operands and options go to
    ``holder``."""
    checked = check_or_create_options(MatmulOptions, options, "options")
    operands = {"a": wrap_operand(a, "a"), "b": wrap_operand(b, "b"), "c": None if c is None else wrap_operand(c, "c")}
    _check_space(operands["a"], context, checked, stream)
    holder["operands"], holder["options"] = operands, checked
    return describe(operands["a"], operands["b"], operands["c"], distributions, alpha, beta, checked)


def _check_space(operand, context, options, stream) -> None:
    """The operands can run where the context can: its GPU, or the CPU through a group that moves
    host data (when the ranks exchange any)."""
    if operand.device_id >= 0:
        device_id = context.require_gpu("a")
        if operand.device_id != device_id:
            raise OperandError("a", f"is on GPU {operand.device_id}, but this rank's distributed context uses GPU "
                                    f"{device_id}")
        return
    if stream is not None:
        raise OptionsError("stream", "CPU execution takes no stream")
    if (context.world_size > 1 or options.force_distributed) and not context.group.exchanges_host_data:
        raise OperandError("a", f"numpy operands are exchanged through the process group, and {context.group.name} "
                                "moves only GPU tensors: use a gloo or MPI group (or 'cpu:gloo,cuda:nccl')")


class Matmul:
    """A distributed matrix product ``alpha * a @ b + beta * c``, then an epilog, over the ranks of the
    distributed context.

    Collective: every rank constructs, plans, executes, resets and frees its Matmul together, with
    its own local pieces. Before anything collective the ranks agree on the arguments (local
    shapes, dtype, distributions, alpha, beta, options; at ``plan()`` the epilog and the bias);
    on any mismatch or failure every rank raises the same typed error.

    Parameters
    ----------
    a, b : array
        This rank's pieces of the global ``(M, K)`` and ``(K, N)`` matrices, 2-D and C-contiguous:
        numpy (CPU execution space, exchanged through the process group) or GPU arrays (torch,
        cupy, any DLPack producer) on the context's device. float16, bfloat16, float32, float64,
        complex64 or complex128, one dtype for all operands.
    c : array, optional
        This rank's piece of the ``(M, N)`` addend, distributed as the result. Read, never written;
        not read when ``beta`` is 0.
    alpha, beta : number
        Scalars, equal on every rank; a nonzero ``beta`` needs ``c``.
    distributions : (da, db, dd)
        How a, b and the result (and c) are split: each ``Slab.X`` (row slabs), ``Slab.Y``
        (column slabs), ``Replicated()`` (every rank holds the whole matrix) or
        ``BlockCyclic(process_grid, block_shape)``. Slabs follow cuBLASMp's block rule: ``n``
        rows (columns) over ``P`` ranks in blocks of ``ceil(n / P)``, so the ranks hold ``nb``,
        ..., ``nb``, the remainder, then none (:func:`local_shape` says how many).
    options : MatmulOptions or dict, optional
    stream : optional
        GPU only: the stream of planning and, unless ``execute(stream=)`` names another, execution
        (default: the operand library's current stream).

    Raises
    ------
    OperandError, UnsupportedOperandError, UnsupportedLayoutError, OptionsError
        On every rank, naming the argument, when any rank's arguments are invalid, the ranks'
        arguments disagree, or cuBLASMp cannot serve the combination of distributions.

    Notes
    -----
    The result is always the whole product ``alpha * A @ B + beta * C`` (a split K is reduced), then
    the epilog, distributed as ``dd``; ``execute()`` returns this rank's piece (a replicated result
    whole, on every rank). At world size 1, and for the combinations whose result pieces need no
    other rank's data (``(Replicated, Replicated, any slab or Replicated)``, ``(Slab.X, Replicated,
    Slab.X)`` data parallel, ``(Replicated, Slab.Y, Slab.Y)`` column parallel), every rank multiplies
    its own pieces with :class:`nvmathx.linalg.Matmul`; otherwise the product runs on cuBLASMp
    (GPU) or gathers the operands to every rank (CPU space), unless ``options.force_distributed``
    asks for that path everywhere. What the plans are made for is read-only: ``options``,
    ``shape``, ``result_shape`` and ``strategy``.

    Examples
    --------
    Under ``torchrun`` or ``mpiexec``, with ``nvmathx.distributed.initialize(device_id=...)`` done,
    a row-parallel linear layer (K split, result reduced onto every rank)::

        with Matmul(x_cols, w_rows, distributions=(Slab.Y, Slab.X, Replicated())) as mm:
            mm.plan(epilog="BIAS", epilog_inputs={"bias": b})
            y = mm.execute()
    """

    def __init__(self, a: ArrayLike, b: ArrayLike, c: ArrayLike | None = None, *, alpha: complex = 1, beta: complex = 0,
                 distributions: tuple[MatrixDistribution, MatrixDistribution, MatrixDistribution] | None = None,
                 options: OptionsLike = None, stream: StreamLike = None) -> None:
        self._freed = True
        context = current("Matmul")
        holder: dict[str, Any] = {}
        descriptions = context.agree(lambda: describe_call(holder, context, a, b, c, distributions, alpha,
                                                                  beta, options, stream))
        self._setup(context, holder, descriptions, alpha, beta, stream)

    @classmethod
    def _from_agreed(cls, context, holder, descriptions, alpha, beta):
        """A Matmul from descriptions the ranks already all-gathered (the function form's cache);
        it follows each call's stream."""
        self = cls.__new__(cls)
        self._freed = True
        self._setup(context, holder, descriptions, alpha, beta, None)
        return self

    def _setup(self, context, holder, descriptions, alpha, beta, stream) -> None:
        self._options = holder["options"]
        self._context = context
        self._problem = resolve(descriptions, context.rank, forced=self.options.force_distributed)
        self._operands = holder["operands"]
        self._alpha, self._beta = alpha, beta
        self._bias = None
        self._runner = None
        operand = self._operands["a"]
        self._cpu = operand.device_id < 0
        if not self._cpu:
            fixed = resolve_stream(stream, operand.device_id) if stream is not None else None
            self._streams = CallStreams(operand.device_id, operand.adapter.current_stream, fixed)
        self._stream_argument = stream
        self._freed = False
        context.track(self)

    # -- what was resolved (read-only) -----------------------------------------------------------------

    @property
    def options(self) -> MatmulOptions:
        """The :class:`MatmulOptions` this Matmul was made with (frozen)."""
        return self._options

    @property
    def shape(self) -> tuple:
        """``(M, K, N)`` of the global product."""
        return self._problem.m, self._problem.k, self._problem.n

    @property
    def result_shape(self) -> tuple:
        """The shape of this rank's piece of the result."""
        return self._problem.result_shape

    @property
    def strategy(self) -> str:
        """How the product runs: "local" (each rank multiplies its own pieces with nvmathx.linalg) or
        "distributed" (cuBLASMp on a GPU, a gather on the CPU space)."""
        return self._problem.strategy

    # -- planning -------------------------------------------------------------------------------------

    def plan(self, *, epilog: EpilogLike = None, epilog_inputs: dict[str, Any] | None = None) -> None:
        """Prepare the product with an epilog (collective; a second call plans again).

        Parameters
        ----------
        epilog : MatmulEpilog, its name, or None
            ``RELU``, ``GELU``, ``BIAS``, ``RELU_BIAS`` or ``GELU_BIAS`` (GELU is the tanh
            approximation, as in :mod:`nvmathx.linalg`).
        epilog_inputs : dict, optional
            ``{"bias": bias}`` for the ``*BIAS`` epilogs: the whole bias, a contiguous 1-D array of
            ``N`` values (one per output column) of the operands' dtype, library and device, equal
            on every rank. Each rank adds the values of its result columns.

        Raises
        ------
        OptionsError, OperandError
            On every rank, for an epilog or bias that is invalid on any rank.
        InvalidStateError
            After ``free()``.
        CublasMpError, CublasLtError, NcclError, MemoryError
            On every rank, when planning fails on any rank.
        """
        holder: dict[str, Any] = {}

        def local():
            self._check_valid()
            description, bias = describe_epilog(epilog, epilog_inputs, self._operands["a"], self._problem.dtype)
            holder["bias"] = bias
            return description

        name = resolve_epilog(self._context.agree(local), self._problem)
        self._plan_agreed(name, holder["bias"])

    def _plan_agreed(self, epilog, bias, stream=None) -> None:
        problem = self._problem
        if epilog is not None and problem.dtype in ("float16", "bfloat16") and problem.strategy == "distributed" \
                and not self._cpu:
            raise OptionsError("epilog", f"{problem.dtype} products on cuBLASMp take no epilog (float32 and float64 "
                                         "do)")
        if self._runner is not None:
            old, self._runner = self._runner, None
            old.free()
        self._bias = bias
        holder: dict[str, Any] = {}
        group = self._context.group
        if problem.strategy == "distributed" and not self._cpu:
            self._context.ensure_blas_comm()  # collective: every rank is here after the same agreement

        def build() -> None:
            holder["runner"] = self._new_runner(epilog, stream)

        try:
            agree(group, build)
            runner = holder["runner"]
            if hasattr(runner, "finish"):  # cuBLASMp: local steps, then the collective ones
                agree(group, runner.prepare)
                agree(group, runner.finish)
        except BaseException:
            if "runner" in holder:
                holder["runner"].free()
            raise
        self._runner = runner
        get_logger(self.options.logger).info("distributed matmul plan: %s, epilog %s", describe_layout(problem.layout),
                                             epilog)

    def _new_runner(self, epilog, stream):
        problem, operands = self._problem, self._operands
        if problem.strategy == "local":
            return LocalRunner(problem, operands, self._bias, epilog, self._alpha, self._beta, self.options,
                               self._stream_argument if stream is None else stream)
        if self._cpu:
            return GatherRunner(problem, self._context.group, operands, self._bias, epilog, self._alpha, self._beta)
        from ._gpu import CublasMpRunner

        return CublasMpRunner(problem, self._context, operands, self._bias, epilog, self._alpha, self._beta,
                              self.options, self._streams(stream))

    # -- execution ------------------------------------------------------------------------------------

    def execute(self, *, stream: StreamLike = None) -> AnyArray:
        """This rank's piece of the result (collective), the operands' kind of array.

        Parameters
        ----------
        stream : optional
            GPU only: default the stream given at construction, else the operand library's current
            stream.

        Raises
        ------
        InvalidStateError
            On every rank, when any rank's Matmul is not planned or freed.
        OptionsError
            On every rank, for a ``stream`` that any rank cannot use.
        CommunicationError
            When a rank dies or a collective does not finish within the context's timeout.
        """
        holder: dict[str, Any] = {}

        def local() -> None:
            holder["stream"] = self._prepare(stream)

        self._context.agree(local)
        return self._run_prepared(holder["stream"])

    def _prepare(self, stream):
        """This rank's checks of a call (nothing collective): the stream :meth:`_run_prepared` takes."""
        self._check_valid()
        if self._runner is None:
            raise InvalidStateError("call plan() before execute()")
        if self._cpu:
            if stream is not None:
                raise OptionsError("stream", "CPU execution takes no stream")
            return None
        return stream if self._problem.strategy == "local" else self._streams(stream)

    def _run_prepared(self, stream):
        """Run a prepared call (collective: every rank prepared its own, and the ranks agreed)."""
        assert self._runner is not None
        return self._runner.execute(stream)

    # -- operands -------------------------------------------------------------------------------------

    def reset_operands(self, a: ArrayLike | None = None, b: ArrayLike | None = None, c: ArrayLike | None = None, *,
                       alpha: complex | None = None, beta: complex | None = None,
                       epilog_inputs: dict[str, Any] | None = None) -> None:
        """Use new pieces of the same local shape, dtype, device and library (and a new bias, alpha or
        beta) from now on (collective).

        Raises
        ------
        OperandError, OptionsError
            On every rank, when any rank's new operand differs from its plan's.
        InvalidStateError
            After ``free()``.
        """
        holder: dict[str, Any] = {}

        def local():
            self._check_valid()
            operands = dict(self._operands)
            for name, value in (("a", a), ("b", b), ("c", c)):
                if value is not None:
                    operands[name] = _same_as(wrap_operand(value, name), self._operands[name], name)
            holder["bias"] = self._new_bias(epilog_inputs)
            new_alpha = self._alpha if alpha is None else alpha
            new_beta = self._beta if beta is None else beta
            check_scalars(new_alpha, new_beta, complex_ok=self._problem.dtype.startswith("complex"),
                          has_c=operands["c"] is not None)
            holder["operands"], holder["scalars"] = operands, (new_alpha, new_beta)
            return complex(new_alpha), complex(new_beta)

        values = self._context.agree(local)
        check_same([value[0] for value in values], "alpha", "value")
        check_same([value[1] for value in values], "beta", "value")
        self._rebind(holder["operands"], holder["bias"], *holder["scalars"])

    def _new_bias(self, epilog_inputs):
        if epilog_inputs is None:
            return self._bias
        if not isinstance(epilog_inputs, dict) or set(epilog_inputs) - {"bias"}:
            raise OptionsError("epilog_inputs", f"expected {{'bias': array}} or None (got {epilog_inputs!r})")
        if "bias" not in epilog_inputs:
            return self._bias
        argument = "epilog_inputs['bias']"
        if self._bias is None:
            raise OperandError(argument, "the planned epilog takes no bias")
        return _same_as(wrap_operand(epilog_inputs["bias"], argument), self._bias, argument)

    def _rebind(self, operands, bias, alpha, beta) -> None:
        """Use new operands the ranks agreed on (or the function form's cache checked by its key)."""
        self._operands, self._bias, self._alpha, self._beta = operands, bias, alpha, beta
        if self._runner is not None:
            self._runner.bind(operands, bias, alpha, beta)

    # -- lifetime -------------------------------------------------------------------------------------

    def _check_valid(self):
        if self._freed:
            raise InvalidStateError("this distributed Matmul has been freed; create a new one")

    def free(self) -> None:
        """Release this plan's descriptors and workspace (every rank its own; the process grids stay
        with the context). Safe to call twice; afterwards every method raises InvalidStateError."""
        if self._freed:
            return
        self._freed = True
        runner, self._runner = self._runner, None
        if runner is not None:
            runner.free()
        self._operands, self._bias = {}, None

    def __enter__(self) -> Matmul:
        self._check_valid()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.free()

    def __del__(self):
        if not getattr(self, "_freed", True) and self._runner is not None:
            warn_leaked(self)

    def __repr__(self) -> str:
        state = "freed" if self._freed else ("planned" if self._runner is not None else "unplanned")
        problem = self._problem
        return (f"Matmul((M, K, N) = {(problem.m, problem.k, problem.n)}, {problem.dtype}, {problem.strategy}, rank "
                f"{problem.rank}/{problem.world_size}, {state})")


class CachedMatmul:
    """A planned Matmul as the function form keeps it in its cache: what it may do with it.

    The function form agrees on every call's arguments itself (descriptions, scalars, epilog), so
    :meth:`run` runs without a second agreement.
    """

    def __init__(self, context, holder, descriptions, alpha, beta, epilog, bias, stream) -> None:
        """Plan a Matmul (collective) from descriptions the ranks already all-gathered; ``holder``
        has the wrapped ``operands`` and checked ``options``."""
        plan = Matmul._from_agreed(context, holder, descriptions, alpha, beta)
        try:
            plan._plan_agreed(epilog, bias, stream)
        except BaseException:
            plan.free()
            raise
        self._plan = plan

    def run(self, operands, bias, alpha, beta, stream):
        """The product of these operands (the plan's local shapes, dtype, device: the function
        form's agreement checked them), bias and scalars (collective)."""
        plan = self._plan
        plan._rebind(operands, bias, alpha, beta)
        return plan._run_prepared(plan._prepare(stream))

    def free(self) -> None:
        self._plan.free()


def _same_as(operand, planned, argument: str):
    """``operand`` when it matches the plan's (local shape, dtype, device, library, C order)."""
    if planned is None:
        raise OperandError(argument, "was not given at construction, so it cannot be reset")
    for what, new, old in (("shape", tuple(operand.shape), tuple(planned.shape)), ("dtype", operand.dtype,
                                                                                   planned.dtype),
                           ("device", operand.device_id, planned.device_id), ("library", operand.package,
                                                                             planned.package)):
        if new != old:
            raise OperandError(argument, f"the new operand's {what} is {new}, the plan's is {old}")
    if not operand.is_c_contiguous():
        raise OperandError(argument, "the new operand must be C-contiguous, as the plan's")
    return operand
