"""The stateful FFT: plan once, execute many times, swap operands of the same layout."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Union

import numpy as np

from .._bindings import cuda_driver
from .._core.errors import InvalidStateError, OperandError, OptionsError
from .._core.execution import ExecutionCPU, normalize_execution
from .._core.logs import get_logger
from .._core.options import check_or_create_options
from .._core.streams import CallStreams, resolve_stream
from .._core.tensor import adapter_for, copy_to_host, host_array, in_place_problem, stage_to_device, wrap_operand
from .._fftcore.callbacks import CompiledCallback, attachment, attachments_key
from .._fftcore.layout import C2C, C2R, R2C, plan_layout, real_input_aligned
from .._fftcore.normalize import normalize_direction
from ..typing import AnyArray, ArrayLike, ExecutionLike, OptionsLike, StreamLike
from ._arguments import normalize_axes
from ._cpu import compute_array, cpu_plan_key
from ._gpu import GpuTransform, check_dtype, plan_key
from ._options import FFTOptions

__all__ = ["FFT", "transform_for_key"]

_CPU_FUNCTIONS = {C2C: ("fftn", "ifftn"), R2C: ("rfftn", None), C2R: (None, "irfftn")}


Callback = Union[CompiledCallback, tuple[Any, Any], None]
"""A ``prolog=``/``epilog=`` argument: a compiled callback, or ``(callback, user_data)``."""

class FFT:
    """A stateful N-D FFT over chosen axes of one operand, on cuFFT or on the CPU.

    Parameters
    ----------
    x : array_like
        The operand: cupy, torch, jax or any DLPack / CUDA Array Interface array on a GPU, or a
        host array (numpy, torch CPU; CPU by default, ``execution="cuda"`` copies it to the GPU
        and results back). Lists and tuples are taken as numpy takes them (``numpy.asarray``), as
        the functions take them, and run like a numpy array.
    axes : sequence of int, optional
        The transformed axes (default: all), at least one: unlike ``fftn(x, axes=[])``, which returns
        ``x``, an FFT with nothing to transform has nothing to plan. Any number of axes and any
        strides are accepted; numpy integers count as ints.
    options : FFTOptions or dict, optional
        fft_type, inplace, last_axis_parity, memory_resource, blocking, logger. Frozen: the FFT keeps
        the options it was made with (:attr:`options`).
    execution : "cuda", "cpu", ExecutionCUDA, ExecutionCPU or dict, optional
        Where it runs (default: where the operand lives).
    stream : cuda.core Stream, object with ``__cuda_stream__``, int or None, optional
        The stream for staging copies; ``execute(stream=None)`` uses the operand library's current
        stream. CPU execution takes none.

    Raises
    ------
    OperandError
        For a 0-d operand, or, with ``options.inplace``, an operand whose memory cannot take the
        result as its values: a lazy view (torch's ``x.conj()``, negative views), read-only memory,
        elements that share memory (broadcast or overlapping strides), or a list (converted to a new
        array).
    UnsupportedOperandError
        For an unsupported dtype (objects, strings, long double) on either execution space.
    OptionsError
        For invalid axes (empty, repeated, out of range) or options, or a ``stream`` with CPU
        execution.
    DeviceUnavailableError
        For CUDA execution of a host operand on a machine without a CUDA driver or GPU.

    Notes
    -----
    Transforms are unnormalised in both directions, as in cuFFT: ``execute("inverse")`` after
    ``execute("forward")`` gives ``N`` times the operand. The C2R result's last transformed axis
    has ``2 * (m - 1)`` points (``last_axis_parity="odd"``: ``2 * m - 1``). The operand is never
    written unless ``options.inplace`` asks for it; then ``execute()`` writes the result into the
    operand's own memory and returns the operand, also for a host operand run on CUDA (the result
    is copied back into it). ``options``, ``fft_type``, ``axes``, ``lengths``, ``operand_shape``
    and ``key`` are read-only: the plans are made for them. As in scipy.fft, float16 and bfloat16 operands
    are computed in single precision and bool and integer operands in double precision (a real
    operand defaults to R2C); other dtypes raise UnsupportedOperandError.

    Examples
    --------
    >>> import numpy as np
    >>> import nvmathx.fft
    >>> x = np.random.default_rng(0).standard_normal((4, 16)) + 0j
    >>> with nvmathx.fft.FFT(x, axes=[1]) as f:
    ...     f.plan()
    ...     y = f.execute()
    >>> np.allclose(y, np.fft.fft(x, axis=1))
    True
    """

    def __init__(self, x: ArrayLike, *, axes: Sequence[int] | None = None, options: OptionsLike = None,
                 execution: ExecutionLike = None, stream: StreamLike = None) -> None:
        self._options = options = check_or_create_options(FFTOptions, options, "options")
        operand = wrap_operand(x, "x", array_like=True)
        if operand.ndim == 0:
            raise OperandError("x", "expected an array with at least one dimension (got a 0-d array)")
        self._execution = normalize_execution(execution, operand.device_id)
        self._fft_type = fft_type = _fft_type(options, operand.dtype)
        check_dtype(fft_type, operand.dtype)
        self._axes = normalize_axes(operand.ndim, range(operand.ndim) if axes is None else axes)
        self._lengths = _lengths(fft_type, operand.shape, self._axes, options.last_axis_parity)
        if options.inplace and (fft_type != C2C or operand.dtype.kind != "c"):
            raise OptionsError("options.inplace", "only a C2C transform of a complex operand can run in place")
        _check_in_place(x, operand, options.inplace)
        self._operand_shape = tuple(operand.shape)
        self._user = operand
        self._on_cpu = isinstance(self._execution, ExecutionCPU)
        self._default_direction = normalize_direction(None, fft_type)
        self._transform: _CpuPlan | GpuTransform | None = None
        self._freed = False
        self._logger = get_logger(options.logger)
        if self._on_cpu:
            if stream is not None:
                raise OptionsError("stream", "CPU execution takes no stream")
            if options.engine == "fused":
                raise OptionsError("options.engine", "the CPU execution space runs scipy.fft; the fused engine is "
                                                     "a GPU kernel")
            self._device_id = -1
            self._key = cpu_plan_key(fft_type, operand.shape, operand.dtype, self._axes, self._lengths)
            return
        self._device_id = self._execution.device_id
        self._stream = resolve_stream(stream, self._device_id, operand.adapter.current_stream)
        self._device = operand if operand.device_id >= 0 else stage_to_device(operand, self._device_id, self._stream)
        if options.inplace:
            _check_gpu_in_place(self._device, self._axes, self._lengths)
        self._streams = CallStreams(self._device_id, self._device.adapter.current_stream)
        self._blocking = options.blocking is True  # read once: execute() is the hot path
        self._aligned = real_input_aligned(fft_type, self._device.ptr, self._device.dtype.itemsize)
        self._callbacks: dict = {}  # "prolog"/"epilog" -> Attachment, given to plan()
        self._key = self._plan_key()

    # -- what was planned (read-only: the plan is made for them) ----------------------------------------

    @property
    def options(self) -> FFTOptions:
        """The :class:`FFTOptions` this FFT was made with (frozen)."""
        return self._options

    @property
    def fft_type(self) -> str:
        """"C2C", "R2C" or "C2R"."""
        return self._fft_type

    @property
    def axes(self) -> tuple:
        """The transformed axes, non-negative."""
        return self._axes

    @property
    def lengths(self) -> tuple:
        """The logical transform length along each transformed axis."""
        return self._lengths

    @property
    def operand_shape(self) -> tuple:
        """The operand's shape."""
        return self._operand_shape

    @property
    def engine(self) -> str | None:
        """What runs the planned transform: ``"cufft"``, ``"fused"`` (see ``FFTOptions.engine``) or
        ``"scipy"`` on the CPU; None before ``plan()``."""
        if self._transform is None:
            return None
        return "scipy" if self._on_cpu else self._transform.engine  # type: ignore[union-attr]

    @property
    def key(self) -> tuple:
        """The problem this FFT serves, laid out as :func:`plan_key`'s result (device -1 on the CPU);
        a function given ``plan=self`` checks that its own problem has this key."""
        return self._key

    def _plan_key(self) -> tuple:
        device = self._device
        return plan_key(self._fft_type, device.shape, device.strides, device.dtype, self._axes, self._lengths,
                        self._device_id, device.package, False, self._aligned,
                        attachments_key(self._callbacks.get("prolog"), self._callbacks.get("epilog")))

    # -- planning ---------------------------------------------------------------------------------------

    def plan(self, *, prolog: Callback = None, epilog: Callback = None) -> None:
        """Make the plans (once; a second call does nothing): cuFFT's, or the fused engine's kernels
        (``FFTOptions.engine``; generated the first time, then read from the disk cache).

        Parameters
        ----------
        prolog, epilog : CompiledCallback or (CompiledCallback, array), optional
            A load callback (:func:`compile_prolog`) linked into the pass that reads the operand, and
            a store callback (:func:`compile_epilog`) into the pass that writes the result, each
            alone or with a user-data array on the operand's GPU, whose pointer the callback gets as
            ``user_info``. The array is bound here: change its contents freely between executions.

        Raises
        ------
        InvalidStateError
            After ``free()``.
        OptionsError
            For a callback that does not fit (element type, architecture, a layout cuFFT reads or
            writes through a copy) or callbacks on the CPU; naming ``options.engine`` when the
            fused engine cannot run the transform.
        CallbacksUnavailableError
            When the installed cuFFT or nvJitLink cannot link callbacks.
        CufftError
            When cuFFT rejects the plan (the object stays valid and unplanned).
        """
        self._check_valid()
        if self._transform is not None:
            return
        if self._on_cpu:
            if prolog is not None or epilog is not None:
                raise OptionsError("prolog" if prolog is not None else "epilog", "callbacks run on cuFFT, not the CPU")
            self._transform = _CpuPlan()
            return
        self._callbacks = {"prolog": attachment(prolog, "prolog", self._device_id),
                           "epilog": attachment(epilog, "epilog", self._device_id)}
        self._key = self._plan_key()
        self._make_transform()

    def _make_transform(self) -> None:
        transform = GpuTransform(self._device, self._fft_type, self._axes, self._lengths,
                                 memory_resource=self._options.memory_resource, inplace=self._options.inplace,
                                 input_aligned=self._aligned, engine=self._options.engine, **self._callbacks)
        steps = transform.step_count
        self._logger.info("FFT planned: %s over axes %s, lengths %s, engine %s (%s), %d step(s), %d bytes of work "
                          "area and scratch", self._fft_type, self._axes, self._lengths, transform.engine,
                          transform.engine_reason, steps, transform.memory_bytes)
        self._transform = transform

    # -- execution --------------------------------------------------------------------------------------

    def execute(self, direction: str | int | None = None, stream: StreamLike = None) -> AnyArray:
        """Run the transform and return the result (the operand's kind of array).

        Parameters
        ----------
        direction : {"forward", "inverse", -1, +1}, optional
            Default: forward for C2C and R2C, inverse for C2R.
        stream : optional
            Default: the operand library's current stream (torch, cupy), else the device's default.

        Raises
        ------
        InvalidStateError
            Before ``plan()`` or after ``free()``.
        """
        transform = self._transform
        if transform is None:
            self._check_valid()
            raise InvalidStateError("call plan() before execute()")
        sign = self._default_direction if direction is None else normalize_direction(direction, self._fft_type)
        if self._on_cpu:
            if stream is not None:
                raise OptionsError("stream", "CPU execution takes no stream")
            return self._execute_cpu(sign)
        holder = self._streams(stream)
        device = self._device
        # on this branch the planned transform is a GpuTransform (no isinstance on the per-call path)
        result = transform.execute(device.ptr, device.obj, holder, sign)  # type: ignore[union-attr]
        if device is not self._user:
            return self._copy_back(result, holder)
        if self._blocking:
            cuda_driver.stream_synchronize(holder.handle)
        return result

    def _copy_back(self, result, holder):
        """A host operand's result, copied from the GPU: a new array, or in place the operand itself."""
        host = copy_to_host(_as_operand(result), self._user, holder)
        if not self._options.inplace:
            return host
        # The operand was staged through a copy: its own memory, in any layout, takes the values.
        host_array(self._user, writeable=True)[...] = host_array(_as_operand(host))
        return self._user.obj

    def _execute_cpu(self, sign):
        import scipy.fft

        names = _CPU_FUNCTIONS[self._fft_type]
        function = getattr(scipy.fft, names[0] if sign < 0 else names[1])
        workers = self._execution.num_threads
        x = self._user.obj
        host = compute_array(self._user, writeable=self._options.inplace)  # torch CPU tensors share memory
        with scipy.fft.set_backend("scipy", only=True):
            if self._fft_type == C2R:
                result = function(host, s=self._lengths, axes=self._axes, norm="forward", workers=workers)
            else:
                norm = "backward" if sign < 0 else "forward"  # unnormalised both ways, as cuFFT
                result = function(host, axes=self._axes, norm=norm, workers=workers)
        if self._options.inplace:
            host[...] = result
            return x
        return self._user.adapter.from_host(result)

    # -- operands ---------------------------------------------------------------------------------------

    def reset_operand(self, x: ArrayLike) -> None:
        """Use ``x`` from now on: same shape, strides, dtype, device and library as the original.

        Raises
        ------
        OperandError
            When ``x`` differs in any of those (the message says what was expected), or, with
            ``options.inplace``, when its memory cannot take the result (see :class:`FFT`).
        InvalidStateError
            After ``free()``.
        """
        self._check_valid()
        operand = wrap_operand(x, "x", array_like=True)
        old = self._user
        for what, new, expected in (("shape", tuple(operand.shape), tuple(old.shape)),
                                    ("strides", tuple(operand.strides), tuple(old.strides)),
                                    ("dtype", operand.dtype, old.dtype), ("device", operand.device_id, old.device_id),
                                    ("library", operand.package, old.package)):
            if new != expected:
                raise OperandError("x", f"the new operand's {what} is {new}, the plan's is {expected}")
        _check_in_place(x, operand, self._options.inplace)
        self._user = operand
        if self._on_cpu:
            return
        # A host operand of the same layout stages to the same device layout the plan was made for.
        self._device = operand if operand.device_id >= 0 else stage_to_device(operand, self._device_id, self._stream)
        if self._aligned and not real_input_aligned(self._fft_type, self._device.ptr, self._device.dtype.itemsize):
            # cuFFT cannot read this operand directly: re-plan with a first copy (which reads any operand).
            self._aligned = False
            self._key = self._plan_key()
            if self._transform is not None:
                self._transform.free()
                self._transform = None
                self._make_transform()

    # -- lifetime ---------------------------------------------------------------------------------------

    def _transform_for_key(self, key):
        """This plan's transform (a GPU transform, or a marker on the CPU) when it serves ``key``, else
        None (used by the functions' ``plan=``)."""
        self._check_valid()
        if self._transform is None:
            self.plan()
        return self._transform if key == self._key else None

    def _check_valid(self):
        if self._freed:
            raise InvalidStateError("this FFT has been freed; create a new one")

    def free(self) -> None:
        """Release the cuFFT plans and buffers. Safe to call twice; afterwards every method raises
        InvalidStateError."""
        if self._freed:
            return
        self._freed = True
        if self._transform is not None and not self._on_cpu:
            self._transform.free()
        self._transform = None

    def __enter__(self) -> FFT:
        self._check_valid()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.free()

    def __repr__(self) -> str:
        state = "freed" if self._freed else ("planned" if self._transform is not None else "unplanned")
        where = "cpu" if self._on_cpu else f"cuda:{self._device_id}"
        return f"FFT({self._fft_type}, shape={self._operand_shape}, axes={self._axes}, {where}, {state})"


