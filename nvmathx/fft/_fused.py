"""The fused engine's plan: one generated cuFFTDx kernel per direction, launched over blocks of rows.

It stands where a :class:`~nvmathx._fftcore.plan.CufftPlan` would (``run``, ``free``,
``memory_bytes``): the caller's factor (a norm) is applied by the kernel's store, so a normalised
transform costs one pass over memory like a plain one. The user's cuFFT callbacks are called by the
kernel with cuFFT's signature, offsets and user data; as with cuFFT, a norm's factor multiplies what
an epilog stored, in a pass of its own.
"""

from __future__ import annotations

import numpy as np

from .._codegen import elementwise, fused_fft
from .._core import device
from .._core.errors import InvalidStateError, OptionsError
from .._fftcore.engine import FusedRows

__all__ = ["FusedPlan"]

_DEFAULT_SHARED_LIMIT = 48 * 1024  # dynamic shared memory a launch gets without opting in


def _descriptor(rows: FusedRows, direction: str, sm):
    """cuFFTDx's block FFT for ``rows``: its suggested knobs, or one transform per block when those
    need more than the default shared memory. Refusals name ``options.engine``."""
    from nvmathx.device_api import FFT

    for ffts_per_block in ("suggested", 1):
        try:
            fft = FFT(rows.size, np.dtype(rows.precision), fft_type="c2c", direction=direction, execution="Block",
                      ffts_per_block=ffts_per_block, sm=sm)
        except OptionsError as error:
            raise OptionsError("options.engine", f"the fused engine cannot run this transform: {error}") from None
        if fft.shared_memory_size <= _DEFAULT_SHARED_LIMIT:
            return fft
    raise OptionsError("options.engine", f"the fused engine cannot run this transform: a length of {rows.size} "
                                         f"needs {fft.shared_memory_size} bytes of shared memory per block "
                                         f"(at most {_DEFAULT_SHARED_LIMIT})")


class FusedPlan:
    """Both directions of a C2C transform of ``rows`` on a device, compiled (or read from the disk
    cache) when the plan is made, so that ``run`` never waits on code generation.

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
                 epilog=None):
        from cuda.core import LaunchConfig, ObjectCode

        major, minor = device.ensure_device(device_id).compute_capability
        self.rows = rows
        self.device_id = device_id
        self._real = np.float32 if rows.precision == "float32" else np.float64
        self._complex = np.dtype(np.complex64 if rows.precision == "float32" else np.complex128)
        for role, item in (("prolog", prolog), ("epilog", epilog)):
            _check_callback(role, item, self._complex.name, (major, minor))
        self._arguments = tuple(np.int64(value) for value in (rows.rows, rows.in_row_stride, rows.in_element_stride,
                                                               rows.out_row_stride, rows.out_element_stride))
        self._user_data = (prolog.pointer if prolog is not None else 0, epilog.pointer if epilog is not None else 0)
        self._attachments = (prolog, epilog)  # their user data stays alive with the plan
        self._epilog = epilog is not None
        self._output = (tuple(output_shape), tuple(output_strides))
        callbacks = {"prolog": prolog.callback if prolog is not None else None,
                     "epilog": epilog.callback if epilog is not None else None}
        self._kernels = {}
        for sign, direction in ((-1, "forward"), (1, "inverse")):
            kernel = fused_fft.fused_kernel(_descriptor(rows, direction, (major, minor)), **callbacks)
            function = ObjectCode.from_cubin(kernel.cubin).get_kernel(kernel.symbol)
            blocks = -(-rows.rows // kernel.ffts_per_block)
            config = LaunchConfig(grid=blocks, block=kernel.block_dim, shmem_size=kernel.shared_memory_size)
            self._kernels[sign] = (function, config)
        self.ffts_per_block = kernel.ffts_per_block
        self.block_dim = kernel.block_dim
        self.valid = True

    def run(self, source: int, target: int, direction: int, stream, factor: float = 1.0, conj: bool = False,
            fuse: bool = False) -> None:
        """Transform the rows at ``source`` into ``target`` on ``stream`` (a StreamHolder), multiplied
        by ``factor`` in the kernel's store (``fuse`` is implied). ``conj`` is for R2C/C2R, which this
        engine does not run."""
        from cuda.core import launch

        from .._codegen.launch import core_stream

        if not self.valid:
            raise InvalidStateError("this transform has been freed")
        function, config = self._kernels[direction]
        scale_after = self._epilog and factor != 1.0
        launch(core_stream(stream), config, function, source, target, *self._arguments,
               self._real(1.0 if scale_after else factor), *self._user_data)
        if scale_after:  # as cuFFT's engine does: the factor multiplies what the epilog stored
            shape, strides = self._output
            elementwise.copy_nd(target, target, shape, strides, strides, self._complex, self._complex, factor, False,
                                stream, self.device_id)

    def free(self) -> None:
        self._kernels = {}
        self._attachments = (None, None)
        self.valid = False


def _check_callback(role: str, item, element: str, capability) -> None:
    """Refuse a callback compiled for other elements or a newer architecture (naming ``role``)."""
    if item is None:
        return
    callback = item.callback
    if callback.element_dtype != element:
        raise OptionsError(role, f"the callback was compiled for {callback.element_dtype} elements; this transform "
                                 f"{'loads' if role == 'prolog' else 'stores'} {element}")
    if callback.compute_capability > tuple(capability):
        raise OptionsError(role, f"the callback was compiled for {callback.target}; the GPU is "
                                 f"sm_{capability[0]}{capability[1]}")
