"""cuFFT load and store callbacks written in Python: compiled to LTO-IR by numba-cuda-mlir or
numba-cuda, cached on disk.

cuFFT calls a load callback (a *prolog*) for every element it reads and a store callback (an
*epilog*) for every element it writes, and links them into its kernels at plan time (JIT LTO), so a
window, a filter or a scale costs no pass of its own over memory. cuFFT declares them with plain C
signatures (``float2 load(void* data, unsigned long long offset, void* info, void* smem)``;
``void store(void* data, unsigned long long offset, float2 value, void* info, void* smem)``), whose
complex values are passed by value as named structs. Each compiler module builds an entry point
with exactly that signature around the user's function: in NVVM IR for numba-cuda
(:mod:`.callback_codegen`), in Python with named structs for numba-cuda-mlir
(:mod:`.callback_codegen_mlir`); either way one LTO-IR module.

The user's function is compiled as a numba device function and called as

- prolog: ``value = fn(data, offset, user_info, smem)``, returning the element to transform;
- epilog: ``fn(data, offset, value, user_info, smem)``, storing (``data[offset] = ...``) the
  element cuFFT computed.

``data`` is a typed pointer to the operand (prolog) or result (epilog) elements, indexed by
``offset`` (an int64 count of elements from the start of that array, following its strides);
``user_info`` is a typed pointer to the user-data array given at plan time (or an untyped pointer
when no ``user_info_dtype`` is given); ``smem`` is cuFFT's shared-memory pointer, of no use here
(nvmathx asks cuFFT for no callback shared memory).

Compiled callbacks live in the library's on-disk code cache (:func:`nvmathx.cache_info`; emptied by
:func:`nvmathx.clear_cache`), keyed by the function's code (bytecode, constants, names, and the
values of the numbers, strings, arrays and functions it refers to), the types, the role, the target
architecture and the compiler's identity, so a later process loads the LTO-IR without importing
numba.
"""

from __future__ import annotations

import functools
import hashlib
import types
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

from .._bindings import cuda_driver, cufft
from .._bindings._loader import load_library
from .._codegen import compilers
from .._codegen.target import resolve_target
from .._core.errors import LibraryNotFoundError, OperandError, OptionsError, UnsupportedOperandError
from .._core.logs import timed_step
from .._core.memo import BuildOnce
from .._core.tensor import wrap_operand
from .callback_errors import CallbackCompileError, CallbacksUnavailableError

__all__ = [
    "ELEMENT_DTYPES",
    "Attachment",
    "CallbackCompileError",
    "CallbacksUnavailableError",
    "CompiledCallback",
    "attachment",
    "attachments_key",
    "callback_cache_key",
    "check_fits",
    "compile_epilog",
    "compile_prolog",
    "link_error",
    "lto_versions",
    "require_lto",
    "resolve_callback_target",
]

FORMAT = 2  # bump when the generated code changes shape (it is part of every cache key)

# element dtype -> (callback type of a load, of a store): cufftXtCallbackType values
ELEMENT_DTYPES = {
    "complex64": (0, 4), "complex128": (1, 5), "float32": (2, 6), "float64": (3, 7),
}
ROLES = ("prolog", "epilog")


def cufft_symbol(role: str, element: str) -> str:
    """The name a ``role`` callback of ``element`` values defines: the one cuFFT looks up."""
    return cufft.callback_symbol("load" if role == "prolog" else "store", element)


