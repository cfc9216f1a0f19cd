"""ctypes bindings of cuFFT (libcufft): the calls nvmathx.fft makes, with typed errors.

Every function returns ``cufftResult``; :func:`check` turns a nonzero result into
:class:`CufftError` carrying its C name. A plan (``cufftHandle``) is a C ``int``. Constants follow
cufft.h (cuFFT 11 of CUDA 12 and cuFFT 12 of CUDA 13 share them).
"""

from __future__ import annotations

import ctypes
import enum

from .._errors import CudaLibraryError
from ._loader import FunctionTable, load_library
from ._status import status_functions

__all__ = [
    "CufftError",
    "Result",
    "Type",
    "DataType",
    "FORWARD",
    "INVERSE",
    "check",
    "get_version",
    "create",
    "destroy",
    "set_auto_allocation",
    "make_plan_many64",
    "xt_make_plan_many",
    "set_work_area",
    "raw_exec_function",
    "set_stream",
    "exec_function",
    "execute",
    "CallbackType",
    "jit_callback_function",
    "callback_symbol",
    "xt_set_jit_callback",
]

FORWARD = -1
INVERSE = 1


class CufftError(CudaLibraryError):
    """A cuFFT call returned a nonzero ``cufftResult``."""

    library = "cuFFT"
    hint = "Set CUFFT_LOG_LEVEL=5 (cuFFT >= 11.5) to see cuFFT's own explanation"


class Result(enum.IntEnum):
    SUCCESS = 0
    INVALID_PLAN = 1
    ALLOC_FAILED = 2
    INVALID_TYPE = 3
    INVALID_VALUE = 4
    INTERNAL_ERROR = 5
    EXEC_FAILED = 6
    SETUP_FAILED = 7
    INVALID_SIZE = 8
    UNALIGNED_DATA = 9
    INCOMPLETE_PARAMETER_LIST = 10
    INVALID_DEVICE = 11
    PARSE_ERROR = 12
    NO_WORKSPACE = 13
    NOT_IMPLEMENTED = 14
    LICENSE_ERROR = 15
    NOT_SUPPORTED = 16
    MISSING_DEPENDENCY = 17
    NVRTC_FAILURE = 18
    NVJITLINK_FAILURE = 19
    NVSHMEM_FAILURE = 20


class Type(enum.IntEnum):
    """cufftType."""

    R2C = 0x2A
    C2R = 0x2C
    C2C = 0x29
    D2Z = 0x6A
    Z2D = 0x6C
    Z2Z = 0x69


class DataType(enum.IntEnum):
    """cudaDataType_t values cuFFT's Xt interface takes."""

    R_32F = 0
    R_64F = 1
    R_16F = 2
    C_32F = 4
    C_64F = 5
    C_16F = 6
    R_16BF = 14
    C_16BF = 15


class CallbackType(enum.IntEnum):
    """cufftXtCallbackType: what a callback loads or stores."""

    LD_COMPLEX = 0
    LD_COMPLEX_DOUBLE = 1
    LD_REAL = 2
    LD_REAL_DOUBLE = 3
    ST_COMPLEX = 4
    ST_COMPLEX_DOUBLE = 5
    ST_REAL = 6
    ST_REAL_DOUBLE = 7


_int = ctypes.c_int
_ll = ctypes.c_longlong
_pll = ctypes.POINTER(ctypes.c_longlong)
_p = ctypes.c_void_p
_psize = ctypes.POINTER(ctypes.c_size_t)
_EXEC = [_int, _p, _p, _int]  # plan, in, out, direction
_EXEC_REAL = [_int, _p, _p]  # plan, in, out
_SIGNATURES = {
    "cufftGetVersion": [ctypes.POINTER(_int)],
    "cufftCreate": [ctypes.POINTER(_int)],
    "cufftDestroy": [_int],
    "cufftSetAutoAllocation": [_int, _int],
    # plan, rank, n, inembed, istride, idist, onembed, ostride, odist, type, batch, workSize
    "cufftMakePlanMany64": [_int, _int, _pll, _pll, _ll, _ll, _pll, _ll, _ll, _int, _ll, _psize],
    # plan, rank, n, inembed, istride, idist, inputtype, onembed, ostride, odist, outputtype, batch,
    # workSize, executiontype
    "cufftXtMakePlanMany": [_int, _int, _pll, _pll, _ll, _ll, _int, _pll, _ll, _ll, _int, _ll, _psize, _int],
    "cufftSetWorkArea": [_int, _p],
    "cufftSetStream": [_int, _p],
    "cufftExecC2C": _EXEC,
    "cufftExecZ2Z": _EXEC,
    "cufftExecR2C": _EXEC_REAL,
    "cufftExecD2Z": _EXEC_REAL,
    "cufftExecC2R": _EXEC_REAL,
    "cufftExecZ2D": _EXEC_REAL,
    "cufftXtExec": _EXEC,
}
# plan, symbol name, LTO-IR, its size, cufftXtCallbackType, void** caller_info (one pointer per GPU).
# cuFFT 12 (CUDA 13) exports it under its own name; cuFFT 11.3-11.4 (CUDA 12.6 Update 2 to 12.9) under
# a versioned name (their header maps cufftXtSetJITCallback to it). Older releases have neither.
_JIT_CALLBACK = [_int, ctypes.c_char_p, _p, ctypes.c_size_t, _int, ctypes.POINTER(_p)]
_JIT_CALLBACK_NAMES = {12: "cufftXtSetJITCallback", 11: "__cufftXtSetJITCallback_12_7"}

