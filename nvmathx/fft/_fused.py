"""The fused engine's plan: one generated cuFFTDx kernel per direction, launched over blocks of rows.

It stands where a :class:`~nvmathx._fftcore.plan.CufftPlan` would (``run``, ``free``,
``memory_bytes``): the caller's factor (a norm) is applied by the kernel's store, so a normalised
transform costs one pass over memory like a plain one. The user's cuFFT callbacks are called by the
kernel with cuFFT's signature, offsets and user data; as with cuFFT, a norm's factor multiplies what
an epilog stored, in a pass of its own.
"""

from __future__ import annotations

import functools

import numpy as np

from .._bindings import cuda_driver
from .._codegen import elementwise, fused_fft
from .._codegen.target import Target, max_shared_memory_per_block
from .._core import device
from .._core.errors import CudaLibraryError, InvalidStateError, LibraryNotFoundError, OptionsError
from .._fftcore.callbacks import check_fits
from .._fftcore.engine import FusedRows, check_callback_launches

__all__ = ["FusedPlan", "compute_capability", "kernel_state", "launch_offsets"]

_DEFAULT_SHARED_LIMIT = 48 * 1024  # dynamic shared memory a launch gets without opting in

# (elements_per_thread, ffts_per_block, min_blocks, staged_loads) measured faster than cuFFTDx's
# suggestion, by compute capability major and transform (`scripts/recipe tune-fft-knobs`; the
# figures are in docs/guide/fft.rst, "Performance notes"); min_blocks, where not None, is the
# kernel's resident blocks per SM asked of the compiler (fewer registers per thread); staged_loads
# reads a folded R2C's reals through shared memory
_MEASURED_KNOBS = {(9, "C2C", 1024, "float32"): (16, 1, None, False),
                   (9, "C2C", 4096, "float32"): (16, 1, 5, False),
                   (9, "R2C", 4096, "float32"): (32, 1, 5, False)}


def _knobs(rows: FusedRows, sm, knobs: tuple | None) -> tuple | None:
    """``knobs`` as ``(elements_per_thread, ffts_per_block, min_blocks, staged_loads)`` (the last two
    None and False where not given), or the measured ones of this GPU family, or None (cuFFTDx's
    suggestion)."""
    if knobs is None:
        return _MEASURED_KNOBS.get((sm[0], rows.fft_type, rows.size, rows.precision))
    return (*knobs, None, False)[:4]


def _descriptor(rows: FusedRows, direction: str | None, sm, knobs: tuple | None = None):
    """cuFFTDx's block FFT for ``rows`` (``direction`` for C2C): folded for R2C/C2R of power-of-2
    length where cuFFTDx has it (a transform of half the length), with its suggested knobs, or one transform
    per block when those need more shared memory than the architecture allows a block. ``knobs``
    (``(elements_per_thread, ffts_per_block, ...)``) replaces the suggestion (tuning). Refusals name
    ``options.engine``. Without ``knobs``, the measured ones where this GPU family has them."""
    chosen = _knobs(rows, sm, knobs)
    return _block_fft(rows.fft_type, rows.size, rows.precision, direction, tuple(sm),
                      chosen[:2] if chosen is not None else None)


def _kernel_options(rows: FusedRows, fft, sm, knobs: tuple | None = None) -> dict:
    """The :func:`~nvmathx._codegen.fused_fft.fused_kernel` options of the kernel of ``rows`` (cuFFTDx's
    ``fft``): the resident blocks per SM it is compiled for (None: the compiler's choice), whether
    it stages a folded real input through shared memory, which sides have unit element strides
    and which of those have dense rows (each compiled in)."""
    chosen = _knobs(rows, sm, knobs) or ("suggested", "suggested", None, False)
    folded_input = fft.fft_type == "r2c" and fft.real_mode == "folded"
    unit = (rows.in_element_stride == 1, rows.out_element_stride == 1)
    lengths = fused_fft.row_elements(fft)
    dense = (unit[0] and rows.in_row_stride == lengths[0], unit[1] and rows.out_row_stride == lengths[1])
    return {"min_blocks": chosen[2], "staged_loads": bool(chosen[3]) and folded_input, "unit_strides": unit,
            "dense_rows": dense}


