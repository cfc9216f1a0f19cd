"""FFTOptions: how a stateful FFT is planned and run."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from .._core.errors import OptionsError
from .._core.memory import check_memory_resource
from .._core.options import as_index, check_choice

__all__ = ["FFTOptions", "FFT_TYPES", "DIRECTIONS", "normalize_direction"]

FFT_TYPES = ("C2C", "R2C", "C2R")
DIRECTIONS = {"forward": -1, "inverse": +1, -1: -1, +1: +1}


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

    def __post_init__(self):
        if self.fft_type is not None:
            check_choice(self.fft_type, FFT_TYPES, "options.fft_type")
        check_choice(self.inplace, (True, False), "options.inplace")
        check_choice(self.last_axis_parity, ("even", "odd"), "options.last_axis_parity")
        check_choice(self.blocking, (True, "auto"), "options.blocking")
        check_memory_resource(self.memory_resource, "options.memory_resource")
        if self.logger is not None and not isinstance(self.logger, logging.Logger):
            raise OptionsError("options.logger", f"expected a logging.Logger (got {type(self.logger).__name__})")


def normalize_direction(direction, fft_type: str, argument: str = "direction") -> int:
    """-1 (forward) or +1 (inverse); None picks the transform's natural direction. Integers of any
    kind (numpy's, 0-d arrays) count; bools and floats do not."""
    if direction is None:
        return +1 if fft_type == "C2R" else -1
    key = direction.lower() if isinstance(direction, str) else as_index(direction)
    if key not in DIRECTIONS:
        raise OptionsError(argument, f"expected 'forward', 'inverse', -1 or +1 (got {direction!r})")
    value = DIRECTIONS[key]
    if fft_type == "R2C" and value != -1 or fft_type == "C2R" and value != +1:
        raise OptionsError(
            argument, f"a {fft_type} transform runs only {'forward' if fft_type == 'R2C' else 'inverse'}"
        )
    return value
