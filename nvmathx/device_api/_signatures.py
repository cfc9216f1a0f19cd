"""What both compilers' registrations decide alike: a type per descriptor object, and which
``execute(...)`` calls a kernel may make.

Both compilers' type systems descend from numba's (``Type``; ``Array`` with ``dtype`` and
``layout``; ``Number``), so each registration module passes its own base class or ``types``
module, the compiler's type of the descriptor's value type, and its ``TypingError``.
"""

from __future__ import annotations

import numpy as np

from .._codegen import random as random_codegen
from .._codegen.compilers import kernel_constant
from ._fft import FFT
from ._matmul import Matmul
from ._random import Random
from ._solver import Solver


class DescriptorTypes:
    """One compiler's type per descriptor object (FFT, Matmul, Random, Solver), while it lives; the type
    carries the object (``.host``), whose traits and generated code the lowering reads."""

    def __init__(self, base: type) -> None:
        def type_class(kind: str) -> type:
            def __init__(self, host):
                self.host = host
                base.__init__(self, name=f"nvmathx.{kind}({host!r})")

            return type(f"{kind}Type", (base,), {"__init__": __init__})

        self.fft = type_class("FFT")
        self.matmul = type_class("Matmul")
        self.random = type_class("Random")
        self.solver = type_class("Solver")
        self._classes = {FFT: self.fft, Matmul: self.matmul, Random: self.random, Solver: self.solver}
        self._types: dict[int, object] = {}

    def __call__(self, host):
        cached = self._types.get(id(host))
        if cached is None or cached.host is not host:
            cached = self._types[id(host)] = self._classes[type(host)](host)
        return cached


def constant_type(value, *, types, value_type_of):
    """The compiler's type under which a host trait is a compile-time constant inside kernels (an
    integer literal, a tuple of integers, a number class), or None where it is not offered there.
    ``value_type_of(numpy dtype)`` is the compiler's number type."""
    constant = kernel_constant(value)
    if constant is None:
        return None
    kind, content = constant
    if kind == "int":
        return types.IntegerLiteral(content)
    if kind == "ints":
        return types.UniTuple(types.intp, len(content))
    return types.NumberClass(value_type_of(content))


def attribute_template(base: type, type_class: type, attributes: tuple[str, ...], *, types, value_type_of,
                       error: type[Exception]) -> type:
    """An attribute-typing template (a subclass of the compiler's ``AttributeTemplate`` ``base``)
    typing ``attributes`` of ``type_class`` as constants; a trait with no kernel form is ``error``."""

    def generic_resolve(self, ty, attr):
        if attr not in attributes:
            return None
        value = getattr(ty.host, attr)
        resolved = constant_type(value, types=types, value_type_of=value_type_of)
        if resolved is None:
            raise error(f"{ty.host!r}.{attr} is {value!r}, which is not available inside a kernel")
        return resolved

    return type(f"{type_class.__name__}Attributes", (base,), {"key": type_class, "generic_resolve": generic_resolve})


def method_resolvers(methods: dict, type_class: type, *, bound_function, signature, types,
                     error: type[Exception]) -> dict:
    """``resolve_<name>`` typers (the compiler's ``bound_function``) for the descriptor methods
    ``methods`` (name -> ``check(host, arg_types)``, raising ``error`` for calls it refuses): each
    takes positional arguments and returns nothing. Keyed ``"<type class name>.<name>"``."""

    def typer(name, check):
        def resolve(self, ty, args, kws):
            if kws:
                raise error(f"{ty.host!r}: {name} takes positional arguments only")
            check(ty.host, args)
            return signature(types.void, *args)

        return bound_function(f"{type_class.__name__}.{name}")(resolve)

    return {f"resolve_{name}": typer(name, check) for name, check in methods.items()}


def is_array(argument, types) -> bool:
    """Whether ``argument`` is an array type of the compiler whose ``types`` module is given."""
    return isinstance(argument, types.Array)


def _is_array_of(argument, dtype, types) -> bool:
    return isinstance(argument, types.Array) and argument.dtype == dtype


