"""FFTOptions: how a stateful FFT is planned and run."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from .._core.errors import OptionsError
from .._core.memory import check_memory_resource
from .._core.options import check_choice
from .._fftcore.engine import ENGINES

__all__ = ["FFTOptions", "FFT_TYPES"]

FFT_TYPES = ("C2C", "R2C", "C2R")


@dataclass(frozen=True)
class FFTOptions:
    """Options of :class:`nvmathx.fft.FFT` (frozen, like every nvmathx options class).

    Fields are checked when the options are made, and cannot be assigned afterwards: a changed
    copy comes from :func:`dataclasses.replace`, which checks the new values again.

    Parameters
    ----------
    fft_type : {"C2C", "R2C", "C2R"} or None
        The transform. None infers it from the operand: complex operands get C2C, real ones R2C.
        C2R must be asked for.
    inplace : bool
        C2C only: write the result over the operand (which is then returned by ``execute()``).
    last_axis_parity : {"even", "odd"}
        C2R only: whether the real result's last transformed axis has ``2 * (m - 1)`` ("even") or
        ``2 * m - 1`` ("odd") points, where ``m`` is the operand's extent along that axis.
    memory_resource : cuda.core MemoryResource or None
        Where the work area and scratch buffers come from (default: the device's resource).
    blocking : True or "auto"
        True: ``execute()`` returns once the result is ready. "auto": it returns at once for GPU
        operands and after the copy back for host operands.
    logger : logging.Logger or None
        Where planning is reported (default: the ``nvmathx`` logger).
    engine : {"auto", "cufft", "fused"}
        What runs the transform on a GPU. ``"cufft"``: cuFFT. ``"fused"``: one generated cuFFTDx kernel
        that loads each row, transforms it and stores it in one pass (C2C, R2C or C2R along one axis,
        batched (one launch per outer index where the batch axes do not collapse into one row stride,
        callbacks then refused as cuFFT refuses them), lengths 2 to 32768 in single and 16384 in double
        precision whose block fits the GPU's shared memory; power-of-2 R2C/C2R run as a transform of
        half the length; callbacks are called as cuFFT calls them; a norm is applied in its store); over several
        axes, one pass per axis, the fused kernel along each axis it fits and cuFFT along the others
        (the prolog on the first pass, the epilog and the norm on the last); a transform it cannot
        run raises ``OptionsError`` naming ``options.engine`` at ``plan()``. Its
        code is generated and linked the first time (seconds), then read from the disk cache. ``"auto"``
        (default): the fused kernel where callbacks are attached and the transform fits it (the plan
        builds the kernel if needed), and for the function forms' ``norm="ortho"``/``"forward"`` once
        that kernel is in the disk cache (a call never waits on code generation it did not ask for; plan
        once with ``"fused"`` to build it), as for the plain transforms a committed table measured
        faster on this GPU family (C2R 4096 float32 on compute capability 9); cuFFT for everything else,
        for ``hfft`` (the fused C2R does not conjugate) and where libmathdx is not installed. The
        planning log line names the engine and why. The CPU execution space runs scipy.fft whatever the
        engine, and refuses ``"fused"``.

    Raises
    ------
    OptionsError
        When a field has an invalid value (the message names the field).
    dataclasses.FrozenInstanceError
        When a field is assigned.

    Examples
    --------
    >>> import dataclasses
    >>> from nvmathx.fft import FFTOptions
    >>> options = FFTOptions(fft_type="C2R")
    >>> dataclasses.replace(options, last_axis_parity="odd").last_axis_parity
    'odd'
    """

    fft_type: str | None = None
    inplace: bool = False
    last_axis_parity: str = "even"
    memory_resource: Any = None
    blocking: Any = "auto"
    logger: logging.Logger | None = None
    engine: str = "auto"

    def __post_init__(self):
        if self.fft_type is not None:
            check_choice(self.fft_type, FFT_TYPES, "options.fft_type")
        check_choice(self.inplace, (True, False), "options.inplace")
        check_choice(self.last_axis_parity, ("even", "odd"), "options.last_axis_parity")
        check_choice(self.blocking, (True, "auto"), "options.blocking")
        check_choice(self.engine, ENGINES, "options.engine")
        check_memory_resource(self.memory_resource, "options.memory_resource")
        if self.logger is not None and not isinstance(self.logger, logging.Logger):
            raise OptionsError("options.logger", f"expected a logging.Logger (got {type(self.logger).__name__})")