@dataclass(frozen=True)
class CompiledCallback:
    """A load or store callback compiled to LTO-IR for cuFFT: what :func:`compile_prolog` and
    :func:`compile_epilog` return. Picklable (plain data); pass it to ``FFT.plan(prolog=...)`` or a
    function's ``prolog=``/``epilog=``, alone or as ``(callback, user_data_array)``.

    Attributes
    ----------
    role : {"prolog", "epilog"}
        A load (prolog) or store (epilog) callback.
    element_dtype : str
        The numpy name of the element type it loads or stores.
    user_info_dtype : str or None
        The element type of the user data it reads, None for an untyped pointer.
    target : str
        The GPU architecture of the LTO-IR ("sm_90"); it links into plans on that architecture
        and newer ones.
    symbol : str
        The entry point's name.
    ltoir : bytes
        The LTO-IR.
    key : str
        A digest of everything the code depends on: plans are cached by it.
    """

    role: str
    element_dtype: str
    user_info_dtype: str | None
    target: str
    symbol: str
    ltoir: bytes = field(repr=False)
    key: str

    @property
    def callback_type(self) -> int:
        """The cufftXtCallbackType value cuFFT is given with it."""
        return ELEMENT_DTYPES[self.element_dtype][self.role == "epilog"]

    @property
    def compute_capability(self) -> tuple[int, int]:
        digits = self.target.removeprefix("sm_")
        return int(digits[:-1]), int(digits[-1])


# --------------------------------------------------------------------------------------------------
# Public entry points.


def compile_prolog(fn: Callable[..., Any], *, element_dtype: DTypeLike, user_info_dtype: DTypeLike | None = None,
                   target: str | int | tuple[int, int] | None = None,
                   compiler: str | None = None) -> CompiledCallback:
    """Compile ``fn`` into a cuFFT load callback: ``fn(data, offset, user_info, smem)`` returns the
    value cuFFT transforms in place of ``data[offset]``.

    Parameters
    ----------
    fn : callable
        A Python function (or a Numba ``cuda.jit(device=True)`` function) of four arguments, in the
        subset of Python the Numba compilers compile. ``data`` is a pointer to the operand's elements,
        ``offset`` (int64) counts elements from the operand's start following its strides,
        ``user_info`` points to the user data given at plan time, ``smem`` is unused.
    element_dtype : {"complex64", "complex128", "float32", "float64"}
        What cuFFT loads: the operand's dtype (real for R2C, complex for C2C and C2R).
    user_info_dtype : numpy dtype, optional
        The element type of the user-data array (``user_info[i]`` reads it); None leaves
        ``user_info`` an untyped pointer.
    target : str or tuple, optional
        The GPU architecture ("sm_90", (9, 0), 90); default: the current device's. Give it to
        compile on a machine without a GPU.
    compiler : {"numba-cuda-mlir", "numba-cuda"}, optional
        Which Numba compiler compiles ``fn``; the function is the same for both. Default:
        numba-cuda-mlir when it is installed and a CUDA driver is present (it asks the driver for
        the architecture), else numba-cuda.

    Returns
    -------
    CompiledCallback

    Raises
    ------
    UnsupportedOperandError
        For an element type cuFFT has no callbacks for (half precision, integers).
    CallbackCompileError
        When ``fn`` does not compile for the signature (the compiler's message included), or the
        compiler asked for is not installed or cannot compile here (``compiler``).
    OptionsError
        For an unknown ``target`` or ``compiler``, or no ``target`` and no CUDA device.

    Notes
    -----
    The LTO-IR is kept in the library's on-disk code cache, so a later process loads it without
    compiling; :func:`nvmathx.clear_cache` empties that cache (:func:`nvmathx.cache_info` says where
    it is and what it holds).

    Examples
    --------
    A window applied as cuFFT reads each real sample of rows of ``n`` points (the operand
    C-contiguous, so ``offset % n`` is the position in the row):

    >>> import nvmathx.fft
    >>> n = 4096
    >>> def windowed(data, offset, window, smem):
    ...     return data[offset] * window[offset % n]
    >>> prolog = nvmathx.fft.compile_prolog(windowed, element_dtype="float32",
    ...                                     user_info_dtype="float32", target="sm_90")
    >>> prolog.role, prolog.element_dtype
    ('prolog', 'float32')
    """
    return _compile("prolog", fn, element_dtype, user_info_dtype, target, compiler)