@functools.lru_cache(maxsize=64)  # a plan's engine choice and the plan itself ask for the same one
def _block_fft(fft_type: str, size: int, precision: str, direction: str | None, sm: tuple, knobs: tuple | None):
    from nvmathx.device_api import FFT

    limit = max_shared_memory_per_block(Target(*sm))
    # the descriptor refuses folding (naming real_mode) where cuFFTDx cannot fold the size
    real_modes = ("folded", "normal") if fft_type != "C2C" else ("normal",)
    elements_per_thread, wanted_per_block = knobs if knobs is not None else ("suggested", "suggested")
    for real_mode in real_modes:
        for ffts_per_block in dict.fromkeys((wanted_per_block, 1)):  # one per block when the wanted ones do not fit
            try:
                fft = FFT(size, np.dtype(precision), fft_type=fft_type.lower(), direction=direction,
                          execution="Block", elements_per_thread=elements_per_thread,
                          ffts_per_block=ffts_per_block, sm=sm, real_mode=real_mode)
            except OptionsError as error:
                if error.argument == "real_mode":
                    break  # the normal mode may still have it
                raise OptionsError("options.engine", f"the fused engine cannot run this transform: {error}") from None
            if fft.shared_memory_size <= limit:
                return fft
    raise OptionsError("options.engine", f"the fused engine cannot run this transform: a length of {size} "
                                         f"needs {fft.shared_memory_size} bytes of shared memory per block "
                                         f"(at most {limit} on sm_{sm[0]}{sm[1]})")


def _directions(rows: FusedRows) -> tuple:
    return ("forward", "inverse") if rows.fft_type == "C2C" else (None,)


def _compiled(prolog, epilog) -> dict:
    """The compiled callbacks of the prolog and epilog attachments (None where absent)."""
    return {"prolog": prolog.callback if prolog is not None else None,
            "epilog": epilog.callback if epilog is not None else None}


def compute_capability(device_id: int) -> tuple:
    """The compute capability of GPU ``device_id`` (which rows of the measured table apply)."""
    return tuple(device.ensure_device(device_id).compute_capability)


def kernel_state(rows: FusedRows, device_id: int, prolog=None, epilog=None) -> str:
    """``"cached"`` when every kernel a :class:`FusedPlan` of ``rows`` (with these callback
    attachments) needs is in the disk cache, ``"absent"`` when one has to be built, otherwise a
    sentence saying why the fused engine cannot run the transform on this device. Generates nothing."""
    sm = compute_capability(device_id)
    callbacks = _compiled(prolog, epilog)
    try:
        ffts = [_descriptor(rows, direction, sm) for direction in _directions(rows)]
        cached = all(fused_fft.is_cached(fft, **callbacks, **_kernel_options(rows, fft, sm)) for fft in ffts)
    except OptionsError as error:
        return str(error)
    except LibraryNotFoundError as error:
        return f"libmathdx is not available ({error})"
    except CudaLibraryError as error:  # libmathdx refused a query: cuFFT still runs the transform
        return f"libmathdx could not describe the transform ({error})"
    return "cached" if cached else "absent"


def launch_offsets(rows: FusedRows, input_itemsize: int, output_itemsize: int) -> tuple:
    """``(input, output)`` byte offsets of the launches of ``rows``: one per loop offset, or one."""
    return tuple((source * input_itemsize, target * output_itemsize)
                 for source, target in rows.loop_offsets or ((0, 0),))


