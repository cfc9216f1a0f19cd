"""numba-cuda's typing and lowering of ``FFT``, ``Matmul``, ``Random`` and ``Solver`` (llvmlite).

A type per descriptor object, its traits as constant attributes, and ``execute`` lowered to a call
of the generated function, whose LTO-IR links itself. Methods are typed with templates and
lowered directly, without ``overload_method``, so that kernels compile (to PTX or LTO-IR) on a
machine without a GPU. Imported only when numba-cuda types a kernel (see ``_compilers``).
"""

from __future__ import annotations

import functools

import numpy as np
from llvmlite import ir
from numba.cuda import cgutils, types
from numba.cuda.core.errors import TypingError
from numba.cuda.cudadecl import registry as typing_registry
from numba.cuda.cudadrv.linkable_code import LTOIR, Fatbin
from numba.cuda.cudaimpl import lower_constant
from numba.cuda.cudaimpl import registry as lowering_registry
from numba.cuda.datamodel.models import OpaqueModel
from numba.cuda.extending import register_model
from numba.cuda.np.numpy_support import from_dtype
from numba.cuda.typing.templates import AttributeTemplate, bound_function, signature

from .._codegen.compilers import kernel_constant
from . import _link_cache, _signatures
from ._fft import FFT
from ._matmul import Matmul
from ._random import Random
from ._solver import Solver

__all__ = ["numba_type", "TypingError"]


numba_type = _signatures.DescriptorTypes(types.Type)
FFTType, MatmulType, RandomType, SolverType = (numba_type.fft, numba_type.matmul, numba_type.random,
                                              numba_type.solver)


@functools.cache
def _value_type(dtype: np.dtype):
    return from_dtype(dtype)


def _register(type_class, attributes: tuple[str, ...], methods: dict) -> None:
    """Register data model, constant lowering, constant attributes and the methods of ``type_class``.

    ``methods`` maps a name to ``(check, lower)``: ``check(host, arg_types)`` raises TypingError for
    calls it does not accept; ``lower(context, builder, host, arg_types, args)`` emits the call.
    """
    register_model(type_class)(OpaqueModel)

    @lower_constant(type_class)
    def _constant(context, builder, ty, pyval):
        return context.get_constant_null(ty)

    attribute_template = _signatures.attribute_template(
        AttributeTemplate, type_class, attributes, types=types, value_type_of=_value_type, error=TypingError)
    for name, (_, lower) in methods.items():
        key = f"{type_class.__name__}.{name}"
        lowering_registry.lower(key, type_class, types.VarArg(types.Any))(_method_lowering(lower))
    resolvers = _signatures.method_resolvers({name: check for name, (check, _) in methods.items()}, type_class,
                                             bound_function=bound_function, signature=signature, types=types,
                                             error=TypingError)
    typing_registry.register_attr(type(f"{type_class.__name__}Methods", (attribute_template,), resolvers))

    @lowering_registry.lower_getattr_generic(type_class)
    def _attribute(context, builder, ty, val, attr):
        kind, value = kernel_constant(getattr(ty.host, attr))
        if kind == "dtype":
            return context.get_dummy_value()
        if kind == "ints":
            return context.make_tuple(
                builder, types.UniTuple(types.intp, len(value)), [context.get_constant(types.intp, v) for v in value]
            )
        return context.get_constant(types.intp, value)


def _method_lowering(lower):
    def implementation(context, builder, sig, args):
        lower(context, builder, sig.args[0].host, sig.args[1:], args[1:])
        return context.get_dummy_value()

    return implementation


def _refresh_contexts() -> None:
    """Load templates registered after numba's CUDA contexts were built (this module is imported
    while a kernel is being typed, after the typing context last refreshed its registries)."""
    from numba.cuda.descriptor import cuda_target

    cuda_target.typing_context.refresh()
    cuda_target.target_context.refresh()


def _data_pointer(context, builder, array_type, array_value):
    """The data pointer of a numba array, as an ``i8*``."""
    data = cgutils.create_struct_proxy(array_type)(context, builder, array_value).data
    return builder.bitcast(data, ir.IntType(8).as_pointer())


def _scalar_pointer(context, builder, from_type, to_type, value):
    """A pointer (``i8*``) to a stack copy of ``value`` cast to ``to_type`` (by-pointer scalars)."""
    slot = cgutils.alloca_once_value(builder, context.cast(builder, value, from_type, to_type))
    return builder.bitcast(slot, ir.IntType(8).as_pointer())


_linkables: dict[str, LTOIR] = {}
_link_cache.install()  # kernels that link this code keep their linked image on disk


def _link(context, entry, kind=LTOIR) -> None:
    """Link ``entry``'s code (LTO-IR, or ``kind``) into the kernel being compiled."""
    linkable = _linkables.get(entry.symbol)
    if linkable is None:
        # One object per symbol: numba keeps linking files in a set, so reuse deduplicates.
        linkable = _linkables[entry.symbol] = kind(entry.code, name=f"{entry.symbol}.{kind.__name__.lower()}")
        _link_cache.mark_nvmathx_code(linkable)
    library = context.active_code_library
    library.add_linking_file(linkable)
    # Link-time optimization puts the kernel in the same LTO unit as the generated code, so
    # nvJitLink inlines it (numba-cuda-mlir always does). Without it each call goes through the ABI:
    # Random.generate's values pass through local memory (the fill measured 2.71 ms, against 2.04 ms
    # inlined under numba-cuda-mlir). A device function's library is covered at get_cubin
    # (_link_cache).
    library._lto = True