def compile_epilog(fn: Callable[..., Any], *, element_dtype: DTypeLike, user_info_dtype: DTypeLike | None = None,
                   target: str | int | tuple[int, int] | None = None,
                   compiler: str | None = None) -> CompiledCallback:
    """Compile ``fn`` into a cuFFT store callback: ``fn(data, offset, value, user_info, smem)`` is
    called with each element cuFFT computed and stores what it wants (``data[offset] = ...``).

    Parameters are those of :func:`compile_prolog`; ``element_dtype`` is what cuFFT stores: the
    result's dtype (real for C2R, complex for C2C and R2C), which is also ``value``'s type.

    Examples
    --------
    A filter multiplied into the spectrum as cuFFT writes it (``h`` has the result's layout):

    >>> import nvmathx.fft
    >>> def filtered(data, offset, value, h, smem):
    ...     data[offset] = value * h[offset]
    >>> epilog = nvmathx.fft.compile_epilog(filtered, element_dtype="complex64",
    ...                                     user_info_dtype="complex64", target="sm_90")
    >>> epilog.callback_type  # CUFFT_CB_ST_COMPLEX
    4
    """
    return _compile("epilog", fn, element_dtype, user_info_dtype, target, compiler)


# --------------------------------------------------------------------------------------------------
# Arguments.


def _element_name(dtype, argument: str) -> str:
    try:
        name = np.dtype(dtype).name
    except TypeError:
        raise UnsupportedOperandError(argument, f"not a dtype: {dtype!r}") from None
    if name not in ELEMENT_DTYPES:
        raise UnsupportedOperandError(
            argument, f"cuFFT has callbacks for complex64, complex128, float32 and float64 elements (got {name}; "
                      "half-precision transforms take none)")
    return name


def _user_info_name(dtype) -> str | None:
    if dtype is None:
        return None
    try:
        name = np.dtype(dtype).name
    except TypeError:
        raise UnsupportedOperandError("user_info_dtype", f"not a dtype: {dtype!r}") from None
    if np.dtype(dtype).kind not in "biufc":
        raise UnsupportedOperandError("user_info_dtype", f"expected a numeric dtype (got {name})")
    return name


def resolve_callback_target(target) -> str:
    """"sm_XY" for ``target`` ("sm_90", "sm_90a", (9, 0), 90, 900) or, when None, the current device.

    Raises
    ------
    OptionsError
        For another form, or None without a CUDA device.
    """
    resolved = resolve_target(target, "target", needed_by="callbacks")
    return f"sm_{resolved.major}{resolved.minor}"


# --------------------------------------------------------------------------------------------------
# Cache keys.


class _Uncacheable(Exception):
    """The function refers to a value whose contents cannot be hashed: compile, but keep no entry."""


def _value_token(value, depth: int):
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        return [type(value).__name__, repr(value)]
    if isinstance(value, np.generic):
        return ["numpy", value.dtype.str, repr(value.item())]
    if isinstance(value, np.ndarray):
        data = np.ascontiguousarray(value)
        return ["ndarray", data.dtype.str, list(data.shape), hashlib.sha256(data.tobytes()).hexdigest()]
    if isinstance(value, np.dtype):
        return ["dtype", value.str]
    if isinstance(value, type) and issubclass(value, np.generic):
        return ["scalar type", np.dtype(value).str]
    if isinstance(value, types.ModuleType):
        return ["module", value.__name__]
    if isinstance(value, (types.BuiltinFunctionType, np.ufunc)):
        return ["builtin", getattr(value, "__module__", None) or "", value.__name__]
    if isinstance(value, tuple):
        return ["tuple", [_value_token(item, depth) for item in value]]
    function = getattr(value, "py_func", value)  # a numba dispatcher wraps the Python function
    if isinstance(function, types.FunctionType):
        if depth > 4:
            raise _Uncacheable(function.__qualname__)
        return ["function", _function_digest(function, depth + 1)]
    if getattr(value, "__module__", "").split(".")[0] in ("numba", "math", "cmath"):
        return ["object", value.__module__, repr(value)]  # numba types, math constants and the like
    raise _Uncacheable(type(value).__name__)


