"""A Python callback lowered to one LTO-IR module with cuFFT's exact C signature (numba-cuda + NVVM).

numba compiles the user's function as a device function of its own ABI; the entry point ``symbol``
is then written in NVVM IR with the signature cuFFT's kernels call, and both are compiled together
into LTO-IR. cuFFT's kernels (like any CUDA C++) pass and return ``float2``/``double2`` as the
first-class named structs ``%struct.float2``/``%struct.double2``; numba's complex values are
literal ``{float, float}`` structs, and its C ABI would split them into two parameters. Linking a
definition whose types differ from the caller's declaration leaves an indirect call with the wrong
ABI, so the entry point converts between the two explicitly. Checked by linking against CUDA C++
callers with nvJitLink (tests/fft/test_callbacks_link.py): every call is inlined.

Imported only when a callback is compiled (it imports numba).
"""

from __future__ import annotations

import numpy as np

from .callback_errors import CallbackCompileError, plain_message

__all__ = ["lower"]

_C_STRUCTS = {"complex64": "struct.float2", "complex128": "struct.double2"}


def _numba():
    try:
        from numba import from_dtype, types
        from numba.core.errors import NumbaError
        from numba.cuda import compiler
        from numba.cuda.core.callconv import CUDACallConv
    except ImportError as error:
        raise CallbackCompileError("fn", f"compiling a callback needs numba-cuda (pip install numba-cuda): {error}") \
            from None
    try:
        # compiling imports this lazily; numba-cuda 0.30 fails there on numpy 2.5 (np.row_stack)
        import numba.cuda.cudaimpl  # noqa: F401
    except Exception as error:  # noqa: BLE001 (an installed numba-cuda that cannot run here, whatever it raises)
        raise CallbackCompileError(
            "compiler", f"numba-cuda is installed but cannot compile here ({type(error).__name__}: {error}); "
                        f"use compiler='numba-cuda-mlir' (pip install numba-cuda-mlir)") from None
    return from_dtype, types, NumbaError, compiler, CUDACallConv


def lower(role: str, fn, element: str, user_info: str | None, target: str, symbol: str) -> bytes:
    """LTO-IR defining ``symbol``: cuFFT's load (``role="prolog"``) or store callback of ``element``
    values, calling ``fn``. ``target`` is "sm_XY"."""
    from_dtype, types, NumbaError, compiler, CUDACallConv = _numba()
    cc = (int(target[3:-1]), int(target[-1]))
    value = from_dtype(np.dtype(element))
    data = types.CPointer(value)
    info = types.CPointer(from_dtype(np.dtype(user_info))) if user_info else types.voidptr
    if role == "prolog":
        argtypes: tuple = (data, types.int64, info, types.voidptr)
        restype = value
    else:
        argtypes = (data, types.int64, value, info, types.voidptr)
        restype = types.none
    function = getattr(fn, "py_func", fn)
    try:
        cres = compiler.compile_cuda(function, restype, argtypes, nvvm_options={"opt": 3}, cc=cc, forceinline=True)
    except NumbaError as error:
        names = "data, offset, user_info, smem" if role == "prolog" else "data, offset, value, user_info, smem"
        raise CallbackCompileError(
            "fn", f"{function.__qualname__} does not compile as a {role} {restype}({names}) with types "
                  f"{', '.join(str(t) for t in argtypes)}: {plain_message(str(error))}") from None
    if role == "prolog" and cres.signature.return_type != value:
        raise CallbackCompileError("fn", f"a prolog returns the {element} value to transform")
    try:
        return _link_entry(cres, role, element, value, argtypes, symbol, cc, CUDACallConv)
    except Exception as error:  # noqa: BLE001 (NVVM rejected the module; numba raises several error types)
        raise CallbackCompileError("fn", f"NVVM could not compile {function.__qualname__} as {symbol}: "
                                         f"{type(error).__name__}: {error}") from None


def _link_entry(cres, role, element, value, argtypes, symbol, cc, call_conv_class) -> bytes:
    from llvmlite import ir

    context = cres.target_context
    library = context.codegen().create_library(symbol)
    module = library.create_ir_module(symbol)
    byte_pointer = ir.IntType(8).as_pointer()
    numba_value = context.get_value_type(value)
    c_value = _c_value_type(module, numba_value, element)
    if role == "prolog":
        entry_type = ir.FunctionType(c_value, [byte_pointer, ir.IntType(64), byte_pointer, byte_pointer])
    else:
        entry_type = ir.FunctionType(ir.VoidType(), [byte_pointer, ir.IntType(64), c_value, byte_pointer, byte_pointer])
    entry = ir.Function(module, entry_type, symbol)
    entry.attributes.add("alwaysinline")
    builder = ir.IRBuilder(entry.append_basic_block())
    call_conv = call_conv_class(context)
    callee = ir.Function(module, call_conv.get_function_type(cres.signature.return_type, argtypes),
                         cres.fndesc.mangled_name)

    def cast(pointer, numba_type):
        wanted = context.get_value_type(numba_type)
        return pointer if pointer.type == wanted else builder.bitcast(pointer, wanted)

    def convert(item, to_type):
        if item.type == to_type:
            return item
        result = ir.Constant(to_type, ir.Undefined)
        for index in range(len(to_type.elements)):
            result = builder.insert_value(result, builder.extract_value(item, index), index)
        return result

    parameters = list(entry.args)
    # cuFFT's offset is unsigned: its sign bit cleared tells the optimiser it is not negative, so the
    # user's `offset % n` and `offset // n` (Python's floor semantics on int64) need no sign fix-up
    offset = builder.and_(parameters[1], ir.Constant(ir.IntType(64), (1 << 63) - 1))
    if role == "prolog":
        arguments = [cast(parameters[0], argtypes[0]), offset, cast(parameters[2], argtypes[2]),
                     cast(parameters[3], argtypes[3])]
    else:
        arguments = [cast(parameters[0], argtypes[0]), offset, convert(parameters[2], numba_value),
                     cast(parameters[3], argtypes[3]), cast(parameters[4], argtypes[4])]
    _, result = call_conv.call_function(builder, callee, cres.signature.return_type, argtypes, arguments)
    if role == "prolog":
        builder.ret(convert(result, c_value))
    else:
        builder.ret_void()
    library.add_ir_module(module)
    library.add_linking_library(cres.library)
    library.finalize()
    return bytes(library.get_ltoir(cc=cc))


def _c_value_type(module, numba_value, element: str):
    """The LLVM type CUDA C++ gives the element: ``%struct.float2``/``%struct.double2`` for complex
    values (named, as nvcc and NVRTC name them), the scalar itself for real ones."""
    name = _C_STRUCTS.get(element)
    if name is None:
        return numba_value
    struct = module.context.get_identified_type(name)
    if struct.is_opaque:
        struct.set_body(*numba_value.elements)
    return struct
