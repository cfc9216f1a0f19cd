"""The stateful distributed FFT: agree, plan once, execute many times."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Union

from ..._core.errors import InvalidStateError, OperandError, OptionsError
from ..._core.options import check_or_create_options
from ..._core.tensor import host_array, wrap_operand
from ..._fftcore.normalize import normalize_direction, scale_factor
from ...typing import AnyArray, ArrayLike, OptionsLike, StreamLike
from .._agree import check_same
from .._context import current, warn_leaked
from .._distributions import Box, BoxLike, Slab
from ._algorithm import BoxSplit
from ._cpu import CpuPipeline
from ._options import FFTOptions
from ._problem import describe, resolve

if TYPE_CHECKING:
    from ...fft import FFT as SingleFFT
    from ._gpu import GpuPipeline

__all__ = ["FFT", "CachedFFT", "Distribution", "check_space"]

Distribution = Union[Slab, tuple[BoxLike, BoxLike]]
"""A ``distribution=`` argument: a slab, or this rank's (input, output) boxes."""


class FFT:
    """A distributed 2-D or 3-D FFT (or a batch of them) over the ranks of the distributed context.

    Collective: every rank constructs, plans, executes, resets and frees its FFT together, with
    its own local piece. Before anything collective the ranks agree on the arguments (global
    shape, dtype, distribution, axes, options); on any mismatch or failure every rank raises the
    same typed error.

    Parameters
    ----------
    x : array
        This rank's local piece, C order: a numpy array (CPU execution space, exchanged through the
        process group) or any DLPack GPU array on the context's device (exchanged through NCCL).
    distribution : Slab.X, Slab.Y or (Box, Box)
        How the global array is split: slabs of the first (``Slab.X``) or second (``Slab.Y``)
        transformed axis, the first ``n % P`` ranks holding one plane more; or this rank's input
        and output boxes (``Box(lower, upper)`` over every axis, upper exclusive), which must tile
        the global input and result arrays.
    axes : sequence of int, optional
        The last 2 or 3 axes of a batched operand (default: all axes of a 2-D or 3-D operand).
        Batch axes are never split.
    options : FFTOptions or dict, optional
    stream : optional
        GPU only: the stream of the setup copies (``execute(stream=)`` takes the run's).

    Notes
    -----
    The transform is unnormalised both ways, as :class:`nvmathx.fft.FFT`. At world size 1 it runs
    the single-process path (``nvmathx.fft``) unless ``options.force_distributed``. What the plans
    are made for is read-only: ``options``, ``fft_type``, ``global_shape``, ``result_shape``,
    ``result_distribution`` and ``result_box``.

    Examples
    --------
    Under ``torchrun`` or ``mpiexec``, with ``nvmathx.distributed.initialize()`` done::

        shape = nvmathx.distributed.local_shape((64, 64, 64), Slab.X)
        with nvmathx.distributed.fft.FFT(x_local, Slab.X) as f:
            f.plan()
            spectrum_local = f.execute()
    """

    def __init__(self, x: ArrayLike, distribution: Distribution = Slab.X, *, axes: Sequence[int] | None = None,
                 options: OptionsLike = None, stream: StreamLike = None) -> None:
        self._freed = True
        context = current("FFT")
        self._context = context
        holder = {}

        def local():  # every check, so that a rank that fails still takes part in the agreement
            checked = check_or_create_options(FFTOptions, options, "options")
            operand = wrap_operand(x, "x")
            check_space(operand, context, checked, stream)
            holder["operand"], holder["options"] = operand, checked
            return describe(operand, distribution, axes, checked.fft_type, checked)

        descriptions = context.agree(local)
        self._options = holder["options"]
        self._setup(context, holder["operand"], descriptions, self._options, stream)

    @classmethod
    def _from_agreed(cls, context, operand, descriptions, options, stream):
        """An FFT from descriptions the ranks already all-gathered (the function forms' cache)."""
        self = cls.__new__(cls)
        self._freed = True
        self._context = context
        self._options = options
        self._setup(context, operand, descriptions, options, stream)
        return self

    def _setup(self, context, operand, descriptions, options, stream) -> None:
        self._problem = resolve(descriptions, context.rank, last_axis_parity=options.last_axis_parity)
        self._stream_argument = stream
        self._operand = operand
        self._single: SingleFFT | None = None
        self._pipeline: CpuPipeline | GpuPipeline | None = None
        self._sign = normalize_direction(None, self._problem.fft_type)
        self._freed = False
        context.track(self)

    # -- what was resolved (read-only) -----------------------------------------------------------------

    @property
    def options(self) -> FFTOptions:
        """The :class:`FFTOptions` this FFT was made with (frozen)."""
        return self._options

    @property
    def fft_type(self) -> str:
        """"C2C", "R2C" or "C2R"."""
        return self._problem.fft_type

    @property
    def global_shape(self) -> tuple:
        """The global operand's shape."""
        return self._problem.global_shape

    @property
    def result_shape(self) -> tuple:
        """The global result's shape (R2C halves the last transformed axis, C2R restores it)."""
        return self._problem.result_shape

    @property
    def result_distribution(self) -> Slab | Box:
        """``Slab.X``, ``Slab.Y`` or (for box inputs) this rank's output Box."""
        result = self._problem.result
        if isinstance(result, BoxSplit):
            return result.boxes[self._problem.rank]
        return Slab.X if result.axis == self._problem.axes[0] else Slab.Y

    @property
    def result_box(self) -> Box:
        """This rank's piece of the global result."""
        return self._problem.result_box

    @property
    def runs_distributed(self) -> bool:
        """False at world size 1 without ``options.force_distributed`` (the single-process path)."""
        return self._problem.world_size > 1 or self.options.force_distributed

    # -- planning -------------------------------------------------------------------------------------

    def plan(self) -> None:
        """Make the local plans and buffers (collective; a second call does nothing).

        Raises
        ------
        InvalidStateError
            After ``free()``.
        CufftError, NcclError, MemoryError
            On every rank, when planning fails on any rank.
        """
        def local():
            self._check_valid()
            if self._pipeline is None and self._single is None:
                self._make_pipeline()

        self._context.agree(local)

    def _make_pipeline(self) -> None:
        operand, options = self._operand, self.options
        if not self.runs_distributed:
            from ...fft import FFT as SingleFFT

            single = SingleFFT(operand.obj, axes=self._problem.axes, stream=self._stream_argument,
                               options={"fft_type": self.fft_type, "last_axis_parity": options.last_axis_parity,
                                        "memory_resource": options.memory_resource, "blocking": options.blocking,
                                        "logger": options.logger})
            single.plan()
            self._single = single
        elif operand.device_id < 0:
            self._pipeline = CpuPipeline(self._problem, self._context.group, loopback=options.loopback)
        else:
            from ._gpu import GpuPipeline

            self._pipeline = GpuPipeline(self._problem, self._context, operand, options, self._stream_argument)

    # -- execution ------------------------------------------------------------------------------------

    def execute(self, direction: str | int | None = None, stream: StreamLike = None) -> AnyArray:
        """Transform this rank's piece and return this rank's piece of the result (collective).

        The ranks agree before anything collective runs: a rank whose plan is freed or unplanned,
        whose stream is invalid, whose result cannot be allocated, or whose ``direction`` differs,
        makes every rank raise the same error.

        Parameters
        ----------
        direction : {"forward", "inverse", -1, +1}, optional
            Default: forward for C2C and R2C, inverse for C2R. The same on every rank.
        stream : optional
            GPU only: default the operand library's current stream.

        Raises
        ------
        InvalidStateError
            On every rank, when any rank's plan is not planned or freed.
        OptionsError
            On every rank, for a ``direction`` invalid on any rank or differing between ranks.
        CommunicationError
            When a rank dies or the exchange does not finish within the context's timeout.
        """
        holder = {}

        def local():
            self._check_valid()
            sign = self._sign if direction is None else normalize_direction(direction, self.fft_type)
            holder["prepared"] = self._prepare(self._operand, stream)
            return sign

        signs = self._context.agree(local)
        check_same(signs, "direction", "direction", error=OptionsError)
        return self._run_prepared(holder["prepared"], signs[0], 1.0)

    def _prepare(self, operand, stream) -> tuple:
        """This rank's part of a call that can fail locally (nothing collective): what
        :meth:`_run_prepared` takes."""
        pipeline = self._pipeline
        if pipeline is None:
            if self._single is not None:
                return "single", stream
            raise InvalidStateError("call plan() before execute()")
        if isinstance(pipeline, CpuPipeline):  # numpy operands (a reset operand keeps its space)
            if stream is not None:
                raise OptionsError("stream", "CPU execution takes no stream")
            return "cpu", operand
        return "gpu", pipeline.prepare(operand, stream)

    def _run_prepared(self, prepared: tuple, sign: int, factor: float):
        """Run a prepared call (collective: every rank prepared its own, and the ranks agreed)."""
        kind, payload = prepared
        if kind == "single":
            return _single_run(self._single, sign, factor, payload)
        if kind == "cpu":
            assert isinstance(self._pipeline, CpuPipeline)
            return payload.adapter.from_host(self._pipeline.run(host_array(payload), sign, factor))
        return self._pipeline.run(payload, sign, factor)  # type: ignore[union-attr]

    # -- operands -------------------------------------------------------------------------------------

    def reset_operand(self, x: ArrayLike) -> None:
        """Use ``x`` from now on: the same local shape, dtype, device and library (collective).

        Raises
        ------
        OperandError
            On every rank, when any rank's new operand differs from its plan's.
        InvalidStateError
            After ``free()``.
        """
        holder = {}

        def local():
            self._check_valid()
            operand = wrap_operand(x, "x")
            old = self._operand
            for what, new, expected in (("shape", tuple(operand.shape), tuple(old.shape)),
                                        ("dtype", operand.dtype, old.dtype), ("device", operand.device_id,
                                                                              old.device_id),
                                        ("library", operand.package, old.package)):
                if new != expected:
                    raise OperandError("x", f"the new operand's {what} is {new}, the plan's is {expected}")
            if not operand.is_c_contiguous():
                raise OperandError("x", "the new operand must be C-contiguous, as the plan's")
            holder["operand"] = operand

        self._context.agree(local)
        previous, self._operand = self._operand, holder["operand"]
        if self._single is not None:
            self._single.reset_operand(self._operand.obj)
        elif self._pipeline is not None and _alignment(previous) != _alignment(self._operand):
            # cuFFT reads a real operand in place only from a complex-aligned address: plan again
            # (local: this rank's plans only, nothing collective).
            self._pipeline.free()
            self._pipeline = None
            self._make_pipeline()

    # -- lifetime -------------------------------------------------------------------------------------

    def _check_valid(self):
        if self._freed:
            raise InvalidStateError("this distributed FFT has been freed; create a new one")

    def free(self) -> None:
        """Release the local plans and buffers (every rank frees its own). Safe to call twice;
        afterwards every method raises InvalidStateError."""
        if self._freed:
            return
        self._freed = True
        for part in (self._pipeline, self._single):
            if part is not None:
                part.free()
        self._pipeline = self._single = None
        self._operand = None

    def __enter__(self) -> FFT:
        self._check_valid()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.free()

    def __del__(self):
        if not getattr(self, "_freed", True) and (self._pipeline is not None or self._single is not None):
            warn_leaked(self)

    def __repr__(self) -> str:
        state = "freed" if self._freed else ("planned" if self._pipeline or self._single else "unplanned")
        problem = self._problem
        return (f"FFT({problem.fft_type}, global shape {problem.global_shape}, axes {problem.axes}, rank "
                f"{problem.rank}/{problem.world_size}, {state})")