def _code_token(code: types.CodeType, function, depth: int):
    consts = [_code_token(c, function, depth) if isinstance(c, types.CodeType) else _value_token(c, depth)
              for c in code.co_consts]
    referenced = {}
    namespace = function.__globals__
    for name in code.co_names:
        if name in namespace:
            referenced[name] = _value_token(namespace[name], depth)
    return [code.co_code.hex(), code.co_argcount, list(code.co_varnames), list(code.co_names), consts, referenced]


def _function_digest(function: types.FunctionType, depth: int = 0) -> str:
    closure = [_value_token(cell.cell_contents, depth) for cell in (function.__closure__ or ())]
    defaults = [_value_token(value, depth) for value in (function.__defaults__ or ())]
    token = [function.__qualname__, _code_token(function.__code__, function, depth), closure, defaults]
    return hashlib.sha256(repr(token).encode()).hexdigest()


@functools.cache
def _compiler_identity(compiler: str) -> dict:
    """The compiler, its version and the NVVM library it compiles with (a newer NVVM writes LTO-IR an
    older nvJitLink refuses), found without importing the compiler."""
    from .._codegen.link import library_file

    return {"compiler": compiler, "compiler_version": compilers.version(compiler), "nvvm_file": library_file("nvvm")}


def resolve_callback_compiler(compiler: str | None) -> str:
    """The Numba compiler that compiles callbacks: ``compiler``, or by default numba-cuda-mlir when
    it is installed and a CUDA driver is present (it needs one to compile), else numba-cuda.

    Raises
    ------
    OptionsError
        For a name other than "numba-cuda-mlir" and "numba-cuda".
    CallbackCompileError
        When the compiler (or, by default, any) is not installed.
    """
    installed = compilers.installed()
    if compiler is None:
        if compilers.NUMBA_CUDA_MLIR in installed and (
            compilers.NUMBA_CUDA not in installed or cuda_driver.driver_available()
        ):
            return compilers.NUMBA_CUDA_MLIR
        if compilers.NUMBA_CUDA in installed:
            return compilers.NUMBA_CUDA
        try:
            compilers.default_compiler()  # raises ImportError naming the extra: none is installed
        except ImportError as error:
            raise CallbackCompileError("compiler", str(error)) from error
    if compiler not in compilers.COMPILERS:
        raise OptionsError("compiler", f"expected 'numba-cuda-mlir' or 'numba-cuda' (got {compiler!r})")
    if compiler not in installed:
        raise CallbackCompileError("compiler", f"{compiler} is not installed (pip install {compiler})")
    return compiler


def callback_cache_key(role, fn, element_dtype, user_info_dtype, target, compiler) -> dict | None:
    """The disk-cache key of a callback (a JSON-able dict), or None when ``fn`` refers to a value
    whose contents cannot be hashed (such a callback is compiled and kept only in this process)."""
    function = getattr(fn, "py_func", fn)
    if not isinstance(function, types.FunctionType):
        raise CallbackCompileError("fn", f"expected a Python function (got {type(fn).__name__})")
    try:
        digest = _function_digest(function)
    except _Uncacheable:
        return None
    return {"kind": "fft-callback", "format": FORMAT, "role": role, "element": element_dtype,
            "user_info": user_info_dtype, "target": target, "function": digest, **dict(_compiler_identity(compiler))}


# --------------------------------------------------------------------------------------------------
# Compilation.

_compiled = BuildOnce()  # cache key digest (or id of the function, when uncacheable) -> CompiledCallback


def _digest(key: dict) -> str:
    import json

    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()


