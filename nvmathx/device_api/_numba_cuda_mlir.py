"""numba-cuda-mlir's typing and lowering of ``FFT`` and ``Matmul`` (MLIR).

The descriptor object is a typing-time value (an ``i8`` placeholder once lowered); its traits are
attributes whose implementations return constants; ``execute`` is a method whose implementation
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
from numba_cuda_mlir.extending import lowering_registry, overload_attribute, overload_method, typing_registry
from numba_cuda_mlir.lowering_utilities import to_mlir_type, unverified_convert
from numba_cuda_mlir.models import PrimitiveModel, register_model
from numba_cuda_mlir.numba_cuda import types
from numba_cuda_mlir.numba_cuda.core.errors import TypingError
from numba_cuda_mlir.numba_cuda.cudadrv.linkable_code import LTOIR
from numba_cuda_mlir.numba_cuda.extending import typeof_impl
from numba_cuda_mlir.numba_cuda.np.numpy_support import from_dtype
from numba_cuda_mlir.numba_cuda.types.abstract import Type
from numba_cuda_mlir.numba_cuda.types.misc import CPointer, Omitted

from .._codegen.compilers import kernel_constant
from . import _link_cache, _signatures
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


def _constant_implementation(host, attr):
    """The implementation of ``host.attr`` inside kernels: a function returning the constant."""
    constant = kernel_constant(getattr(host, attr))
    if constant is None:
        raise TypingError(f"{host!r}.{attr} is {getattr(host, attr)!r}, which is not available inside a kernel")
    kind, value = constant
    if kind == "dtype":
        value = _value_type(value)
    return lambda descriptor: value


def _register(type_class, host_class, attributes: tuple[str, ...]) -> None:
    """Register typeof, data model, the constant placeholder and the attributes of ``type_class``."""
    typeof_impl.register(host_class)(lambda value, context: numba_type(value))
    register_model(type_class)(_PlaceholderModel)
    to_mlir_type.register(type_class)(lambda value, context=None: mlir_types.i8())
    unverified_convert.register(host_class)(lambda value, target_type, signed=None: llvm.mlir_undef(mlir_types.i8()))

    for attr in attributes:
        overload_attribute(type_class, attr, inline="always", typing_registry=typing_registry,
                           lowering_registry=lowering_registry)(_attribute_typer(attr))


def _attribute_typer(attr):
    def typer(descriptor):  # the implementation's argument names must match the typer's
        return _constant_implementation(descriptor.host, attr)

    return typer


_declarations: dict[tuple, object] = {}
_link_cache.install_numba_cuda_mlir()  # kernels that link this code keep their linked image on disk


def _declared(entry, argument_dtypes: tuple) -> object:
    """The generated function ``entry.symbol`` as a callable device function, its LTO-IR attached
    (one declaration per symbol and argument types, so a kernel links each code object once)."""
    key = (entry.symbol, argument_dtypes)
    function = _declarations.get(key)
    if function is None:
        signature = types.void(*(CPointer(dtype) for dtype in argument_dtypes))
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
