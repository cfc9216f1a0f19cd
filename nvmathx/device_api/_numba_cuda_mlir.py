"""numba-cuda-mlir's typing and lowering of ``FFT``, ``Matmul``, ``Random`` and ``Solver`` (MLIR).

The descriptor object is a typing-time value (an ``i8`` placeholder once lowered); its traits are
attributes typed as compile-time constants (an integer literal, a tuple of integers, a number
class) and lowered to MLIR constants where they are read. The FFT's ``execute``, ``load`` and
``store`` are typed by a ``bound_function`` template and lowered to a ``func.call`` of the generated
C-ABI function, with each array's data pointer as ``ffi.from_buffer`` gives it and the LTO-IR
registered with the kernel's link items (so the compiler links it, with LTO); ``Random``'s methods
likewise, with integers as 64-bit values. The GEMM's
``execute`` is an ``overload_method`` calling a ``declare_device`` declaration with
``ffi.from_buffer`` pointers, alpha and beta through one-element local arrays. Imported only when
numba-cuda-mlir types a kernel (see ``_compilers``).
"""

from __future__ import annotations

import functools

import cffi
import numpy as np
from numba_cuda_mlir import cuda
from numba_cuda_mlir._mlir import ir
from numba_cuda_mlir._mlir.dialects import func, llvm
from numba_cuda_mlir._mlir.dialects import memref as memref_dialect
from numba_cuda_mlir._mlir.extras import types as mlir_types
from numba_cuda_mlir.compiler import declare_device
from numba_cuda_mlir.extending import lowering_registry, overload_method, refresh_registries, typing_registry
from numba_cuda_mlir.lowering_utilities import (
    constant,
    convert,
    get_or_insert_function,
    index_of,
    memref_data_pointer,
    to_mlir_type,
    unverified_convert,
)
from numba_cuda_mlir.models import PrimitiveModel, register_model
from numba_cuda_mlir.numba_cuda import types
from numba_cuda_mlir.numba_cuda.core.errors import TypingError
from numba_cuda_mlir.numba_cuda.cudadrv.linkable_code import LTOIR, Fatbin
from numba_cuda_mlir.numba_cuda.np.numpy_support import from_dtype
from numba_cuda_mlir.numba_cuda.types.abstract import Type
from numba_cuda_mlir.numba_cuda.types.misc import CPointer, VarArg
from numba_cuda_mlir.numba_cuda.typing.templates import AttributeTemplate, bound_function, signature

from .._codegen.compilers import kernel_constant
from . import _link_cache, _signatures
from ._fft import FFT
from ._matmul import Matmul
from ._random import Random
from ._solver import Solver

__all__ = ["numba_type", "TypingError"]

_ffi = cffi.FFI()


numba_type = _signatures.DescriptorTypes(Type)
FFTType, MatmulType, RandomType, SolverType = (numba_type.fft, numba_type.matmul, numba_type.random,
                                              numba_type.solver)


@functools.cache
def _value_type(dtype: np.dtype):
    return from_dtype(dtype)


class _PlaceholderModel(PrimitiveModel):
    """A descriptor has no run-time data: one ``i8`` that nothing reads."""

    def __init__(self, dmm, fe_type) -> None:
        super().__init__(dmm, fe_type, mlir_types.i8())


def _register(type_class, host_class, attributes: tuple[str, ...]) -> None:
    """Register data model, the constant placeholder and the attributes of ``type_class``.

    Attributes are typed by a template and lowered to constants directly: one ``overload_attribute``
    per read would compile a small function at every read site (~10 ms each, most of a first
    launch's typing time in a kernel that reads a dozen traits).
    """
    register_model(type_class)(_PlaceholderModel)
    to_mlir_type.register(type_class)(lambda value, context=None: mlir_types.i8())
    unverified_convert.register(host_class)(lambda value, target_type, signed=None: llvm.mlir_undef(mlir_types.i8()))

    typing_registry.register_attr(_signatures.attribute_template(
        AttributeTemplate, type_class, attributes, types=types, value_type_of=_value_type, error=TypingError))
    for attr in attributes:
        lowering_registry.lower_getattr(type_class, attr)(functools.partial(_lower_constant_attribute, attr))