def transform_for_key(plan: FFT, key: tuple):
    """The transform of ``plan`` (planned now if it was not; a GPU transform, or a marker on the CPU)
    when ``plan`` serves a problem of ``key``, else None: the functions' ``plan=`` argument runs
    through this, and through nothing else of an FFT.

    Raises
    ------
    InvalidStateError
        When ``plan`` has been freed.
    """
    return plan._transform_for_key(key)


class _CpuPlan:
    """The CPU execution space has nothing to plan; this marks the object as planned."""

    def free(self):
        pass


def _check_in_place(x, operand, inplace: bool) -> None:
    """In place, the result goes into the operand's memory: that memory must be ``x``'s values."""
    problem = in_place_problem(x, operand) if inplace else None
    if problem is not None:
        raise OperandError("x", f"{problem}, but options.inplace writes the result into its memory; "
                                "pass a writeable array whose elements do not share memory")


def _check_gpu_in_place(device, axes, lengths) -> None:
    """cuFFT writes in place only into layouts its passes can address (positive strides, nested
    axes): checked here, with the pure layout planner, so that plan() cannot fail on it."""
    try:
        plan_layout(C2C, axes, lengths, device.shape, device.strides, device.strides, inplace=True)
    except ValueError as error:
        raise OperandError("x", f"has strides {tuple(device.strides)}, and on the GPU {error}; pass a view "
                                "with positive strides, or run out of place") from None


def _as_operand(result):
    return adapter_for(result).view(result, "result")


def _fft_type(options: FFTOptions, dtype) -> str:
    kind = np.dtype(dtype).kind
    if options.fft_type is None:
        return C2C if kind == "c" else R2C
    if options.fft_type == R2C and kind == "c":
        raise OptionsError("options.fft_type", f"R2C needs a real operand (got {np.dtype(dtype).name})")
    if options.fft_type == C2R and kind != "c":
        raise OptionsError("options.fft_type", f"C2R needs a complex operand (got {np.dtype(dtype).name})")
    return options.fft_type


def _lengths(fft_type, shape, axes, parity) -> tuple:
    lengths = [shape[axis] for axis in axes]
    if fft_type == C2R:
        m = lengths[-1]
        lengths[-1] = 2 * m - 1 if parity == "odd" else 2 * (m - 1)
    if any(length < 1 for length in lengths):
        raise OperandError("x", f"every transformed axis needs at least one point (lengths {tuple(lengths)})")
    return tuple(lengths)