def _check_arity(fn, role):
    function = getattr(fn, "py_func", fn)
    code = getattr(function, "__code__", None)
    expected = 4 if role == "prolog" else 5
    if code is not None and not code.co_flags & 0x04 and code.co_argcount != expected:
        names = "data, offset, user_info, smem" if role == "prolog" else "data, offset, value, user_info, smem"
        raise CallbackCompileError("fn", f"a {role} takes {expected} arguments ({names}); "
                                         f"{function.__qualname__} takes {code.co_argcount}")


def _compile(role, fn, element_dtype, user_info_dtype, target, compiler) -> CompiledCallback:
    element = _element_name(element_dtype, "element_dtype")
    user_info = _user_info_name(user_info_dtype)
    if not callable(fn):
        raise CallbackCompileError("fn", f"expected a Python function (got {type(fn).__name__})")
    _check_arity(fn, role)
    compiler = resolve_callback_compiler(compiler)
    arch = resolve_callback_target(target)
    key = callback_cache_key(role, fn, element, user_info, arch, compiler)
    memo = _digest(key) if key is not None else ("uncached", id(getattr(fn, "py_func", fn)), role, element,
                                                  user_info, arch, compiler)
    return _compiled.get_or_build(memo, lambda: _load_or_build(role, fn, element, user_info, arch, key, compiler))


def _load_or_build(role, fn, element, user_info, arch, key, compiler) -> CompiledCallback:
    from .._codegen import cache as _cache

    digest = _digest(key) if key is not None else hashlib.sha256(
        repr((id(fn), role, element, user_info, arch, compiler)).encode()).hexdigest()
    symbol = cufft_symbol(role, element)
    if key is not None:
        entry = _cache.load(key)
        if entry is not None and entry.symbol == symbol:
            return CompiledCallback(role, element, user_info, arch, symbol, entry.code, digest)
    if compiler == compilers.NUMBA_CUDA_MLIR:
        from .callback_codegen_mlir import lower
    else:
        from .callback_codegen import lower
    with timed_step(f"{compiler} compile of the {role} callback {getattr(fn, '__name__', fn)!r}"):
        ltoir = lower(role, fn, element, user_info, arch, symbol)
    if key is not None:
        _cache.store(key, _cache.CodeEntry(symbol, ltoir))
    return CompiledCallback(role, element, user_info, arch, symbol, ltoir, digest)


# --------------------------------------------------------------------------------------------------
# Attaching callbacks to plans.


@dataclass(frozen=True)
class Attachment:
    """A callback as a plan takes it: the compiled code, the user data's device pointer (0 for
    none) and the user's array, kept alive as long as the plan."""

    callback: CompiledCallback
    pointer: int = 0
    data: object = field(default=None, compare=False, repr=False)

    @property
    def key(self) -> tuple:
        return (self.callback.role, self.callback.key, self.pointer)


def attachment(value, role: str, device_id: int) -> Attachment | None:
    """Check a ``prolog=``/``epilog=`` argument: a :class:`CompiledCallback`, or ``(callback,
    user_data)`` where ``user_data`` is any DLPack / CUDA Array Interface array on ``device_id``.

    Raises
    ------
    OptionsError
        For another kind of object, or a callback compiled for the other role.
    OperandError
        When the user data is not on the operand's GPU.
    """
    if value is None:
        return None
    data = None
    if isinstance(value, (tuple, list)) and len(value) == 2:
        value, data = value
    if not isinstance(value, CompiledCallback):
        raise OptionsError(role, f"expected a callback from nvmathx.fft.compile_{role}, or (callback, user_data) "
                                 f"(got {type(value).__name__})")
    if value.role != role:
        raise OptionsError(role, f"this callback was compiled as a {value.role}; pass it as {value.role}=")
    if data is None:
        return Attachment(value)
    operand = wrap_operand(data, role)
    if operand.device_id != device_id:
        where = "host memory" if operand.device_id < 0 else f"GPU {operand.device_id}"
        raise OperandError(role, f"the user data must be on the operand's GPU {device_id} (it is in {where})")
    return Attachment(value, int(operand.ptr), data)


