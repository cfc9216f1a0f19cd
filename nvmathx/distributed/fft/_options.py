"""FFTOptions of the distributed FFT (frozen, validated on construction)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from ..._core.errors import OptionsError
from ..._core.memory import check_memory_resource
from ..._core.options import check_choice

__all__ = ["FFTOptions"]


@dataclass(frozen=True)
class FFTOptions:
    """Options of :class:`nvmathx.distributed.fft.FFT` and the function forms. Frozen: derive a
    changed copy with ``dataclasses.replace``, which validates again.

    Parameters
    ----------
    fft_type : {"C2C", "R2C", "C2R"} or None
        The transform; None infers it from the operand (complex: C2C, real: R2C). C2R must be
        asked for.
    reshape : bool
        True: the result comes back in the input's slab distribution. False: it stays in the
        distribution the transpose algorithm ends in (``FFT.result_distribution`` says which;
        usually the other slab), saving one all-to-all. Box distributions always end in the
        output box.
    last_axis_parity : {"even", "odd"}
        C2R: the real length of the last transformed axis is ``2 * (m - 1)`` or ``2 * m - 1``.
    force_distributed : bool
        At world size 1 the transform runs on the single-GPU (or single-process) path by default;
        True runs the distributed algorithm instead (its passes, exchanges and copies).
    loopback : bool
        Send each rank's own piece through the exchange (NCCL on the GPU, the process group on the
        CPU) instead of copying it locally; for testing the exchange on one GPU. Slower.
    memory_resource : cuda.core MemoryResource or None
        Where work buffers come from (default: the device's).
    blocking : True or "auto"
        True: ``execute()`` returns once the result is ready; "auto": it returns at once.
    logger : logging.Logger or None
        Where planning is reported (default: the ``nvmathx`` logger).

    Raises
    ------
    OptionsError
        When a field has an invalid value (the message names the field).
    """

    fft_type: str | None = None
    reshape: bool = True
    last_axis_parity: str = "even"
    force_distributed: bool = False
    loopback: bool = False
    memory_resource: Any = None
    blocking: Any = "auto"
    logger: logging.Logger | None = None

    def __post_init__(self):
        if self.fft_type is not None:
            check_choice(self.fft_type, ("C2C", "R2C", "C2R"), "options.fft_type")
        for name in ("reshape", "force_distributed", "loopback"):
            check_choice(getattr(self, name), (True, False), f"options.{name}")
        check_choice(self.last_axis_parity, ("even", "odd"), "options.last_axis_parity")
        check_choice(self.blocking, (True, "auto"), "options.blocking")
        check_memory_resource(self.memory_resource, "options.memory_resource")
        if self.logger is not None and not isinstance(self.logger, logging.Logger):
            raise OptionsError("options.logger", f"expected a logging.Logger (got {type(self.logger).__name__})")

    def key(self) -> tuple:
        """What of the options every rank must agree on, hashable."""
        return (self.fft_type, self.reshape, self.last_axis_parity, self.force_distributed, self.loopback,
                self.blocking)
