"""cuFFT plans for one :class:`LayoutPlan`, and the code that runs them on raw device pointers.

:class:`CufftPlan` makes one cuFFT plan per pass (work area supplied by us, from a
:class:`~nvmathx._core.memory.Workspace`), keeps a scratch buffer when the layout needs one, and
runs the steps on a stream. The common case, one pass with no copies, loops or scale, is a single
ctypes call with arguments prepared at plan time.

Callbacks: a user's load callback is attached to the pass that reads the operand and a store
callback to the pass that writes the result (see :func:`~nvmathx._fftcore.layout.callback_passes`).
A ``norm`` scale asked to be fused runs, where the layout makes no copy to fold it into, a second
cuFFT plan of the result's pass that carries the built-in scale store callback (made on first use,
one per factor); when cuFFT cannot link it, the scale falls back to an elementwise pass.
"""

from __future__ import annotations

import ctypes
from contextlib import ExitStack

import numpy as np

from .._bindings import cuda_driver, cufft
from .._codegen import elementwise
from .._core import device
from .._core.errors import InvalidStateError, OptionsError
from .._core.logs import get_logger
from .._core.memory import Workspace, allocate
from . import callbacks
from .layout import INPUT, OUTPUT, SCRATCH, SCRATCH_REAL, CopyStep, FFTPass, LayoutPlan, callback_passes
from .scale_callback import factor_dtype, scale_callback

__all__ = ["CufftPlan", "precision_dtypes"]

_CUFFT_TYPES = {
    ("C2C", "single"): cufft.Type.C2C, ("C2C", "double"): cufft.Type.Z2Z,
    ("R2C", "single"): cufft.Type.R2C, ("R2C", "double"): cufft.Type.D2Z,
    ("C2R", "single"): cufft.Type.C2R, ("C2R", "double"): cufft.Type.Z2D,
}


_void_p = ctypes.c_void_p
_DIRECTIONS = {cufft.FORWARD: ctypes.c_int(cufft.FORWARD), cufft.INVERSE: ctypes.c_int(cufft.INVERSE)}


def precision_dtypes(dtype) -> tuple:
    """("single" | "double", real dtype, complex dtype) that cuFFT computes an operand of ``dtype`` in.

    float16 and bfloat16 are computed in single precision, integers and bool in double precision, as
    scipy.fft does on the CPU.
    """
    dtype = np.dtype(dtype)
    if dtype.name in ("float64", "complex128") or dtype.kind in "biu":
        return "double", np.dtype(np.float64), np.dtype(np.complex128)
    return "single", np.dtype(np.float32), np.dtype(np.complex64)


def _span_elements(shape, strides) -> int:
    if any(extent == 0 for extent in shape):
        return 0
    return sum((extent - 1) * abs(stride) for extent, stride in zip(shape, strides)) + 1


def _memset_async(pointer: int, nbytes: int, stream_handle: int) -> None:
    """Zero ``nbytes`` at ``pointer`` on a stream."""
    cuda_driver.memset_async(pointer, 0, nbytes, stream_handle)


class _Pass:
    """One cuFFT handle and how to call it; ``attachments`` are the callbacks linked into it."""

    __slots__ = ("attachments", "fast", "function", "handle", "keep", "name", "offsets", "owned", "step",
                 "takes_direction", "work_bytes")

    def __init__(self, step: FFTPass, precision: str, attachments=()):
        self.step = step
        fft_type = _CUFFT_TYPES[step.fft_type, precision]
        self.function, self.takes_direction, self.name = cufft.exec_function(fft_type)
        self.attachments = tuple(attachments)
        self.keep: list = []  # what cuFFT reads at plan time and the callbacks at run time
        self.owned: list = []  # device buffers of this pass (the scale factor), released with it
        self.fast = None
        self.handle = cufft.create()
        try:
            cufft.set_auto_allocation(self.handle, False)
            for item in self.attachments:
                self.keep.append(cufft.xt_set_jit_callback(
                    self.handle, item.callback.ltoir, item.callback.callback_type, [item.pointer]))
                self.keep.append(item.data)
            self.work_bytes = cufft.make_plan_many64(
                self.handle, step.n, step.inembed, step.istride, step.idist, step.onembed, step.ostride, step.odist,
                fft_type, step.batch,
            )
        except cufft.CufftError as error:
            cufft.destroy(self.handle)
            if not self.attachments:
                raise
            raised = callbacks.link_error(error, self.attachments)
            if raised is error:
                raise
            raise raised from error
        except BaseException:
            cufft.destroy(self.handle)
            raise
        self.offsets = step.loop_offsets()

    def prepare_fast_call(self, precision):
        """The single-execution call with ctypes objects made once (see :meth:`CufftPlan.run`)."""
        function, takes_direction, name = cufft.raw_exec_function(_CUFFT_TYPES[self.step.fft_type, precision])
        self.fast = (function, ctypes.c_int(self.handle), takes_direction, name)
        return self.fast

    def destroy(self):
        if self.handle is not None:
            cufft.destroy(self.handle)
            self.handle = None
        for buffer in self.owned:
            buffer.close()
        self.owned = []
        self.keep = []