class FusedPlan:
    """The kernels of a transform of ``rows`` on a device (both directions of a C2C), compiled (or
    read from the disk cache) when the plan is made, so that ``run`` never waits on code generation.

    Raises
    ------
    OptionsError
        When cuFFTDx has no block transform of this length and precision on the device (naming
        ``options.engine``).
    """

    simple = True
    workspace_bytes = 0
    scratch_bytes = 0
    memory_bytes = 0

    def __init__(self, rows: FusedRows, device_id: int, output_shape=(), output_strides=(), prolog=None,
                 epilog=None, knobs: tuple | None = None):
        # knobs: (elements_per_thread, ffts_per_block[, min_blocks[, staged_loads]]) in place of the
        # measured or suggested ones (`scripts/recipe tune-fft-knobs`)
        from cuda.core import LaunchConfig, ObjectCode

        check_callback_launches(rows, prolog, epilog)
        major, minor = compute_capability(device_id)
        self.rows = rows
        self.device_id = device_id
        self._real = np.float32 if rows.precision == "float32" else np.float64
        complex_ = np.dtype(np.complex64 if rows.precision == "float32" else np.complex128)
        self._input = np.dtype(self._real) if rows.fft_type == "R2C" else complex_
        self._output = np.dtype(self._real) if rows.fft_type == "C2R" else complex_
        for role, item, element in (("prolog", prolog, self._input), ("epilog", epilog, self._output)):
            if item is not None:
                check_fits(role, item, element.name, (major, minor), f"GPU {device_id}")
        self._arguments = tuple(np.int64(value) for value in (rows.rows, rows.in_row_stride, rows.in_element_stride,
                                                               rows.out_row_stride, rows.out_element_stride))
        self._user_data = (prolog.pointer if prolog is not None else 0, epilog.pointer if epilog is not None else 0)
        self._launch_offsets = launch_offsets(rows, self._input.itemsize, self._output.itemsize)
        self._attachments = (prolog, epilog)  # their user data stays alive with the plan
        self._epilog = epilog is not None
        self._output_layout = (tuple(output_shape), tuple(output_strides))
        callbacks = _compiled(prolog, epilog)
        self._kernels = {}
        for direction in _directions(rows):
            sign = {"forward": -1, "inverse": 1, None: 0}[direction]
            fft = _descriptor(rows, direction, (major, minor), knobs)
            kernel = fused_fft.fused_kernel(fft, **callbacks, **_kernel_options(rows, fft, (major, minor), knobs))
            function = ObjectCode.from_cubin(kernel.cubin).get_kernel(kernel.symbol)
            if kernel.shared_memory_size > _DEFAULT_SHARED_LIMIT:
                cuda_driver.kernel_set_max_dynamic_shared_memory(function.handle, kernel.shared_memory_size,
                                                                 device_id)
            blocks = -(-rows.rows // kernel.ffts_per_block)
            config = LaunchConfig(grid=blocks, block=kernel.block_dim, shmem_size=kernel.shared_memory_size)
            self._kernels[sign] = (function, config)
        if rows.fft_type != "C2C":  # the direction is the transform's own
            self._kernels[-1] = self._kernels[1] = self._kernels.pop(0)
        self.valid = True

    def run(self, source: int, target: int, direction: int, stream, factor: float = 1.0, conj: bool = False,
            fuse: bool = False) -> None:
        """Transform the rows at ``source`` into ``target`` on ``stream`` (a StreamHolder), multiplied
        by ``factor`` in the kernel's store (``fuse`` is implied); ``direction`` is -1 or +1
        (ignored by R2C/C2R). ``conj`` conjugates R2C's result (a pass of its own); a C2R of the
        conjugated operand (``hfft``) is refused."""
        from cuda.core import launch

        from .._codegen.launch import core_stream

        if not self.valid:
            raise InvalidStateError("this transform has been freed")
        if conj and self.rows.fft_type == "C2R":
            raise OptionsError("plan", "the fused engine does not conjugate a C2R operand (hfft); plan it with "
                                       "engine='cufft'")
        function, config = self._kernels[direction]
        scale_after = (self._epilog and factor != 1.0) or conj
        core, scale = core_stream(stream), self._real(1.0 if scale_after else factor)
        for source_offset, target_offset in self._launch_offsets:
            launch(core, config, function, source + source_offset, target + target_offset, *self._arguments, scale,
                   *self._user_data)
        if scale_after:  # as cuFFT's engine does: the factor multiplies what the epilog stored
            shape, strides = self._output_layout
            elementwise.copy_nd(target, target, shape, strides, strides, self._output, self._output, factor, conj,
                                stream, self.device_id)

    def free(self) -> None:
        self._kernels = {}
        self._attachments = (None, None)
        self.valid = False