def fft_call_form(fft, args, *, value_type, types, error: type[Exception]) -> str:
    """Which generated function ``fft.execute(*args)`` calls, or ``error`` saying why none.

    ``"registers"``: (thread_data, shared) for Block, (thread_data,) for Thread; ``"shared"``:
    (shared,) for Block c2c.
    """
    data_first = len(args) >= 1 and _is_array_of(args[0], value_type, types)
    if fft.execution == "Thread" and len(args) == 1 and data_first:
        return "registers"
    if fft.execution == "Block" and len(args) == 2 and data_first and isinstance(args[1], types.Array):
        return "registers"
    if fft.execution == "Block" and len(args) == 1 and data_first:
        if fft.fft_type != "c2c":
            raise error(f"{fft!r}: execute(shared) supports c2c transforms only; use execute(thread_data, shared)")
        return "shared"
    usage = "execute(thread_data)" if fft.execution == "Thread" else "execute(thread_data, shared) or execute(shared)"
    got = ", ".join(str(a) for a in args)
    raise error(f"{fft!r}: expected {usage} with arrays of {value_type} (got {got})")


def check_row_arguments(fft, method: str, args, *, value_type, rows_type, types, error: type[Exception]) -> None:
    """Accept ``fft.load(source, thread_data, row)`` / ``fft.store(thread_data, destination, row)``:
    a Block descriptor, a C-contiguous 1-D or 2-D array of ``rows_type`` (the side of the transform
    the call touches: reals for r2c's load and c2r's store), a local array of the value type and an
    integer row."""
    usage = ("load(source, thread_data, row)" if method == "load" else "store(thread_data, destination, row)")
    if fft.execution != "Block":
        raise error(f"{fft!r}: {method} supports Block transforms only")
    if len(args) == 3:
        rows, thread_data = (args[0], args[1]) if method == "load" else (args[1], args[0])
        rows_ok = _is_array_of(rows, rows_type, types) and rows.ndim in (1, 2) and rows.layout == "C"
        data_ok = _is_array_of(thread_data, value_type, types) and thread_data.ndim == 1
        if rows_ok and data_ok and isinstance(args[2], types.Integer):
            return
    got = ", ".join(str(a) for a in args)
    side = "input" if method == "load" else "output"
    raise error(
        f"{fft!r}: expected {usage} with a C-contiguous 1-D or 2-D array of {rows_type} (rows of the "
        f"transform's {side}), thread_data a 1-D array of {value_type} and an integer row (got {got})"
    )


def check_gemm_arguments(gemm, args, *, value_type, types, error: type[Exception]) -> None:
    """Accept execute(alpha, a, b, beta, c): numbers, then arrays of the value type."""
    if len(args) == 5:
        alpha, a, b, beta, c = args
        scalars_ok = all(isinstance(s, types.Number) for s in (alpha, beta))
        arrays_ok = all(_is_array_of(x, value_type, types) for x in (a, b, c))
        if scalars_ok and arrays_ok:
            return
    got = ", ".join(str(a) for a in args)
    raise error(
        f"{gemm!r}: expected execute(alpha, a, b, beta, c) with numbers alpha, beta and shared-memory "
        f"arrays of {value_type} (got {got})"
    )


# Random's kernel methods: name -> the kind of each argument
RANDOM_METHODS = {
    "init": ("integer", "integer", "integer", "state"),
    "generate": ("state", "values"),
    "skip_offset": ("state", "integer"),
    "skip_subsequence": ("state", "integer"),
    "skip_sequence": ("state", "integer"),
}
_RANDOM_USAGE = {
    "init": "init(seed, subsequence, offset, state)",
    "generate": "generate(state, out)",
    "skip_offset": "skip_offset(state, n)",
    "skip_subsequence": "skip_subsequence(state, n)",
    "skip_sequence": "skip_sequence(state, n)",
}


# Sobol's init: a dimension, the table of direction vectors (scrambled: and of scramble constants)
_SOBOL_INIT = {False: (("integer", "words", "integer", "state"), "init(dimension, direction_vectors, offset, state)"),
               True: (("integer", "words", "words", "integer", "state"),
                      "init(dimension, direction_vectors, scramble_constants, offset, state)")}