def _call(builder, symbol: str, arguments) -> None:
    """Call the C function ``symbol`` (no result): pointers as ``i8*``, integers as they are."""
    function_type = ir.FunctionType(ir.VoidType(), [argument.type for argument in arguments])
    function = cgutils.get_or_insert_function(builder.module, function_type, symbol)
    builder.call(function, arguments)


def _call_generated(context, builder, entry, arguments) -> None:
    """Call the generated function ``entry.symbol`` with ``arguments`` (LLVM values) and link its code;
    LTO resolves the definition."""
    _link(context, entry)
    _call(builder, entry.symbol, arguments)


# -- FFT ----------------------------------------------------------------------------------------


def _fft_call_form(fft, args) -> str:
    return _signatures.fft_call_form(fft, args, value_type=_value_type(fft.value_dtype), types=types,
                                     error=TypingError)


def _lower_fft_execute(context, builder, fft, arg_types, args):
    pointers = [_data_pointer(context, builder, t, v) for t, v in zip(arg_types, args, strict=True)]
    _call_generated(context, builder, fft.code(_fft_call_form(fft, arg_types)), pointers)


def _check_fft_rows(method):
    def check(fft, args) -> None:
        _signatures.check_row_arguments(fft, method, args, value_type=_value_type(fft.value_dtype),
                                        rows_type=_value_type(fft._row_dtype(method)), types=types,
                                        error=TypingError)

    return check


def _lower_fft_rows(method):
    """``fft.load(source, thread_data, row)`` / ``fft.store(thread_data, destination, row)``: the
    generated copy with the array's data pointer, its row count and length, and the row."""

    def lower(context, builder, fft, arg_types, args):
        rows_at, data_at = (0, 1) if method == "load" else (1, 0)
        rows_type = arg_types[rows_at]
        array = cgutils.create_struct_proxy(rows_type)(context, builder, args[rows_at])
        shape = cgutils.unpack_tuple(builder, array.shape, rows_type.ndim)
        count, length = shape if rows_type.ndim == 2 else (context.get_constant(types.intp, 1), shape[0])
        row = context.cast(builder, args[2], arg_types[2], types.int64)
        arguments = [_data_pointer(context, builder, rows_type, args[rows_at]), count, length, row,
                     _data_pointer(context, builder, arg_types[data_at], args[data_at])]
        _call_generated(context, builder, fft._row_code(method), arguments)

    return lower


# -- Matmul -------------------------------------------------------------------------------------


def _check_gemm_arguments(gemm, args) -> None:
    _signatures.check_gemm_arguments(gemm, args, value_type=_value_type(gemm.value_dtype), types=types,
                                     error=TypingError)


def _lower_gemm_execute(context, builder, gemm, arg_types, args):
    value_type = _value_type(gemm.value_dtype)
    pointers = [
        _scalar_pointer(context, builder, t, value_type, v) if i in (0, 3) else _data_pointer(context, builder, t, v)
        for i, (t, v) in enumerate(zip(arg_types, args, strict=True))
    ]
    _call_generated(context, builder, gemm.code(), pointers)


# -- Random -------------------------------------------------------------------------------------


def _lower_random(method):
    """The by-value entry point of ``method``: arrays by data pointer, integers as 64-bit words."""

    def lower(context, builder, rng, arg_types, args):
        arguments = [
            _data_pointer(context, builder, t, v) if _signatures.is_array(t, types)
            else context.cast(builder, v, t, types.uint64)
            for t, v in zip(arg_types, args, strict=True)
        ]
        _link(context, rng._curanddx_code())
        _link(context, rng._entry_code())
        _call(builder, rng._function(method), arguments)

    return lower


# -- Solver -------------------------------------------------------------------------------------


def _lower_solver_execute(context, builder, solver, arg_types, args):
    """The generated function with each array's data pointer; cuSOLVERDx's library code beside it."""
    pointers = [_data_pointer(context, builder, t, v) for t, v in zip(arg_types, args, strict=True)]
    _link(context, solver._library_code(), Fatbin)
    _call_generated(context, builder, solver._entry(), pointers)


_register(FFTType, FFT._kernel_attributes, {
    "execute": (_fft_call_form, _lower_fft_execute),
    "load": (_check_fft_rows("load"), _lower_fft_rows("load")),
    "store": (_check_fft_rows("store"), _lower_fft_rows("store")),
})
_register(MatmulType, Matmul._kernel_attributes, {"execute": (_check_gemm_arguments, _lower_gemm_execute)})
_register(RandomType, Random._kernel_attributes, {
    name: (_signatures.random_checker(name, value_type_of=_value_type, types=types, error=TypingError),
           _lower_random(name))
    for name in _signatures.RANDOM_METHODS
})
_register(SolverType, Solver._kernel_attributes, {
    "execute": (_signatures.solver_checker(value_type_of=_value_type, types=types, error=TypingError),
                _lower_solver_execute),
})
_refresh_contexts()
