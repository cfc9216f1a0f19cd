"""GPU transforms: an operand layout planned once (layout, cuFFT plans, result allocator) and run
many times. Shared by the stateful :class:`~nvmathx.fft.FFT` and the cached function forms."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import ExitStack
from typing import Any, NoReturn

import numpy as np

from .._codegen.elementwise import INTEGER_C_TYPES, can_copy
from .._core.dtypes import numpy_dtype
from .._core.errors import InvalidStateError, OptionsError, UnsupportedOperandError
from .._core.streams import CallStreams
from .._core.tensor import Operand
from .._fftcore.axis_passes import AxisPlan, axis_passes
from .._fftcore.engine import FusedRows, choose_engine, faster_families, fused_considered, fused_rows
from .._fftcore.layout import C2C, C2R, INPUT, R2C, output_shape, plan_layout, real_input_aligned, result_strides
from .._fftcore.plan import CufftPlan, precision_dtypes
from ._by_axis import AxisPlans
from ._fused import FusedPlan, compute_capability, kernel_state

__all__ = ["GpuTransform", "plan_key", "KEY_FIELDS", "KEY_DEVICE", "result_dtype", "check_dtype", "real_input_aligned"]

_REAL = ("float16", "bfloat16", "float32", "float64")
_COMPLEX = ("complex64", "complex128")


KEY_FIELDS = ("fft type", "shape", "strides", "dtype", "axes", "lengths", "device", "array library", "overwrite_x",
              "operand alignment", "callbacks")
"""What each place of a :func:`plan_key` holds, in order (the last only for a plan with callbacks)."""
KEY_DEVICE = KEY_FIELDS.index("device")
"""The place of the device (-1 for the CPU) in a plan key."""

_DTYPE_NAMES: dict = {}  # numpy's dtype.name is a slow property; names are looked up once per dtype


def plan_key(fft_type: str, shape: Sequence[int], strides: Sequence[int], dtype: Any, axes: Sequence[int],
             lengths: Sequence[int], device_id: int, package: str = "", overwrite: bool = False, aligned: bool = True,
             callbacks: Sequence[tuple] = ()) -> tuple:
    """The plan-cache key of a transform: a pure, hashable function of the problem.

    Unlike CuPy's cache key, it includes the operand's strides: two operands of one shape but
    different layouts need different cuFFT plans.

    Parameters
    ----------
    fft_type : {"C2C", "R2C", "C2R"}
    shape, strides : tuple of int
        The operand's extents and strides in elements.
    dtype : numpy.dtype, str, or an array library's dtype (torch.complex64)
    axes, lengths : tuple of int
        Transformed axes (non-negative) and logical transform lengths.
    device_id : int
    package : str
        The operand's array library (results are allocated by it, which fixes their layout).
    overwrite : bool
        Whether a C2R transform may overwrite its operand.
    aligned : bool
        :func:`real_input_aligned` of the operand (an R2C plan for a misaligned pointer copies first).
    callbacks : tuple
        The attached callbacks, ``(role, callback key, user data pointer)`` each; a plan with
        callbacks is a cache entry of its own (cuFFT links them into the plan).
    """
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = _DTYPE_NAMES[dtype] = numpy_dtype(dtype).name
    key = (fft_type, tuple(shape), tuple(strides), name, tuple(axes), tuple(lengths), device_id, package, overwrite,
           aligned)
    return key + (tuple(callbacks),) if callbacks else key


def check_dtype(fft_type: str, dtype, argument: str = "x") -> None:
    """Raise UnsupportedOperandError when a transform of ``fft_type`` cannot take ``dtype``, on either
    execution space: objects, strings, long double, float8 and the like are refused, and a
    real-to-complex transform refuses complex operands."""
    name = np.dtype(dtype).name
    if name not in _REAL + _COMPLEX and name not in INTEGER_C_TYPES:
        raise UnsupportedOperandError(
            argument, f"dtype {name} is not supported; expected bool, an integer type, float16, "
                      "bfloat16, float32, float64, complex64 or complex128"
        )
    if fft_type == R2C and name in _COMPLEX:
        raise UnsupportedOperandError(argument, f"a real-to-complex transform needs a real operand (got {name})")


def result_dtype(fft_type: str, dtype) -> np.dtype:
    """The result's dtype: complex of the compute precision, real for C2R (float16/bfloat16 compute
    in single precision, integers and bool in double precision, as scipy.fft does)."""
    _, real, complex_ = precision_dtypes(dtype)
    return real if fft_type == C2R else complex_


def _needs_copy(fft_type, dtype) -> bool:
    """Whether the operand must be converted by a first copy (cuFFT reads only its own types)."""
    name = np.dtype(dtype).name
    if fft_type == C2C:
        return name not in _COMPLEX
    if fft_type == R2C:
        return name not in ("float32", "float64")
    return name not in _COMPLEX


def _released(*args: object) -> NoReturn:
    """The result allocator of a transform that allocates none (in place) or was freed."""
    raise InvalidStateError("this transform has been freed")


class GpuTransform:
    """One transform of operands like ``operand`` (same shape, strides, dtype, device, library).

    Parameters
    ----------
    operand : Operand
        A device operand (the prototype; only its layout is kept).
    fft_type : {"C2C", "R2C", "C2R"}
    axes, lengths : tuple of int
    memory_resource : cuda.core MemoryResource or None
        For the work area and scratch buffer.
    inplace : bool
        C2C: the result overwrites the operand.
    overwrite : bool
        C2R: the operand may be overwritten.
    input_aligned : bool
        R2C: the operands' pointers are aligned to the complex element (see :func:`real_input_aligned`);
        otherwise they are copied before cuFFT reads them.
    prolog, epilog : Attachment, optional
        Load and store callbacks linked into the cuFFT plans (kept alive with the transform).
    engine : {"auto", "cufft", "fused"}
        Which engine runs it (:func:`~nvmathx._fftcore.engine.choose_engine`); ``engine`` and
        ``engine_reason`` say what was chosen and why. ``"fused"`` over several axes runs one pass
        per axis (:func:`~nvmathx._fftcore.axis_passes.axis_passes`): the fused kernel along each
        axis it fits, cuFFT along the others.
    scaled, conjugated : bool
        The calls this transform serves multiply the result (a norm other than "backward"), or
        conjugate the operand (``hfft``/``ihfft``): what ``"auto"`` weighs.
    """

    def __init__(self, operand: Operand, fft_type, axes, lengths, *, memory_resource=None, inplace=False,
                 overwrite=False, input_aligned=True, prolog=None, epilog=None, engine="auto", scaled=False,
                 conjugated=False):
        check_dtype(fft_type, operand.dtype)
        self.fft_type = fft_type
        self.device_id = operand.device_id
        self.inplace = inplace
        self.shape = output_shape(fft_type, operand.shape, axes, lengths)
        self.dtype = result_dtype(fft_type, operand.dtype)
        self.empty = any(extent == 0 for extent in self.shape)  # a zero-size operand may still pad to points
        copy_input = _needs_copy(fft_type, operand.dtype)
        if copy_input and not can_copy(operand.dtype, self._copy_target(operand.dtype)):
            raise UnsupportedOperandError("x", f"cannot convert {operand.dtype} for a {fft_type} transform")
        self.streams = CallStreams(self.device_id, operand.adapter.current_stream)  # the library's current stream
        self._allocate: Callable[..., tuple] = _released
        strides = operand.strides
        if not inplace:
            strides = result_strides(self.shape, operand.shape, operand.strides)
            self._allocate = operand.adapter.result_allocator(self.shape, self.dtype, self.device_id, strides=strides,
                                                              like=operand)
            strides = self._probe_strides(operand)
        self.plan: CufftPlan | FusedPlan | AxisPlans | None = None
        self.memory_bytes = 0
        self.step_count = 0
        self.engine, self.engine_reason = "cufft", "an empty transform launches nothing"
        if self.empty:
            return
        precision = "float32" if precision_dtypes(operand.dtype)[0] == "single" else "float64"

        def layout_for(fused: bool):  # the fused kernel reads any real pointer and never writes the operand
            return plan_layout(fft_type, tuple(axes), tuple(lengths), operand.shape, operand.strides, strides,
                               inplace=inplace, overwrite_input=overwrite or fused, copy_input=copy_input,
                               input_aligned=input_aligned or fused)

        self.layout = layout_for(engine != "cufft")
        rows = fused_rows(self.layout, precision)
        if engine == "fused" and isinstance(rows, str) and len(axes) > 1 and not copy_input:
            split = axis_passes(fft_type, tuple(axes), tuple(lengths), operand.shape, operand.strides, strides,
                                precision, inplace=inplace, overwrite=overwrite, input_aligned=input_aligned)
            if isinstance(split, str):
                raise OptionsError("options.engine", f"the fused engine cannot run this transform: {split}")
            self._plan_by_axis(split, operand.dtype, memory_resource, prolog, epilog)
            return
        families = faster_families(rows) if engine == "auto" else frozenset()  # the device asked only if listed
        faster = bool(families) and compute_capability(self.device_id)[0] in families
        hints = {"callbacks": prolog is not None or epilog is not None, "scaled": scaled, "conjugated": conjugated,
                 "faster": faster}
        kernel = "absent"
        if fused_considered(engine, rows, **hints):
            kernel = kernel_state(rows, self.device_id, prolog, epilog)  # type: ignore[arg-type]
        self.engine, self.engine_reason = choose_engine(engine, rows, kernel=kernel, **hints)
        if self.engine == "cufft" and engine == "auto":
            self.layout = layout_for(False)
        if self.engine == "fused":
            self.plan = FusedPlan(rows, self.device_id, self.layout.output_shape,  # type: ignore[arg-type]
                                  self.layout.output_strides, prolog=prolog, epilog=epilog)
        else:
            self.plan = CufftPlan(self.layout, operand.dtype, self.device_id, memory_resource, inplace=inplace,
                                  prolog=prolog, epilog=epilog)
        self.memory_bytes = self.plan.memory_bytes
        self.step_count = len(self.layout.steps)

    def _plan_by_axis(self, split: AxisPlan, input_dtype, memory_resource, prolog, epilog) -> None:
        """One plan per axis of ``split``: the fused kernel's where it fits the axis, cuFFT's where not.

        Raises OptionsError (naming ``options.engine``) when the fused kernel fits no axis."""
        _, _, complex_ = precision_dtypes(input_dtype)
        last = len(split.passes) - 1
        plans: list[tuple[str, FusedPlan | CufftPlan]] = []
        with ExitStack() as undo:  # a failed plan frees the ones made before it
            for index, item in enumerate(split.passes):
                callbacks = {"prolog": prolog if index == 0 else None, "epilog": epilog if index == last else None}
                plan: FusedPlan | CufftPlan | None = None
                if isinstance(item.rows, FusedRows):
                    try:
                        plan = FusedPlan(item.rows, self.device_id, item.layout.output_shape,
                                         item.layout.output_strides, **callbacks)
                        plans.append(("fused", plan))
                    except OptionsError as error:  # cuFFTDx has no block FFT of this axis here: cuFFT runs it
                        if error.argument != "options.engine":
                            raise
                if plan is None:
                    dtype = input_dtype if item.source == INPUT else complex_  # the result's, or the scratch's
                    plan = CufftPlan(item.layout, dtype, self.device_id, memory_resource, inplace=item.in_place,
                                     **callbacks)
                    plans.append(("cufft", plan))
                undo.callback(plan.free)
            if all(engine == "cufft" for engine, _ in plans):
                raise OptionsError("options.engine", "the fused engine cannot run this transform: it fits none of "
                                                     f"its axes {tuple(item.axis for item in split.passes)}")
            undo.pop_all()
        self.plan = AxisPlans(split, plans, self.device_id, complex_, memory_resource)
        fused = tuple(axis for axis, engine in self.plan.engines if engine == "fused")
        cufft_axes = tuple(axis for axis, engine in self.plan.engines if engine == "cufft")
        self.engine = "fused"
        self.engine_reason = (f"options.engine='fused': one pass per axis, fused along axes {fused}"
                              + (f", cuFFT along axes {cufft_axes}" if cufft_axes else ""))
        self.memory_bytes = self.plan.memory_bytes
        self.step_count = len(split.passes)

    def _copy_target(self, dtype):
        _, real, complex_ = precision_dtypes(dtype)
        return real if self.fft_type == R2C else complex_

    def _probe_strides(self, operand):
        """The strides the result allocator really produces (libraries honour layouts differently)."""
        obj, _ = self._allocate(self.streams(), operand.obj)
        return operand.adapter.view(obj, "result").strides

    def execute(self, pointer: int, operand_obj, stream, direction: int, factor: float = 1.0, conj: bool = False,
                fuse: bool = False):
        """Run on the operand at ``pointer`` (``operand_obj`` is returned when in place) on ``stream``
        (a StreamHolder); returns the result array. ``fuse`` asks for ``factor`` to be applied by
        cuFFT's store (see :meth:`CufftPlan.run`)."""
        if self.inplace:
            result, target = operand_obj, pointer
        else:
            result, target = self._allocate(stream, operand_obj)
        if self.plan is not None:
            self.plan.run(pointer, target, direction, stream, factor, conj, fuse)
        return result

    def free(self) -> None:
        if self.plan is not None:
            self.plan.free()
            self.plan = None
        self._allocate = _released

