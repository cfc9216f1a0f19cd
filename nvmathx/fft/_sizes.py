"""How many bytes a transform's result takes, and the check that it fits the memory where it runs.

A length past what any memory holds (``n=2**40``) is refused naming ``n`` or ``s``, with the bytes
it would need, before scipy.fft or cuFFT tries to allocate it.
"""

from __future__ import annotations

import math
import os

from .._bindings import cuda_driver
from .._core.errors import OptionsError
from .._fftcore.layout import output_shape
from ._gpu import result_dtype

__all__ = ["result_bytes", "check_result_fits", "host_memory_bytes", "device_memory_bytes", "check_fits_device"]

_device_memory: dict[int, int] = {}


def result_bytes(fft_type: str, shape, dtype, axes, lengths) -> int:
    """Bytes of the result of a transform of ``lengths`` over ``axes`` of an operand of ``shape`` and
    ``dtype`` (Python ints: no overflow, however large the lengths)."""
    return math.prod(output_shape(fft_type, tuple(shape), tuple(axes), tuple(lengths))) * \
        result_dtype(fft_type, dtype).itemsize


def check_result_fits(nbytes: int, memory: int | None, argument: str, where: str = "this machine") -> None:
    """Raise OptionsError naming ``argument`` (``n`` or ``s``) when a result of ``nbytes`` cannot fit
    in ``memory`` bytes (None: no limit known) of ``where``."""
    if memory is not None and nbytes > memory:
        raise OptionsError(argument, f"asks for a result of {nbytes} bytes, more than {where}'s {memory} bytes of "
                                     "memory")


def host_memory_bytes() -> int | None:
    """The machine's physical memory in bytes, or None where the platform does not say."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


def device_memory_bytes(device_id: int) -> int:
    """The total memory of GPU ``device_id`` in bytes (asked of the driver once per device)."""
    total = _device_memory.get(device_id)
    if total is None:
        total = _device_memory[device_id] = cuda_driver.device_total_memory(device_id)
    return total


def check_fits_device(fft_type: str, shape, dtype, axes, lengths, device_id: int, argument: str) -> None:
    """:func:`check_result_fits` for a transform on GPU ``device_id``."""
    check_result_fits(result_bytes(fft_type, shape, dtype, axes, lengths), device_memory_bytes(device_id), argument,
                      f"GPU {device_id}")