def _lower_constant_attribute(attr, context, builder, target, value):
    host = builder.get_numba_type(value.name).host
    kind, content = kernel_constant(getattr(host, attr))
    if kind == "ints":
        builder.store_var(target, tuple(constant(item, mlir_types.i64()) for item in content))
    else:  # an integer, or a number class, whose value nothing reads (its type is the information)
        builder.store_var(target, constant(content if kind == "int" else 0, builder.get_mlir_type(target)))


_declarations: dict[tuple, object] = {}
_link_cache.install_numba_cuda_mlir()  # kernels that link this code keep their linked image on disk


def _declared(entry, argument_types: tuple) -> object:
    """The generated function ``entry.symbol`` as a callable device function, its LTO-IR attached
    (one declaration per symbol and argument types, so a kernel links each code object once).
    ``argument_types``: the number type each pointer argument points to."""
    key = (entry.symbol, argument_types)
    function = _declarations.get(key)
    if function is None:
        signature = types.void(*(CPointer(t) for t in argument_types))
        function = _declarations[key] = declare_device(entry.symbol, signature, link=_linkable(entry), abi="c")
    return function


_linkables: dict[str, object] = {}


def _linkable(entry, kind=LTOIR):
    """One object per generated symbol (a kernel links each once), LTO-IR marked for the link cache."""
    linkable = _linkables.get(entry.symbol)
    if linkable is None:
        linkable = _linkables[entry.symbol] = kind(entry.code, name=f"{entry.symbol}.{kind.__name__.lower()}")
        if kind is LTOIR:
            _link_cache.mark_nvmathx_bytes(entry.code)
    return linkable


# -- FFT ----------------------------------------------------------------------------------------
# ``execute``, ``load`` and ``store`` are typed by the attribute template (``bound_function``) and
# lowered straight to a call of the generated function: an ``overload_method`` would make
# numba-cuda-mlir compile a callee per call site (~65 ms each on a 2-core CPU, most of nvmathx's
# share of a kernel's first launch).


def _fft_call_form(fft, args) -> str:
    form = _signatures.fft_call_form(fft, args, value_type=_value_type(fft.value_dtype), types=types,
                                     error=TypingError)
    _signatures.require_contiguous(fft, args, types, TypingError)
    return form


def _check_fft_rows(method):
    def check(fft, args) -> None:
        _signatures.check_row_arguments(fft, method, args, value_type=_value_type(fft.value_dtype),
                                        rows_type=_value_type(fft._row_dtype(method)), types=types,
                                        error=TypingError)

    return check


def _pointer(lower, var):
    """The data pointer (generic address space) of the array in ``var``, as ``ffi.from_buffer`` gives it."""
    return memref_data_pointer(lower.load_var(var))


def _call(lower, symbol: str, operands) -> None:
    """Call the C function ``symbol`` (no result) with ``operands``."""
    function_type = ir.FunctionType.get(inputs=[operand.type for operand in operands], results=[])
    callee = get_or_insert_function(symbol, function_type, lower.mlir_gpu_module)
    func.call(result=[], callee=callee.name.value, operands_=operands)


def _call_generated(lower, entry, operands) -> None:
    """Call ``entry.symbol`` (C ABI, no result) with ``operands`` and link its LTO-IR into the kernel."""
    lower.link_external_item(_linkable(entry))
    _call(lower, entry.symbol, operands)


def _lower_fft_execute(lower, fft, arg_types, args) -> None:
    entry = fft.code(_fft_call_form(fft, arg_types))
    _call_generated(lower, entry, [_pointer(lower, var) for var in args])


def _lower_fft_rows(method):
    """The generated copy with the array's data pointer, its row count and length, and the row."""

    def lower_rows(lower, fft, arg_types, args) -> None:
        rows_at, data_at = (0, 1) if method == "load" else (1, 0)
        array = lower.load_var(args[rows_at])
        extents = [convert(memref_dialect.dim(array, index_of(axis)), mlir_types.i64())
                   for axis in range(arg_types[rows_at].ndim)]
        count, length = extents if len(extents) == 2 else (constant(1, mlir_types.i64()), extents[0])
        row = convert(lower.load_var(args[2]), mlir_types.i64(), signed=arg_types[2].signed)
        operands = [memref_data_pointer(array), count, length, row, _pointer(lower, args[data_at])]
        _call_generated(lower, fft._row_code(method), operands)

    return lower_rows