class CachedFFT:
    """A planned FFT as the function forms keep it in their cache: what they may do with it.

    The function forms agree on every call's arguments themselves (operand description, norm), so
    :meth:`run` runs without a second agreement.
    """

    def __init__(self, context, operand, descriptions, options: FFTOptions, stream) -> None:
        """Plan an FFT (collective) from descriptions the ranks already all-gathered."""
        plan = FFT._from_agreed(context, operand, descriptions, options, stream)
        try:
            plan.plan()
        except BaseException:
            plan.free()
            raise
        self._plan = plan

    def run(self, operand, sign: int, norm: str, stream):
        """Transform ``operand`` (the plan's local shape, dtype, device and library: the function
        form's agreement checked it) in direction ``sign``, scaled for ``norm`` (collective)."""
        plan = self._plan
        plan._check_valid()
        plan._operand = operand
        factor = scale_factor(norm, sign, plan._problem.lengths)
        return plan._run_prepared(plan._prepare(operand, stream), sign, factor)

    def free(self) -> None:
        self._plan.free()


def check_space(operand, context, options, stream) -> None:
    """This rank's operand can run where the context can: its GPU, or the CPU through a group that
    moves host data."""
    if operand.device_id >= 0:
        device_id = context.require_gpu("x")
        if operand.device_id != device_id:
            raise OperandError("x", f"is on GPU {operand.device_id}, but this rank's distributed context uses GPU "
                                    f"{device_id}")
        return
    if stream is not None:
        raise OptionsError("stream", "CPU execution takes no stream")
    distributed = context.world_size > 1 or options.force_distributed
    if distributed and not context.group.exchanges_host_data:
        raise OperandError("x", f"numpy operands are exchanged through the process group, and {context.group.name} "
                                "moves only GPU tensors: use a gloo or MPI group (or 'cpu:gloo,cuda:nccl')")


def _alignment(operand) -> int:
    return operand.ptr % (2 * operand.dtype.itemsize)


def _single_run(single, sign, factor, stream):
    result = single.execute("forward" if sign < 0 else "inverse", stream=stream)
    if factor != 1.0:
        result *= factor  # the function forms' norm on the single-process path
    return result
