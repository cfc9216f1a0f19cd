"""cuFFT plans for one :class:`LayoutPlan`, and the code that runs them on raw device pointers.

:class:`CufftPlan` makes one cuFFT plan per pass (work area supplied by us, from a
:class:`~nvmathx._core.memory.Workspace`), keeps a scratch buffer when the layout needs one, and
runs the steps on a stream. The common case, one pass with no copies, loops or scale, is a single
ctypes call with arguments prepared at plan time.
"""

from __future__ import annotations

import ctypes
from contextlib import ExitStack

import numpy as np

from .._bindings import cufft
from .._core.errors import InvalidStateError
from .._core.memory import Workspace
from . import _kernels
from ._layout import INPUT, OUTPUT, SCRATCH, SCRATCH_REAL, CopyStep, FFTPass, LayoutPlan

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
    from .._bindings.cuda_driver import memset_async

    memset_async(pointer, 0, nbytes, stream_handle)


class _Pass:
    """One cuFFT handle and how to call it."""

    __slots__ = ("step", "handle", "function", "takes_direction", "name", "offsets", "work_bytes")

    def __init__(self, step: FFTPass, precision: str):
        self.step = step
        fft_type = _CUFFT_TYPES[step.fft_type, precision]
        self.function, self.takes_direction, self.name = cufft.exec_function(fft_type)
        self.handle = cufft.create()
        try:
            cufft.set_auto_allocation(self.handle, False)
            self.work_bytes = cufft.make_plan_many64(
                self.handle, step.n, step.inembed, step.istride, step.idist, step.onembed, step.ostride, step.odist,
                fft_type, step.batch,
            )
        except BaseException:
            cufft.destroy(self.handle)
            raise
        self.offsets = step.loop_offsets()

    def destroy(self):
        if self.handle is not None:
            cufft.destroy(self.handle)
            self.handle = None


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
    """

    def __init__(self, layout: LayoutPlan, input_dtype, device_id: int, memory_resource=None, inplace=False):
        from .._core.device import ensure_device

        ensure_device(device_id)  # cuFFT plans for the current device
        self.layout = layout
        self.device_id = device_id
        self.precision, real, complex_ = precision_dtypes(input_dtype)
        self.input_dtype = np.dtype(input_dtype)
        self.output_dtype = real if layout.fft_type == "C2R" else complex_
        self.scratch_dtype = complex_ if layout.scratch_is_complex else real
        self._dtypes = {INPUT: self.input_dtype, OUTPUT: self.output_dtype, SCRATCH: self.scratch_dtype,
                        SCRATCH_REAL: real}
        self._passes = []
        with ExitStack() as undo:  # a failed plan destroys the handles it made
            for step in layout.steps:
                if isinstance(step, FFTPass):
                    item = _Pass(step, self.precision)
                    undo.callback(item.destroy)
                    self._passes.append(item)
            undo.pop_all()
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
            only = self._passes[0]
            function, takes_direction, name = cufft.raw_exec_function(_CUFFT_TYPES[only.step.fft_type, self.precision])
            self._fast = (function, ctypes.c_int(only.handle), takes_direction, name)
        self.valid = True

    # -- streams ------------------------------------------------------------------------------------

    def bind_stream(self, stream) -> None:
        """Use ``stream`` (a StreamHolder) from now on: set it on every handle, order the work area
        and scratch buffer on it."""
        if not self.valid:
            raise InvalidStateError("the cuFFT plan has been freed")
        work = self._workspace.ensure(self.workspace_bytes, stream)
        self._scratch_ptr = self._scratch.ensure(self.scratch_bytes, stream)
        for item in self._passes:
            cufft.set_stream(item.handle, stream.handle)
            if work:
                cufft.set_work_area(item.handle, work)
        self._stream_handle = stream.handle
        self._stream = stream

    # -- execution ----------------------------------------------------------------------------------

    def run(self, source: int, target: int, direction: int, stream, factor: float = 1.0, conj: bool = False) -> None:
        """Transform the operand at ``source`` into the result at ``target`` on ``stream``.

        ``direction`` is -1 or +1 (ignored by R2C/C2R); the result is multiplied by ``factor``,
        folded into the first copy where the layout has one. ``conj`` conjugates the complex side:
        the input of C2R (always copied then), the result of R2C.
        """
        if stream.handle != self._stream_handle:
            self.bind_stream(stream)
        if self.simple and factor == 1.0 and not conj:
            # Prepared ctypes objects and a function without argtypes: no per-call conversion.
            function, handle, takes_direction, name = self._fast
            if takes_direction:
                status = function(handle, _void_p(source), _void_p(target), _DIRECTIONS[direction])
            else:
                status = function(handle, _void_p(source), _void_p(target))
            if status:
                cufft.check(status, name)
            return
        self._run_steps(source, target, direction, factor, conj)

    def _run_steps(self, source, target, direction, factor, conj):
        stream = self._stream
        scratch = self._scratch_ptr
        pointers = {INPUT: source, OUTPUT: target, SCRATCH: scratch, SCRATCH_REAL: scratch}
        conj_input = conj and self.layout.fft_type == "C2R"
        passes = iter(self._passes)
        for step in self.layout.steps:
            if isinstance(step, CopyStep):
                self._copy(step, pointers, factor, conj_input, stream)
                factor, conj_input = 1.0, False
                continue
            self._execute_pass(next(passes), pointers, direction)
        if conj_input:
            raise InvalidStateError("conjugating a C2R input needs a layout that copies it")
        if factor != 1.0 or (conj and self.layout.fft_type != "C2R"):
            self._scale_result(pointers, factor, conj, stream)

    def _copy(self, step: CopyStep, pointers, factor, conj, stream):
        from .._bindings.cuda_driver import memcpy_async

        source_dtype, target_dtype = self._dtypes[step.source], self._dtypes[step.target]
        if step.zero_fill:
            _memset_async(pointers[step.target], self._buffer_bytes(step.target), stream.handle)
        dense = _span_elements(step.shape, step.source_strides) == int(np.prod(step.shape))
        if (dense and step.source_strides == step.target_strides and source_dtype == target_dtype and factor == 1.0
                and not conj and all(s > 0 for e, s in zip(step.shape, step.source_strides) if e > 1)):
            nbytes = _span_elements(step.shape, step.source_strides) * source_dtype.itemsize
            memcpy_async(pointers[step.target], pointers[step.source], nbytes, stream.handle)
            return
        _kernels.copy_nd(pointers[step.source], pointers[step.target], step.shape, step.source_strides,
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
            _kernels.copy_nd(pointers[INPUT], pointers[INPUT], layout.output_shape, layout.output_strides,
                             layout.output_strides, self.output_dtype, self.output_dtype, factor, conj, stream,
                             self.device_id)
            return
        _kernels.scale(pointers[OUTPUT], self._output_elements, self.output_dtype, factor, conj, stream,
                       self.device_id)

    # -- lifetime -------------------------------------------------------------------------------------

    def free(self) -> None:
        """Destroy the cuFFT handles and release the buffers. Safe to call twice."""
        if not self.valid:
            return
        self.valid = False
        for item in self._passes:
            item.destroy()
        self._workspace.release()
        self._scratch.release()
        self._stream_handle = None
