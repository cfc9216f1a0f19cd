"""numba-cuda-mlir's typing and lowering of ``FFT`` and ``Matmul`` (MLIR).

The descriptor object is a typing-time value (an ``i8`` placeholder once lowered); its traits are
attributes typed as compile-time constants (an integer literal, a tuple of integers, a number
class) and lowered to MLIR constants where they are read; ``execute`` is a method whose implementation
calls the generated function, declared with ``declare_device`` and the C ABI, its LTO-IR attached
to the declaration, so that the compiler links it (and turns on LTO) for every kernel that calls it.
Array data reaches that function as ``ffi.from_buffer`` pointers; scalars (the GEMM's alpha and
beta) through one-element local arrays. Imported only when numba-cuda-mlir types a kernel (see
``_compilers``).
"""

from __future__ import annotations

import functools

import cffi
import numpy as np
from numba_cuda_mlir import cuda
from numba_cuda_mlir._mlir.dialects import llvm
from numba_cuda_mlir._mlir.extras import types as mlir_types
from numba_cuda_mlir.compiler import declare_device
from numba_cuda_mlir.extending import lowering_registry, overload_method, refresh_registries, typing_registry
from numba_cuda_mlir.lowering_utilities import constant, to_mlir_type, unverified_convert
from numba_cuda_mlir.models import PrimitiveModel, register_model
from numba_cuda_mlir.numba_cuda import types
from numba_cuda_mlir.numba_cuda.core.errors import TypingError
from numba_cuda_mlir.numba_cuda.cudadrv.linkable_code import LTOIR
from numba_cuda_mlir.numba_cuda.extending import typeof_impl
from numba_cuda_mlir.numba_cuda.np.numpy_support import from_dtype
from numba_cuda_mlir.numba_cuda.types.abstract import Type
from numba_cuda_mlir.numba_cuda.types.misc import CPointer, Omitted
from numba_cuda_mlir.numba_cuda.typing.templates import AttributeTemplate

from .._codegen.compilers import kernel_constant
from . import _link_cache, _rows, _signatures
from ._fft import FFT
from ._matmul import Matmul

__all__ = ["numba_type", "TypingError"]

_ffi = cffi.FFI()


numba_type = _signatures.DescriptorTypes(Type)
FFTType, MatmulType = numba_type.fft, numba_type.matmul


@functools.cache
def _value_type(dtype: np.dtype):
    return from_dtype(dtype)


class _PlaceholderModel(PrimitiveModel):
    """A descriptor has no run-time data: one ``i8`` that nothing reads."""

    def __init__(self, dmm, fe_type) -> None:
        super().__init__(dmm, fe_type, mlir_types.i8())


def _register(type_class, host_class, attributes: tuple[str, ...]) -> None:
    """Register typeof, data model, the constant placeholder and the attributes of ``type_class``.

    Attributes are typed by a template and lowered to constants directly: one ``overload_attribute``
    per read would compile a small function at every read site (~10 ms each, most of a first
    launch's typing time in a kernel that reads a dozen traits).
    """
    typeof_impl.register(host_class)(lambda value, context: numba_type(value))
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
    ``argument_types``: a number type for each pointer argument (a pointer to it), or ``types.int64``
    for an integer passed by value."""
    key = (entry.symbol, argument_types)
    function = _declarations.get(key)
    if function is None:
        signature = types.void(*(t if t == types.int64 else CPointer(t) for t in argument_types))
        linkable = LTOIR(entry.code, name=f"{entry.symbol}.ltoir")
        _link_cache.mark_nvmathx_bytes(entry.code)
        function = _declarations[key] = declare_device(entry.symbol, signature, link=linkable, abi="c")
    return function


def _is_given(argument) -> bool:
    return argument is not None and not isinstance(argument, Omitted)


# -- FFT ----------------------------------------------------------------------------------------


@overload_method(FFTType, "execute", strict=False, inline="always", typing_registry=typing_registry)
def _fft_execute(descriptor, first, second=None):
    fft = descriptor.host
    args = (first, second) if _is_given(second) else (first,)
    form = _signatures.fft_call_form(fft, args, value_type=_value_type(fft.value_dtype), types=types,
                                     error=TypingError)
    _signatures.require_contiguous(fft, args, types, TypingError)
    function = _declared(fft.code(form), tuple(argument.dtype for argument in args))
    if len(args) == 1:

        def one_array(descriptor, first, second=None):
            function(_ffi.from_buffer(first))

        return one_array

    def two_arrays(descriptor, first, second=None):
        function(_ffi.from_buffer(first), _ffi.from_buffer(second))

    return two_arrays


def _fft_rows(method):
    """``fft.load(source, thread_data, row)`` / ``fft.store(thread_data, destination, row)``: the
    generated copy with the array's data pointer, its row count and length, and the row."""

    def typer(descriptor, first, second, row):
        fft = descriptor.host
        value_type = _value_type(fft.value_dtype)
        _signatures.check_row_arguments(fft, method, (first, second, row), value_type=value_type, types=types,
                                        error=TypingError)
        function = _declared(_rows.row_code(fft, method), (value_type, types.int64, types.int64, types.int64,
                                                           value_type))
        rows_type = first if method == "load" else second
        if method == "load" and rows_type.ndim == 2:

            def load_row(descriptor, first, second, row):
                function(_ffi.from_buffer(first), first.shape[0], first.shape[1], np.int64(row),
                         _ffi.from_buffer(second))

            return load_row
        if method == "load":

            def load_vector(descriptor, first, second, row):
                function(_ffi.from_buffer(first), 1, first.shape[0], np.int64(row), _ffi.from_buffer(second))

            return load_vector
        if rows_type.ndim == 2:

            def store_row(descriptor, first, second, row):
                function(_ffi.from_buffer(second), second.shape[0], second.shape[1], np.int64(row),
                         _ffi.from_buffer(first))

            return store_row

        def store_vector(descriptor, first, second, row):
            function(_ffi.from_buffer(second), 1, second.shape[0], np.int64(row), _ffi.from_buffer(first))

        return store_vector

    return typer


for _method in ("load", "store"):
    overload_method(FFTType, _method, strict=False, inline="always", typing_registry=typing_registry)(
        _fft_rows(_method))


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


_register(FFTType, FFT, FFT._kernel_attributes)
_register(MatmulType, Matmul, Matmul._kernel_attributes)
# this module is imported while a kernel is being typed: the contexts load the templates above now
refresh_registries(typing=True, target=True, include_uninitialized_cuda=False)