def check_fits(role: str, item: Attachment, element: str, capability: tuple | None, where: str = "the GPU") -> None:
    """Refuse the attached callback when it was compiled for elements other than ``element`` (what the
    transform loads for a prolog, stores for an epilog) or for an architecture newer than
    ``capability`` (None: unknown, not checked); the OptionsError names ``role``."""
    callback = item.callback
    if callback.element_dtype != element:
        raise OptionsError(role, f"the callback was compiled for {callback.element_dtype} elements; this "
                                 f"transform {'loads' if role == 'prolog' else 'stores'} {element}")
    if capability is not None and callback.compute_capability > tuple(capability):
        raise OptionsError(role, f"the callback was compiled for {callback.target}; {where} is "
                                 f"sm_{capability[0]}{capability[1]}")


def attachments_key(prolog: Attachment | None, epilog: Attachment | None) -> tuple:
    """The part of a plan key that callbacks add: () without callbacks."""
    return tuple(item.key for item in (prolog, epilog) if item is not None)


def lto_versions() -> str:
    """"cuFFT X (path), nvJitLink Y (path)" for messages; never raises."""
    parts = []
    try:
        parts.append(f"cuFFT {cufft.get_version()} ({load_library('cufft').path})")
    except Exception as error:  # noqa: BLE001 (a message: whatever failed is reported, never raised)
        parts.append(f"cuFFT not usable ({type(error).__name__}: {error})")
    try:
        from cuda.bindings import nvjitlink

        parts.append(f"nvJitLink {'.'.join(map(str, nvjitlink.version()))} ({load_library('nvJitLink').path})")
    except Exception as error:  # noqa: BLE001 (as above)
        parts.append(f"nvJitLink not found ({type(error).__name__}: {error})")
    return ", ".join(parts)


def require_lto(argument: str) -> None:
    """Raise :class:`CallbacksUnavailableError` unless cuFFT can take LTO callbacks here: cuFFT >= 11.3
    with its entry point, and an nvJitLink it can load (loaded first, so that cuFFT finds the one
    installed with the wheels)."""
    if cufft.jit_callback_function() is None:
        raise CallbacksUnavailableError(
            f"{argument}: LTO callbacks need cuFFT >= 11.3 (CUDA 12.6 Update 2 or newer); found {lto_versions()}")
    try:
        load_library("nvJitLink")
    except LibraryNotFoundError as error:
        raise CallbacksUnavailableError(
            f"{argument}: cuFFT links callbacks with nvJitLink, which could not be loaded "
            f"(pip install nvidia-nvjitlink; {error}); found {lto_versions()}") from None


# cuFFT statuses that mean "could not link the callback" rather than a problem of the layout
LINK_FAILURES = frozenset({5, 14, 16, 17, 18, 19})  # INTERNAL_ERROR, NOT_IMPLEMENTED, NOT_SUPPORTED,
# MISSING_DEPENDENCY, NVRTC_FAILURE, NVJITLINK_FAILURE


def link_error(error, attachments) -> Exception:
    """The error to raise when cuFFT refused a plan with ``attachments``: a
    :class:`CallbacksUnavailableError` naming the versions for linking failures, else ``error``."""
    if getattr(error, "status", None) not in LINK_FAILURES:
        return error
    made = ", ".join(f"{a.callback.role} {a.callback.symbol} for {a.callback.target}" for a in attachments)
    return CallbacksUnavailableError(
        f"{attachments[0].callback.role}: cuFFT could not link the LTO callbacks ({made}): {error}; found "
        f"{lto_versions()}. The LTO-IR's compiler (NVVM of numba-cuda, or NVRTC) must not be newer than "
        "nvJitLink, whose major version must match cuFFT's CUDA")