def random_arguments(rng, method: str) -> tuple[tuple[str, ...], str]:
    """The kind of each argument of ``rng.<method>(...)`` and its usage line."""
    if method == "init" and rng._spec.quasi_random:
        return _SOBOL_INIT[rng._spec.scrambled]
    return RANDOM_METHODS[method], _RANDOM_USAGE[method]


def check_random_arguments(rng, method: str, args, *, value_type, state_type, word_type, types,
                           error: type[Exception]) -> None:
    """Accept ``rng.<method>(...)``: integers where the method takes them, ``state`` a 1-D
    C-contiguous array of ``state_type`` words (a row of a states array, or a local array), ``out``
    a 1-D array of ``value_type``, Sobol's tables C-contiguous arrays of ``word_type``; refuse a
    skip-ahead the generator does not have."""
    if not rng._has(method):
        raise error(f"{rng!r} has no {method} (cuRANDDx offers it for "
                    f"{'mrg32k3a' if method == 'skip_sequence' else 'pseudo-random generators'} only)")
    kinds, usage = random_arguments(rng, method)

    def accepted(kind, argument) -> bool:
        if kind == "integer":
            return isinstance(argument, types.Integer)
        if kind == "words":
            return _is_array_of(argument, word_type, types) and argument.layout == "C"
        array_of = state_type if kind == "state" else value_type
        return _is_array_of(argument, array_of, types) and argument.ndim == 1 and argument.layout == "C"

    if len(args) == len(kinds) and all(accepted(kind, argument) for kind, argument in zip(kinds, args)):
        return
    got = ", ".join(str(a) for a in args)
    tables = f", direction vectors and scramble constants C-contiguous arrays of {word_type}" \
        if "words" in kinds else ""
    raise error(f"{rng!r}: expected {usage} with integers, state a C-contiguous 1-D array of "
                f"{state_type} (a row of a states array, or a local array){tables} and out a 1-D array of "
                f"{value_type} (got {got})")


def random_checker(method: str, *, value_type_of, types, error: type[Exception]):
    """``check(rng, args)`` of ``rng.<method>(...)`` for a compiler (its number types by
    ``value_type_of(numpy dtype)``)."""

    def check(rng, args) -> None:
        word = np.uint64 if random_codegen.direction_bits(rng.generator) == 64 else np.uint32
        check_random_arguments(rng, method, args, value_type=value_type_of(np.dtype(rng.value_type)),
                               state_type=value_type_of(np.dtype(rng.state_dtype)),
                               word_type=value_type_of(np.dtype(word)), types=types, error=error)

    return check


def solver_checker(*, value_type_of, types, error: type[Exception]):
    """``check(solver, args)`` of ``solver.execute(...)``: 1-D C-contiguous arrays in the function's
    order, of the value type (``a``, ``b``, ``c``, ``tau``) or int32 (``ipiv``, ``info``)."""

    def check(solver, args) -> None:
        value_type = value_type_of(np.dtype(solver.value_type))
        expected = [value_type if name in ("a", "b", "c", "tau") else types.int32 for name in solver.arguments]
        if len(args) == len(expected) and all(
            _is_array_of(argument, dtype, types) and argument.ndim == 1 and argument.layout == "C"
            for argument, dtype in zip(args, expected)
        ):
            return
        usage = f"execute({', '.join(solver.arguments)})"
        got = ", ".join(str(a) for a in args)
        raise error(f"{solver!r}: expected {usage} with 1-D C-contiguous arrays of "
                    f"{', '.join(map(str, expected))} (got {got})")

    return check


def require_contiguous(host, args, types, error: type[Exception]) -> None:
    """numba-cuda-mlir passes array data by ``ffi.from_buffer``, which needs C-contiguous arrays."""
    for position, argument in enumerate(args):
        if isinstance(argument, types.Array) and argument.layout != "C":
            raise error(
                f"{host!r}: execute's argument {position} must be a C-contiguous array under numba-cuda-mlir "
                f"(got {argument}); local and shared arrays are, slices with a step are not"
            )
