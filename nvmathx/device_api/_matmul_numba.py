"""Numba typing and lowering of ``Matmul`` inside ``numba.cuda.jit`` kernels."""

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
    scalar_pointer,
)

__all__ = ["MatmulType", "matmul_numba_type"]

_ATTRIBUTES = (
    "size", "m", "n", "k", "value_type", "block_dim", "block_size", "lda", "ldb", "ldc",
    "a_size", "b_size", "c_size", "shared_memory_size",
)  # fmt: skip


class MatmulType(DescriptorType):
    def __init__(self, host):
        super().__init__(host, "Matmul")


def matmul_numba_type(gemm) -> MatmulType:
    """The numba type of ``gemm``."""
    return numba_type_for(MatmulType, gemm)


def check_arguments(gemm, args) -> None:
    """Accept execute(alpha, a, b, beta, c): numbers, then arrays of the value type."""
    value_type = gemm.value_type
    if len(args) == 5:
        alpha, a, b, beta, c = args
        scalars_ok = all(isinstance(s, types.Number) for s in (alpha, beta))
        arrays_ok = all(isinstance(x, types.Array) and x.dtype == value_type for x in (a, b, c))
        if scalars_ok and arrays_ok:
            return
    got = ", ".join(str(a) for a in args)
    raise TypingError(
        f"{gemm!r}: expected execute(alpha, a, b, beta, c) with numbers alpha, beta and shared-memory "
        f"arrays of {value_type} (got {got})"
    )


def _lower_execute(context, builder, gemm, arg_types, args):
    value_type = gemm.value_type
    pointers = [
        scalar_pointer(context, builder, t, value_type, v) if i in (0, 3) else data_pointer(context, builder, t, v)
        for i, (t, v) in enumerate(zip(arg_types, args, strict=True))
    ]
    call_generated(context, builder, gemm.code(), pointers)


register_descriptor_type(MatmulType, _ATTRIBUTES, check_arguments, _lower_execute)
refresh_contexts()