_NOT_TRIED = object()


class CufftPlan:
    """Everything needed to run one transform layout on one device.

    Parameters
    ----------
    layout : LayoutPlan
    input_dtype : numpy.dtype
        The operand's dtype (float16/bfloat16/real inputs of C2C are converted by a first copy).
    device_id : int
    memory_resource : cuda.core MemoryResource or None
        Where the work area and scratch buffer come from.
    inplace : bool
        The layout was planned in place (the result is the operand).
    prolog, epilog : Attachment, optional
        Callbacks to link into the pass that reads the operand / writes the result.

    Raises
    ------
    OptionsError
        When the layout has no pass a callback can be attached to, or a callback's element type or
        architecture does not fit the transform.
    CallbacksUnavailableError
        When cuFFT or nvJitLink cannot link callbacks.
    """

    def __init__(self, layout: LayoutPlan, input_dtype, device_id: int, memory_resource=None, inplace=False,
                 prolog=None, epilog=None):
        device.ensure_device(device_id)  # cuFFT plans for the current device
        self.layout = layout
        self.device_id = device_id
        self.precision, real, complex_ = precision_dtypes(input_dtype)
        self.input_dtype = np.dtype(input_dtype)
        self.output_dtype = real if layout.fft_type == "C2R" else complex_
        self.scratch_dtype = complex_ if layout.scratch_is_complex else real
        self._dtypes = {INPUT: self.input_dtype, OUTPUT: self.output_dtype, SCRATCH: self.scratch_dtype,
                        SCRATCH_REAL: real}
        self._load_index, self._store_index = callback_passes(layout, inplace)
        attached = self._check_callbacks(prolog, epilog, device_id)
        self._passes = []
        with ExitStack() as undo:  # a failed plan destroys the handles it made
            for index, step in enumerate(layout.steps):
                if isinstance(step, FFTPass):
                    item = _Pass(step, self.precision, attached.get(index, ()))
                    undo.callback(item.destroy)
                    self._passes.append(item)
            undo.pop_all()
        self._epilog = epilog is not None
        self._scaled: dict = {}  # factor -> _Pass with the scale store callback, or None where cuFFT refused it
        self._memory_resource = memory_resource
        self.workspace_bytes = max((p.work_bytes for p in self._passes), default=0)
        scratch_elements = (
            _span_elements(layout.scratch_shape, layout.scratch_strides) if layout.scratch_shape is not None else 0
        )
        self.scratch_bytes = scratch_elements * self.scratch_dtype.itemsize
        self.memory_bytes = self.workspace_bytes + self.scratch_bytes
        self._output_elements = _span_elements(layout.output_shape, layout.output_strides)
        self._workspace = Workspace(device_id, memory_resource)
        self._scratch = Workspace(device_id, memory_resource)
        self._scratch_ptr = 0
        self._stream_handle = None
        self._stream = None
        self._inplace = inplace
        self.simple = layout.simple
        if self.simple:
            self._fast = self._passes[0].prepare_fast_call(self.precision)
        self.valid = True

    def _check_callbacks(self, prolog, epilog, device_id) -> dict:
        """{step index: attachments} after checking that each callback fits this transform."""
        attached: dict = {}
        if prolog is None and epilog is None:
            return attached
        steps = self.layout.steps
        for role, item, index in (("prolog", prolog, self._load_index), ("epilog", epilog, self._store_index)):
            if item is None:
                continue
            if index is None:
                what = "reads the operand" if role == "prolog" else "writes the result"
                raise OptionsError(role, f"this {self.layout.fft_type} layout {what} through a copy or in several "
                                         "cuFFT executions (padding, a dtype cuFFT does not read, a misaligned or "
                                         "unusual layout), so no cuFFT pass sees those elements")
            expected = self._element_dtype(steps[index], role == "epilog").name
            callbacks.check_fits(role, item, expected, _device_capability(device_id), f"GPU {device_id}")
            attached.setdefault(index, []).append(item)
        callbacks.require_lto("prolog" if prolog is not None else "epilog")
        return attached

    def _element_dtype(self, step: FFTPass, store: bool) -> np.dtype:
        """What cuFFT loads (``store=False``) or stores in ``step``."""
        _, real, complex_ = precision_dtypes(self.input_dtype)
        real_side = step.fft_type == ("C2R" if store else "R2C")
        return real if real_side else complex_

    # -- streams ------------------------------------------------------------------------------------

    def bind_stream(self, stream) -> None:
        """Use ``stream`` (a StreamHolder) from now on: set it on every handle, order the work area
        and scratch buffer on it."""
        if not self.valid:
            raise InvalidStateError("the cuFFT plan has been freed")
        work = self._workspace.ensure(self.workspace_bytes, stream)
        self._scratch_ptr = self._scratch.ensure(self.scratch_bytes, stream)
        for item in self._handles():
            cufft.set_stream(item.handle, stream.handle)
            if work:
                cufft.set_work_area(item.handle, work)
        self._stream_handle = stream.handle
        self._stream = stream

    def _handles(self):
        return self._passes + [item for item in self._scaled.values() if item is not None]

    # -- execution ----------------------------------------------------------------------------------

    def run(self, source: int, target: int, direction: int, stream, factor: float = 1.0, conj: bool = False,
            fuse: bool = False) -> None:
        """Transform the operand at ``source`` into the result at ``target`` on ``stream``.

        ``direction`` is -1 or +1 (ignored by R2C/C2R); the result is multiplied by ``factor``,
        folded into the first copy where the layout has one, else (with ``fuse``) into the result's
        cuFFT pass through the scale store callback where cuFFT links it, else applied by an
        elementwise pass. ``conj`` conjugates the complex side: the input of C2R (always copied
        then), the result of R2C.
        """
        if stream.handle != self._stream_handle:
            self.bind_stream(stream)
        if self.simple and not conj:
            fast = self._fast
            if factor != 1.0:
                scaled = self._scaled.get(factor, _NOT_TRIED) if fuse else None
                if scaled is _NOT_TRIED:
                    scaled = self._make_scaled(factor, stream)
                fast = scaled.fast if scaled is not None else None
            if fast is not None:
                # Prepared ctypes objects and a function without argtypes: no per-call conversion.
                function, handle, takes_direction, name = fast
                if takes_direction:
                    status = function(handle, _void_p(source), _void_p(target), _DIRECTIONS[direction])
                else:
                    status = function(handle, _void_p(source), _void_p(target))
                if status:
                    cufft.check(status, name)
                return
        self._run_steps(source, target, direction, factor, conj, fuse)

    def _make_scaled(self, factor: float, stream):
        """The result's pass with the scale store callback for ``factor``; None (remembered) where the
        layout copies anyway, a user epilog takes the store, or cuFFT cannot link the callback."""
        index = self._store_index
        if index is None or self._epilog or any(isinstance(step, CopyStep) for step in self.layout.steps):
            self._scaled[factor] = None
            return None
        try:
            item = self._scaled_pass(index, factor, stream)
        except Exception as error:  # noqa: BLE001 (an optimisation: any failure falls back to the elementwise pass)
            get_logger(None).info("norm's scale not fused into cuFFT (%s: %s); using an elementwise pass",
                                  type(error).__name__, error)
            item = None
        self._scaled[factor] = item
        if item is not None:
            self.workspace_bytes = max(self.workspace_bytes, item.work_bytes)
            self.memory_bytes = self.workspace_bytes + self.scratch_bytes
            self.bind_stream(stream)  # the new handle gets the stream and the (maybe larger) work area
        return item

    def _scaled_pass(self, index: int, factor: float, stream) -> _Pass:
        callbacks.require_lto("norm")
        step = self.layout.steps[index]
        element = self._element_dtype(step, store=True).name
        major, minor = _device_capability(self.device_id) or (0, 0)
        callback = scale_callback(element, f"sm_{major}{minor}")
        value = np.array([factor], dtype=factor_dtype(element))
        buffer = allocate(value.nbytes, stream, self.device_id, self._memory_resource)
        cuda_driver.memcpy_async(int(buffer.handle), value.ctypes.data, value.nbytes, stream.handle)
        loads = [item for item in self._passes[self._pass_number(index)].attachments if item.callback.role == "prolog"]
        try:
            item = _Pass(step, self.precision, loads + [callbacks.Attachment(callback, int(buffer.handle), buffer)])
        except BaseException:
            buffer.close()
            raise
        item.keep.append(value)
        item.owned.append(buffer)
        if self.simple:
            item.prepare_fast_call(self.precision)
        return item

    def _pass_number(self, index: int) -> int:
        """Position among the FFT passes of the step at ``index``."""
        return sum(isinstance(step, FFTPass) for step in self.layout.steps[:index])

    def _run_steps(self, source, target, direction, factor, conj, fuse=False):
        stream = self._stream
        scratch = self._scratch_ptr
        pointers = {INPUT: source, OUTPUT: target, SCRATCH: scratch, SCRATCH_REAL: scratch}
        conj_input = conj and self.layout.fft_type == "C2R"
        scaled_index = None
        if fuse and factor != 1.0 and not conj:
            scaled = self._scaled.get(factor, _NOT_TRIED)
            if scaled is _NOT_TRIED:
                scaled = self._make_scaled(factor, stream)
            if scaled is not None:
                scaled_index, factor = self._store_index, 1.0
        passes = iter(self._passes)
        for index, step in enumerate(self.layout.steps):
            if isinstance(step, CopyStep):
                self._copy(step, pointers, factor, conj_input, stream)
                factor, conj_input = 1.0, False
                continue
            item = next(passes)
            self._execute_pass(scaled if index == scaled_index else item, pointers, direction)
        if conj_input:
            raise InvalidStateError("conjugating a C2R input needs a layout that copies it")
        if factor != 1.0 or (conj and self.layout.fft_type != "C2R"):
            self._scale_result(pointers, factor, conj, stream)

    def _copy(self, step: CopyStep, pointers, factor, conj, stream):
        source_dtype, target_dtype = self._dtypes[step.source], self._dtypes[step.target]
        if step.zero_fill:
            _memset_async(pointers[step.target], self._buffer_bytes(step.target), stream.handle)
        # (a dense copy of one layout is a cuMemcpyAsync there)
        elementwise.copy_nd(pointers[step.source], pointers[step.target], step.shape, step.source_strides,
                            step.target_strides, source_dtype, target_dtype, factor, conj, stream, self.device_id)

    def _buffer_bytes(self, name) -> int:
        if name in (SCRATCH, SCRATCH_REAL):
            return self.scratch_bytes
        return self._output_elements * self.output_dtype.itemsize

    def _execute_pass(self, item: _Pass, pointers, direction):
        step = item.step
        source, target = pointers[step.source], pointers[step.target]
        in_size, out_size = self._dtypes[step.source].itemsize, self._dtypes[step.target].itemsize
        if step.direction is not None:
            direction = step.direction
        function, handle, name = item.function, item.handle, item.name
        for source_offset, target_offset in item.offsets:
            args = (handle, source + source_offset * in_size, target + target_offset * out_size)
            status = function(*args, direction) if item.takes_direction else function(*args)
            if status:
                cufft.check(status, name)

    def _scale_result(self, pointers, factor, conj, stream):
        layout = self.layout
        if self._inplace:  # the result is the (strided) operand itself
            elementwise.copy_nd(pointers[INPUT], pointers[INPUT], layout.output_shape, layout.output_strides,
                                layout.output_strides, self.output_dtype, self.output_dtype, factor, conj, stream,
                                self.device_id)
            return
        elementwise.scale(pointers[OUTPUT], self._output_elements, self.output_dtype, factor, conj, stream,
                          self.device_id)

    # -- lifetime -------------------------------------------------------------------------------------

    def free(self) -> None:
        """Destroy the cuFFT handles and release the buffers. Safe to call twice."""
        if not self.valid:
            return
        self.valid = False
        for item in self._handles():
            item.destroy()
        self._scaled = {}
        self._workspace.release()
        self._scratch.release()
        self._stream_handle = None


def _device_capability(device_id: int):
    """(major, minor) of the GPU, or None when it cannot be asked (the host stand-in of the tests)."""
    try:
        capability = device.ensure_device(device_id).compute_capability
        return int(capability[0]), int(capability[1])
    except Exception:  # noqa: BLE001 (no device to ask: the checks that need it are skipped)
        return None