# Which exec function runs a plan of each type; real types take no direction.
_EXEC_NAMES = {
    Type.C2C: "cufftExecC2C", Type.Z2Z: "cufftExecZ2Z", Type.R2C: "cufftExecR2C", Type.D2Z: "cufftExecD2Z",
    Type.C2R: "cufftExecC2R", Type.Z2D: "cufftExecZ2D",
}

_lib = FunctionTable("cufft", {
    **{name: (_int, argtypes) for name, argtypes in _SIGNATURES.items()},
    **{name: (_int, _JIT_CALLBACK, False) for name in _JIT_CALLBACK_NAMES.values()},
})


status_name, check, _call = status_functions("CUFFT_", Result, CufftError, globals(), unknown_prefix="CUFFT_RESULT_")


def get_version() -> int:
    """cufftGetVersion(): e.g. 12000 for cuFFT 12.0 (CUDA 13)."""
    version = _int()
    _call("cufftGetVersion", ctypes.byref(version))
    return version.value


def create() -> int:
    """A new, empty plan handle (cufftCreate)."""
    handle = _int()
    _call("cufftCreate", ctypes.byref(handle))
    return handle.value


def destroy(plan: int) -> None:
    _call("cufftDestroy", plan)


def set_auto_allocation(plan: int, enabled: bool) -> None:
    """With ``enabled=False`` the caller supplies the work area (:func:`set_work_area`)."""
    _call("cufftSetAutoAllocation", plan, int(bool(enabled)))


def _longs(values):
    return (ctypes.c_longlong * len(values))(*values)


def make_plan_many64(plan, n, inembed, istride, idist, onembed, ostride, odist, fft_type, batch) -> int:
    """cufftMakePlanMany64 with the advanced layout; returns the work area size in bytes."""
    work = ctypes.c_size_t()
    detail = f"n={tuple(n)}, inembed={tuple(inembed)}, istride={istride}, idist={idist}, " \
             f"onembed={tuple(onembed)}, ostride={ostride}, odist={odist}, batch={batch}"
    _call("cufftMakePlanMany64", plan, len(n), _longs(n), _longs(inembed), istride, idist, _longs(onembed),
          ostride, odist, int(fft_type), batch, ctypes.byref(work), detail=detail)
    return work.value


def xt_make_plan_many(plan, n, inembed, istride, idist, input_type, onembed, ostride, odist, output_type, batch,
                      execution_type) -> int:
    """cufftXtMakePlanMany (any cudaDataType, e.g. half precision); returns the work area size."""
    work = ctypes.c_size_t()
    _call("cufftXtMakePlanMany", plan, len(n), _longs(n), _longs(inembed), istride, idist, int(input_type),
          _longs(onembed), ostride, odist, int(output_type), batch, ctypes.byref(work), int(execution_type),
          detail=f"n={tuple(n)}, batch={batch}")
    return work.value


def set_work_area(plan: int, pointer: int) -> None:
    _call("cufftSetWorkArea", plan, pointer)


def set_stream(plan: int, stream_handle: int) -> None:
    _call("cufftSetStream", plan, stream_handle)


def exec_function(fft_type) -> tuple:
    """(ctypes function, takes_direction) for the exec call of a plan of ``fft_type``.

    The hot path calls the function directly and passes a nonzero result to :func:`check`.
    """
    name = _EXEC_NAMES[Type(fft_type)]
    return _lib()[name], name in ("cufftExecC2C", "cufftExecZ2Z"), name


