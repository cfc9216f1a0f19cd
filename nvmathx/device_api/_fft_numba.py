"""Numba typing and lowering of ``FFT`` inside ``numba.cuda.jit`` kernels."""

from __future__ import annotations

from numba.cuda import types

from ._numba_common import (
    DescriptorType,
    TypingError,
    call_generated,
    data_pointer,
    numba_type_for,
    refresh_contexts,
    register_descriptor_type,
)

__all__ = ["FFTType", "fft_numba_type"]

_ATTRIBUTES = (
    "size", "value_type", "input_type", "output_type", "storage_size", "stride", "elements_per_thread",
    "ffts_per_block", "block_dim", "shared_memory_size", "shared_api_memory_size", "input_length",
    "output_length", "input_elements_per_thread", "output_elements_per_thread", "implicit_type_batching",
    "alignment", "max_threads_per_block",
)  # fmt: skip


class FFTType(DescriptorType):
    def __init__(self, host):
        super().__init__(host, "FFT")


def fft_numba_type(fft) -> FFTType:
    """The numba type of ``fft``."""
    return numba_type_for(FFTType, fft)


def _is_array_of(argument, dtype) -> bool:
    return isinstance(argument, types.Array) and argument.dtype == dtype


def call_form(fft, args) -> str:
    """Which generated function ``fft.execute(*args)`` calls, or a TypingError saying why none.

    ``"registers"``: (thread_data, shared) for Block, (thread_data,) for Thread; ``"shared"``:
    (shared,) for Block c2c.
    """
    value_type = fft.value_type
    data_first = len(args) >= 1 and _is_array_of(args[0], value_type)
    if fft.execution == "Thread" and len(args) == 1 and data_first:
        return "registers"
    if fft.execution == "Block" and len(args) == 2 and data_first and isinstance(args[1], types.Array):
        return "registers"
    if fft.execution == "Block" and len(args) == 1 and data_first:
        if fft.fft_type != "c2c":
            raise TypingError(
                f"{fft!r}: execute(shared) supports c2c transforms only; use execute(thread_data, shared)"
            )
        return "shared"
    usage = "execute(thread_data)" if fft.execution == "Thread" else "execute(thread_data, shared) or execute(shared)"
    got = ", ".join(str(a) for a in args)
    raise TypingError(f"{fft!r}: expected {usage} with arrays of {value_type} (got {got})")


def _lower_execute(context, builder, fft, arg_types, args):
    pointers = [data_pointer(context, builder, t, v) for t, v in zip(arg_types, args, strict=True)]
    call_generated(context, builder, fft.code(call_form(fft, arg_types)), pointers)


register_descriptor_type(FFTType, _ATTRIBUTES, call_form, _lower_execute)
refresh_contexts()