def _register_methods(type_class, methods: dict) -> None:
    """Type each method by a ``bound_function`` template and lower it with ``methods[name][1]``."""
    for name, (_, lower_method) in methods.items():
        key = f"{type_class.__name__}.{name}"
        lowering_registry.lower(key, type_class, VarArg(types.Any))(_method_lowering(lower_method))
    resolvers = _signatures.method_resolvers({name: check for name, (check, _) in methods.items()}, type_class,
                                             bound_function=bound_function, signature=signature, types=types,
                                             error=TypingError)
    typing_registry.register_attr(type(f"{type_class.__name__}Methods", (AttributeTemplate,),
                                       {"key": type_class, **resolvers}))


def _method_lowering(lower_method):
    def builder(lower, target, args, kws):
        receiver, *arguments = args
        host = lower.get_numba_type(receiver.name).host
        lower_method(lower, host, [lower.get_numba_type(var.name) for var in arguments], arguments)

    return builder


# -- Matmul -------------------------------------------------------------------------------------


@overload_method(MatmulType, "execute", strict=False, inline="always", typing_registry=typing_registry)
def _gemm_execute(descriptor, alpha, a, b, beta, c):
    gemm = descriptor.host
    value_type = _value_type(gemm.value_dtype)
    args = (alpha, a, b, beta, c)
    _signatures.check_gemm_arguments(gemm, args, value_type=value_type, types=types, error=TypingError)
    _signatures.require_contiguous(gemm, args, types, TypingError)
    function = _declared(gemm.code(), (value_type,) * 5)

    def implementation(descriptor, alpha, a, b, beta, c):
        alpha_slot = cuda.local.array(1, value_type)
        alpha_slot[0] = alpha
        beta_slot = cuda.local.array(1, value_type)
        beta_slot[0] = beta
        function(_ffi.from_buffer(alpha_slot), _ffi.from_buffer(a), _ffi.from_buffer(b),
                 _ffi.from_buffer(beta_slot), _ffi.from_buffer(c))

    return implementation


# -- Random -------------------------------------------------------------------------------------


def _lower_random(method):
    """The by-value entry point of ``method``: arrays by data pointer, integers as 64-bit words."""

    def lower_random(lower, rng, arg_types, args) -> None:
        operands = [
            _pointer(lower, var) if _signatures.is_array(arg_type, types)
            else convert(lower.load_var(var), mlir_types.i64(), signed=arg_type.signed)
            for arg_type, var in zip(arg_types, args, strict=True)
        ]
        lower.link_external_item(_linkable(rng._curanddx_code()))
        lower.link_external_item(_linkable(rng._entry_code()))
        _call(lower, rng._function(method), operands)

    return lower_random


# -- Solver -------------------------------------------------------------------------------------


def _lower_solver_execute(lower, solver, arg_types, args) -> None:
    """The generated function with each array's data pointer; cuSOLVERDx's library code beside it."""
    lower.link_external_item(_linkable(solver._library_code(), Fatbin))
    _call_generated(lower, solver._entry(), [_pointer(lower, var) for var in args])


_register(FFTType, FFT, FFT._kernel_attributes)
_register_methods(FFTType, {
    "execute": (_fft_call_form, _lower_fft_execute),
    "load": (_check_fft_rows("load"), _lower_fft_rows("load")),
    "store": (_check_fft_rows("store"), _lower_fft_rows("store")),
})
_register(MatmulType, Matmul, Matmul._kernel_attributes)
_register(RandomType, Random, Random._kernel_attributes)
_register_methods(RandomType, {
    name: (_signatures.random_checker(name, value_type_of=_value_type, types=types, error=TypingError),
           _lower_random(name))
    for name in _signatures.RANDOM_METHODS
})
_register(SolverType, Solver, Solver._kernel_attributes)
_register_methods(SolverType, {
    "execute": (_signatures.solver_checker(value_type_of=_value_type, types=types, error=TypingError),
                _lower_solver_execute),
})
# this module is imported while a kernel is being typed: the contexts load the templates above now
refresh_registries(typing=True, target=True, include_uninitialized_cuda=False)