def raw_exec_function(fft_type) -> tuple:
    """Like :func:`exec_function`, but the function has no ``argtypes``: the caller passes ctypes
    objects (``c_int`` plan and direction, ``c_void_p`` pointers), which skips ctypes' per-call
    argument conversion on the hot path. Its signature is the table's."""
    name = _EXEC_NAMES[Type(fft_type)]
    _lib()  # the signature table is loaded (and the library found) first
    function = load_library("cufft").cdll[name]  # indexing makes a new object; the table's keeps its argtypes
    function.restype = _int
    return function, name in ("cufftExecC2C", "cufftExecZ2Z"), name


def execute(plan: int, fft_type, source: int, target: int, direction: int = FORWARD) -> None:
    """Run ``plan`` once (the exec function matching ``fft_type``)."""
    function, takes_direction, name = exec_function(fft_type)
    status = function(plan, source, target, direction) if takes_direction else function(plan, source, target)
    check(status, name)


def jit_callback_function(version: int | None = None) -> str | None:
    """The C name of the entry point that attaches LTO callbacks in this cuFFT, or None when it has
    none (cuFFT older than 11.3). ``version`` is :func:`get_version`'s number (asked when None)."""
    version = get_version() if version is None else version
    if version < 11300:
        return None
    name = _JIT_CALLBACK_NAMES.get(version // 1000)
    return name if name is not None and name in _lib() else None


def _caller_info(pointers):
    """The ``void**`` array cuFFT takes: one device pointer per GPU (NULL entries allowed)."""
    if pointers is None:
        return None
    values = list(pointers)
    if not values:
        raise ValueError("caller_info: expected at least one pointer, or None")
    for value in values:
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 1 << 64):
            raise TypeError(f"caller_info: expected device pointers as ints in [0, 2**64) (got {value!r})")
    return (_p * len(values))(*values)


def callback_symbol(role: str, element: str) -> str:
    """The C++ name cuFFT looks up in a callback's LTO-IR: ``cufftJITCallbackLoad<Type>(void*,
    unsigned long long, void*, void*)`` or ``cufftJITCallbackStore<Type>(void*, unsigned long long,
    <type> value, void*, void*)``, mangled (``role`` "load"/"store"; ``element`` a numpy dtype name)."""
    kind, c_type = _CALLBACK_ELEMENTS[element]
    phase = "Load" if role == "load" else "Store"
    name = f"cufftJITCallback{phase}{kind}"
    value = "" if role == "load" else c_type
    return f"_Z{len(name)}{name}Pvy{value}S_S_"


# numpy dtype -> (cuFFT's callback type word, the element's mangled C++ type)
_CALLBACK_ELEMENTS = {"float32": ("Real", "f"), "float64": ("DoubleReal", "d"), "complex64": ("Complex", "6float2"),
                      "complex128": ("DoubleComplex", "7double2")}


def xt_set_jit_callback(plan: int, ltoir: bytes, callback_type, caller_info=None) -> tuple:
    """Attach an LTO-IR callback to ``plan`` (after cufftCreate, before its make-plan call).

    The LTO-IR must define the function named by :func:`callback_symbol` for the callback's role and
    element type. The name argument is passed as NULL: cuFFT 12.0 (CUDA 13.0) fails the make-plan call
    with CUFFT_INTERNAL_ERROR when any name is given there, the callback's own mangled name included,
    and finds the callback by its documented name when none is.
    ``caller_info`` is a sequence of device pointers (one per GPU) or None.

    cuFFT reads the code and the pointer array when the plan is made, so the returned tuple of ctypes
    objects must be kept alive at least until then (keep it as long as the plan).
    """
    name = jit_callback_function()
    if name is None:
        raise CufftError(Result.NOT_SUPPORTED, status_name(Result.NOT_SUPPORTED), "cufftXtSetJITCallback",
                         f"cuFFT {get_version()} has no LTO callbacks (cuFFT >= 11.3 has)")
    code = bytes(ltoir)
    keep = (ctypes.create_string_buffer(code, len(code)), _caller_info(caller_info))
    _call(name, plan, None, keep[0], len(code), int(CallbackType(callback_type)), keep[1],
          detail=f"{len(code)} bytes of LTO-IR, type={CallbackType(callback_type).name}")
    return keep
