"""What the FFT and Matmul numba glue share: a type per descriptor object, constant attributes,
pointers to array data, and calls to generated functions whose code links itself.

Imported only when a kernel is typed (through the objects' ``_numba_type_``), so numba stays out
of ``import nvmathx``. Methods are typed with templates and lowered directly, without
``overload_method``, so that kernels compile (to PTX or LTO-IR) on a machine without a GPU.
"""

from __future__ import annotations

from llvmlite import ir
from numba.cuda import cgutils, types
from numba.cuda.core.errors import TypingError
from numba.cuda.cudadecl import registry as typing_registry
from numba.cuda.cudadrv.linkable_code import LTOIR
from numba.cuda.cudaimpl import lower_constant
from numba.cuda.cudaimpl import registry as lowering_registry
from numba.cuda.datamodel.models import OpaqueModel
from numba.cuda.extending import register_model
from numba.cuda.typing.templates import AttributeTemplate, bound_function, signature

from . import _link_cache

__all__ = [
    "DescriptorType",
    "TypingError",
    "numba_type_for",
    "register_descriptor_type",
    "refresh_contexts",
    "constant_attribute_type",
    "data_pointer",
    "scalar_pointer",
    "call_generated",
    "typing_registry",
    "lowering_registry",
]


class DescriptorType(types.Type):
    """The numba type of one host descriptor object (FFT or Matmul); it carries the object."""

    def __init__(self, host, kind: str):
        self.host = host
        super().__init__(name=f"nvmathx.{kind}({host!r})")


_types: dict[tuple[type, int], DescriptorType] = {}


def numba_type_for(type_class, host) -> DescriptorType:
    """The numba type of ``host`` (one per object, while the object lives)."""
    cached = _types.get((type_class, id(host)))
    if cached is None or cached.host is not host:
        cached = _types[(type_class, id(host))] = type_class(host)
    return cached


def constant_attribute_type(value):
    """The numba type under which a host trait is a compile-time constant, or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return types.IntegerLiteral(value)
    if isinstance(value, tuple) and value and all(isinstance(v, int) for v in value):
        return types.UniTuple(types.intp, len(value))
    if isinstance(value, types.Number):
        return types.NumberClass(value)
    return None


def register_descriptor_type(type_class, attributes: tuple[str, ...], check_execute, lower_execute) -> None:
    """Register data model, constant lowering, constant attributes and ``execute`` for ``type_class``.

    ``check_execute(host, arg_types)`` raises TypingError for calls it does not accept;
    ``lower_execute(context, builder, host, arg_types, args)`` emits the call.
    """
    register_model(type_class)(OpaqueModel)
    method_key = f"{type_class.__name__}.execute"

    @lower_constant(type_class)
    def _constant(context, builder, ty, pyval):
        return context.get_constant_null(ty)

    @typing_registry.register_attr
    class _Attributes(AttributeTemplate):
        key = type_class

        def generic_resolve(self, ty, attr):
            if attr not in attributes:
                return None
            value = getattr(ty.host, attr)
            resolved = constant_attribute_type(value)
            if resolved is None:
                raise TypingError(f"{ty.host!r}.{attr} is {value!r}, which is not available inside a kernel")
            return resolved

        @bound_function(method_key)
        def resolve_execute(self, ty, args, kws):
            if kws:
                raise TypingError(f"{ty.host!r}: execute takes positional arguments only")
            check_execute(ty.host, args)
            return signature(types.void, *args)

    @lowering_registry.lower_getattr_generic(type_class)
    def _attribute(context, builder, ty, val, attr):
        value = getattr(ty.host, attr)
        if isinstance(value, types.Number):
            return context.get_dummy_value()
        if isinstance(value, tuple):
            return context.make_tuple(
                builder, types.UniTuple(types.intp, len(value)), [context.get_constant(types.intp, v) for v in value]
            )
        return context.get_constant(types.intp, value)

    @lowering_registry.lower(method_key, type_class, types.VarArg(types.Any))
    def _execute(context, builder, sig, args):
        lower_execute(context, builder, sig.args[0].host, sig.args[1:], args[1:])
        return context.get_dummy_value()


def refresh_contexts() -> None:
    """Load templates registered after numba's CUDA contexts were built.

    The glue is imported while a kernel is being typed (from ``_numba_type_``), after the
    typing context last refreshed its registries.
    """
    from numba.cuda.descriptor import cuda_target

    cuda_target.typing_context.refresh()
    cuda_target.target_context.refresh()


def data_pointer(context, builder, array_type, array_value):
    """The data pointer of a numba array, as an ``i8*``."""
    data = cgutils.create_struct_proxy(array_type)(context, builder, array_value).data
    return builder.bitcast(data, ir.IntType(8).as_pointer())


_linkables: dict[str, LTOIR] = {}
_link_cache.install()  # kernels that link this code keep their linked image on disk


def call_generated(context, builder, entry, arguments) -> None:
    """Call the generated function ``entry.symbol`` with ``arguments`` (LLVM values) and link its code.

    Every argument is a pointer, so the declaration uses ``i8*``; LTO resolves the definition.
    """
    linkable = _linkables.get(entry.symbol)
    if linkable is None:
        # One object per symbol: numba keeps linking files in a set, so reuse deduplicates.
        linkable = _linkables[entry.symbol] = LTOIR(entry.code, name=f"{entry.symbol}.ltoir")
        _link_cache.mark_nvmathx_code(linkable)
    context.active_code_library.add_linking_file(linkable)
    function_type = ir.FunctionType(ir.VoidType(), [ir.IntType(8).as_pointer()] * len(arguments))
    function = cgutils.get_or_insert_function(builder.module, function_type, entry.symbol)
    builder.call(function, arguments)


def scalar_pointer(context, builder, from_type, to_type, value):
    """A pointer (``i8*``) to a stack copy of ``value`` cast to ``to_type`` (by-pointer scalars)."""
    slot = cgutils.alloca_once_value(builder, context.cast(builder, value, from_type, to_type))
    return builder.bitcast(slot, ir.IntType(8).as_pointer())

