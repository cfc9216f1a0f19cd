"""ctypes bindings to libmathdx (cuFFTDx and cuBLASDx code generation), release 0.3.1 (``BOUND_VERSION``).

libmathdx turns a cuFFTDx or cuBLASDx descriptor into LTO-IR at run time; it needs no GPU. Any other
release is refused when the library loads (:class:`LibraryNotFoundError` naming both versions): its
C entry points keep their names when their signatures change. The few functions looked up at run
time (``commondxGetLastErrorStr``, ``mathdxGetCommit``, ``nvrtcVersion``) may be absent from a build;
callers handle that. 0.3.1 needs ``CUFFTDX_OPERATOR_API`` set before any cuFFTDx trait query.

Handles are ``long long`` integers. Every wrapper returns Python values and raises
:class:`MathdxError` (carrying the C status name) on a nonzero status.
"""

from __future__ import annotations

import ctypes
import enum

from .._core.errors import CudaLibraryError, LibraryNotFoundError
from ._loader import LIBRARIES, FunctionTable, load_library

__all__ = [
    "MathdxError",
    "Status",
    "Precision",
    "ValueType",
    "Execution",
    "CodeOption",
    "FftOperator",
    "FftTrait",
    "FftKnob",
    "FftApi",
    "FftType",
    "FftDirection",
    "BlasOperator",
    "BlasTrait",
    "BlasApi",
    "BlasType",
    "BlasArrangement",
    "BlasFunction",
    "BOUND_VERSION",
    "version",
    "commit",
    "nvrtc_version",
    "has_function",
    "fft_descriptor",
    "blas_descriptor",
    "generate_ltoir",
]


class Status(enum.IntEnum):
    """commondxStatusType."""

    COMMONDX_SUCCESS = 0
    COMMONDX_INVALID_VALUE = 1
    COMMONDX_INTERNAL_ERROR = 2
    COMMONDX_COMPILATION_ERROR = 3
    COMMONDX_CUFFT_ERROR = 4
    COMMONDX_FILE_ERROR = 5


class Precision(enum.IntEnum):
    """commondxPrecision (the ones nvmathx uses)."""

    BF16 = 2
    F16 = 3
    TF32 = 4
    F32 = 5
    F64 = 6


class ValueType(enum.IntEnum):
    """commondxValueType (the ones nvmathx uses)."""

    R_16BF = 4
    C_16BF = 5
    R_16F2 = 6
    R_16F = 7
    C_16F = 8
    C_16F2 = 9
    R_32F = 12
    C_32F = 13
    R_64F = 14
    C_64F = 15


class Execution(enum.IntEnum):
    THREAD = 0
    BLOCK = 1


class CodeOption(enum.IntEnum):
    SYMBOL_NAME = 0
    TARGET_SM = 1
    CODE_CONTAINER = 2
    CODE_ISA = 3
    EXTRA_NVRTC_ARGS = 4


class FftOperator(enum.IntEnum):
    SIZE = 0
    DIRECTION = 1
    TYPE = 2
    PRECISION = 3
    SM = 4
    EXECUTION = 5
    FFTS_PER_BLOCK = 6
    ELEMENTS_PER_THREAD = 7
    BLOCK_DIM = 8
    REAL_FFT_OPTIONS = 9
    API = 10
    CODE_TYPE = 11


class FftTrait(enum.IntEnum):
    VALUE_TYPE = 0
    INPUT_TYPE = 1
    OUTPUT_TYPE = 2
    IMPLICIT_TYPE_BATCHING = 3
    ELEMENTS_PER_THREAD = 4
    STORAGE_SIZE = 5
    STRIDE = 6
    BLOCK_DIM = 7
    SHARED_MEMORY_SIZE = 8
    FFTS_PER_BLOCK = 9
    SYMBOL_NAME = 10
    INPUT_LENGTH = 11
    OUTPUT_LENGTH = 12
    INPUT_ELEMENTS_PER_THREAD = 13
    OUTPUT_ELEMENTS_PER_THREAD = 14
    SUGGESTED_FFTS_PER_BLOCK = 15


class FftKnob(enum.IntEnum):
    ELEMENTS_PER_THREAD = 0
    FFTS_PER_BLOCK = 1


class FftApi(enum.IntEnum):
    LMEM = 0  # data in registers, shared memory as scratch
    SMEM = 1  # data in shared memory


class FftType(enum.IntEnum):
    C2C = 0
    R2C = 1
    C2R = 2


class FftDirection(enum.IntEnum):
    FORWARD = 0
    INVERSE = 1


class BlasOperator(enum.IntEnum):
    FUNCTION = 0
    SIZE = 1
    TYPE = 2
    PRECISION = 3
    SM = 4
    EXECUTION = 5
    BLOCK_DIM = 6
    LEADING_DIMENSION = 7
    API = 9
    ARRANGEMENT = 10
    ALIGNMENT = 11


class BlasTrait(enum.IntEnum):
    VALUE_TYPE = 0
    SIZE = 1
    BLOCK_SIZE = 2
    BLOCK_DIM = 3
    LEADING_DIMENSION = 4
    SYMBOL_NAME = 5
    ARRANGEMENT = 6
    ALIGNMENT = 7
    SUGGESTED_LEADING_DIMENSION = 8
    SUGGESTED_BLOCK_DIM = 9
    MAX_THREADS_PER_BLOCK = 10


class BlasApi(enum.IntEnum):
    SMEM = 0
    SMEM_DYNAMIC_LD = 1
    TENSORS = 2


class BlasType(enum.IntEnum):
    REAL = 0
    COMPLEX = 1


class BlasArrangement(enum.IntEnum):
    COL_MAJOR = 0
    ROW_MAJOR = 1


class BlasFunction(enum.IntEnum):
    MM = 0


class MathdxError(CudaLibraryError):
    """A libmathdx call returned a nonzero ``commondxStatusType``."""

    library = "libmathdx"
    hint = "Set LIBMATHDX_LOG_LEVEL=5 for libmathdx's own log"


# One signature table: name -> (restype, argtypes, required). Optional entries exist only in
# newer releases; callers test them with has_function().
_ll = ctypes.c_longlong
_llp = ctypes.POINTER(_ll)
_int = ctypes.c_int
_intp = ctypes.POINTER(ctypes.c_int)
_size = ctypes.c_size_t
_sizep = ctypes.POINTER(ctypes.c_size_t)
_str = ctypes.c_char_p
_SIGNATURES = {
    "mathdxGetVersionEx": (_int, [_intp, _intp, _intp], True),
    "mathdxGetCommit": (_int, [ctypes.POINTER(_str)], False),
    "commondxStatusToStr": (_str, [_int], True),
    "commondxGetLastErrorStrSize": (_int, [_sizep], False),
    "commondxGetLastErrorStr": (_int, [_intp, _size, ctypes.c_char_p], False),
    "commondxCreateCode": (_int, [_llp], True),
    "commondxDestroyCode": (_int, [_ll], True),
    "commondxSetCodeOptionInt64": (_int, [_ll, _int, _ll], True),
    "commondxSetCodeOptionInt64s": (_int, [_ll, _int, _size, _llp], True),
    "commondxSetCodeOptionStr": (_int, [_ll, _int, _str], True),
    "commondxGetCodeLTOIRSize": (_int, [_ll, _sizep], True),
    "commondxGetCodeLTOIR": (_int, [_ll, _size, ctypes.c_void_p], True),
    "cufftdxCreateDescriptor": (_int, [_llp], True),
    "cufftdxDestroyDescriptor": (_int, [_ll], True),
    "cufftdxSetOptionStr": (_int, [_ll, _int, _str], True),
    "cufftdxSetOperatorInt64": (_int, [_ll, _int, _ll], True),
    "cufftdxSetOperatorInt64s": (_int, [_ll, _int, _size, _llp], True),
    "cufftdxIsSupported": (_int, [_ll, _intp], True),
    "cufftdxGetKnobInt64Size": (_int, [_ll, _size, _intp, _sizep], True),
    "cufftdxGetKnobInt64s": (_int, [_ll, _size, _intp, _size, _llp], True),
    "cufftdxGetTraitInt64": (_int, [_ll, _int, _llp], True),
    "cufftdxGetTraitInt64s": (_int, [_ll, _int, _size, _llp], True),
    "cufftdxGetTraitCommondxDataType": (_int, [_ll, _int, _intp], True),
    "cufftdxGetTraitStrSize": (_int, [_ll, _int, _sizep], True),
    "cufftdxGetTraitStr": (_int, [_ll, _int, _size, ctypes.c_char_p], True),
    "cufftdxFinalizeCode": (_int, [_ll, _ll], True),
    "cublasdxCreateDescriptor": (_int, [_llp], True),
    "cublasdxDestroyDescriptor": (_int, [_ll], True),
    "cublasdxSetOptionStr": (_int, [_ll, _int, _str], True),
    "cublasdxSetOperatorInt64": (_int, [_ll, _int, _ll], True),
    "cublasdxSetOperatorInt64s": (_int, [_ll, _int, _size, _llp], True),
    "cublasdxGetTraitInt64": (_int, [_ll, _int, _llp], True),
    "cublasdxGetTraitInt64s": (_int, [_ll, _int, _size, _llp], True),
    "cublasdxGetTraitStrSize": (_int, [_ll, _int, _sizep], True),
    "cublasdxGetTraitStr": (_int, [_ll, _int, _size, ctypes.c_char_p], True),
    "cublasdxFinalizeCode": (_int, [_ll, _ll], True),
    # libmathdx links libnvrtc; dlsym through its handle finds the NVRTC it actually uses.
    "nvrtcVersion": (_int, [_intp, _intp], False),
}

def _preload_nvrtc() -> None:
    """Load the NVRTC libmathdx links against first, so that a libmathdx outside the NVRTC wheel's
    folder (``NVMATHX_MATHDX_PATH``, a system copy) finds it; libmathdx reports it if none loads."""
    try:
        load_library("nvrtc")
    except LibraryNotFoundError:
        pass


# The release whose C API this module binds. The entry points are extern "C", so another release
# links silently and can read garbage (0.4 changed cuRANDDx's generate signature and dropped
# cuSOLVERDx traits): a different release is refused when the library loads. Keep it equal to the
# pin of the `device` extras (pyproject.toml) and to the GPU machine's (LIBMATHDX= of the wheel fetch).
BOUND_VERSION = (0, 3, 1)


def _require_bound_release(functions: dict) -> None:
    major, minor, patch = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
    _check(functions["mathdxGetVersionEx"](ctypes.byref(major), ctypes.byref(minor), ctypes.byref(patch)),
           "mathdxGetVersionEx")
    loaded = (major.value, minor.value, patch.value)
    if loaded != BOUND_VERSION:
        spec = LIBRARIES["mathdx"]
        raise LibraryNotFoundError(
            "mathdx", spec.pip_package, spec.env_var,
            f"{load_library('mathdx').path} is libmathdx {'.'.join(map(str, loaded))}; nvmathx binds the C API "
            f"of {'.'.join(map(str, BOUND_VERSION))}",
        )


_functions = FunctionTable("mathdx", _SIGNATURES, before_load=_preload_nvrtc, after_load=_require_bound_release)


def has_function(name: str) -> bool:
    """Whether the loaded libmathdx exports ``name`` (for functions only newer releases have)."""
    return name in _functions()


def _status_name(status: int) -> str:
    try:
        return Status(status).name
    except ValueError:
        return f"COMMONDX_STATUS_{status}"


def _last_error_detail() -> str:
    lib = _functions()
    if "commondxGetLastErrorStr" not in lib or "commondxGetLastErrorStrSize" not in lib:
        return ""
    size = ctypes.c_size_t()
    if lib["commondxGetLastErrorStrSize"](ctypes.byref(size)) != 0 or size.value == 0:
        return ""
    buffer = ctypes.create_string_buffer(size.value)
    code = ctypes.c_int()
    if lib["commondxGetLastErrorStr"](ctypes.byref(code), size, buffer) != 0:
        return ""
    return buffer.value.decode(errors="replace").strip()


def _check(status: int, function: str) -> None:
    if status != 0:
        raise MathdxError(status, _status_name(status), function, _last_error_detail())


def _call(name: str, *args) -> None:
    _check(_functions()[name](*args), name)


def version() -> tuple[int, int, int]:
    """The loaded libmathdx's (major, minor, patch)."""
    major, minor, patch = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
    _call("mathdxGetVersionEx", ctypes.byref(major), ctypes.byref(minor), ctypes.byref(patch))
    return major.value, minor.value, patch.value


def commit() -> str:
    """The libmathdx source commit, or "" where the release does not report it."""
    if not has_function("mathdxGetCommit"):
        return ""
    value = ctypes.c_char_p()
    _call("mathdxGetCommit", ctypes.byref(value))
    return (value.value or b"").decode()


def nvrtc_version() -> tuple[int, int]:
    """(major, minor) of the NVRTC libmathdx compiles with; (0, 0) when it cannot be asked."""
    if not has_function("nvrtcVersion"):
        return (0, 0)
    major, minor = ctypes.c_int(), ctypes.c_int()
    if _functions()["nvrtcVersion"](ctypes.byref(major), ctypes.byref(minor)) != 0:
        return (0, 0)
    return major.value, minor.value


def _int64_array(values) -> ctypes.Array:
    return (_ll * len(values))(*values)


class _Descriptor:
    """A cuFFTDx or cuBLASDx descriptor handle: set operators, read traits, generate code.

    ``prefix`` is "cufftdx" or "cublasdx"; the C function names differ only by it.
    """

    def __init__(self, prefix: str):
        self._prefix = prefix
        handle = ctypes.c_longlong()
        _call(f"{prefix}CreateDescriptor", ctypes.byref(handle))
        self.handle: int | None = handle.value

    def close(self) -> None:
        if self.handle is not None:
            handle, self.handle = self.handle, None
            _call(f"{self._prefix}DestroyDescriptor", handle)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def set(self, operator: int, value) -> None:
        """Set an operator to an int or to a sequence of ints."""
        if isinstance(value, (tuple, list)):
            array = _int64_array(value)
            _call(f"{self._prefix}SetOperatorInt64s", self.handle, int(operator), len(value), array)
        else:
            _call(f"{self._prefix}SetOperatorInt64", self.handle, int(operator), int(value))

    def set_symbol_name(self, name: str) -> None:
        _call(f"{self._prefix}SetOptionStr", self.handle, int(CodeOption.SYMBOL_NAME), name.encode())

    def trait(self, trait: int) -> int:
        value = ctypes.c_longlong()
        _call(f"{self._prefix}GetTraitInt64", self.handle, int(trait), ctypes.byref(value))
        return value.value

    def traits(self, trait: int, count: int) -> tuple[int, ...]:
        array = (_ll * count)()
        _call(f"{self._prefix}GetTraitInt64s", self.handle, int(trait), count, array)
        return tuple(array)

    def trait_str(self, trait: int) -> str:
        size = ctypes.c_size_t()
        _call(f"{self._prefix}GetTraitStrSize", self.handle, int(trait), ctypes.byref(size))
        buffer = ctypes.create_string_buffer(size.value)
        _call(f"{self._prefix}GetTraitStr", self.handle, int(trait), size, buffer)
        return buffer.value.decode()

    def value_type(self, trait: int) -> int:
        """A commondxValueType trait (cuFFTDx only)."""
        value = ctypes.c_int()
        _call("cufftdxGetTraitCommondxDataType", self.handle, int(trait), ctypes.byref(value))
        return value.value

    def is_supported(self) -> bool:
        """cufftdxIsSupported: whether cuFFTDx implements the descriptor (set ``API`` first).

        An unsupported descriptor answers False; a failing call raises MathdxError.
        """
        value = ctypes.c_int()
        _call("cufftdxIsSupported", self.handle, ctypes.byref(value))
        return bool(value.value)

    def knobs(self, knobs: tuple[int, ...]) -> list[tuple[int, ...]]:
        """cuFFTDx's list of tuned knob combinations (one tuple per combination)."""
        kinds = (ctypes.c_int * len(knobs))(*knobs)
        size = ctypes.c_size_t()
        _call("cufftdxGetKnobInt64Size", self.handle, len(knobs), kinds, ctypes.byref(size))
        # The size counts values; allocate a full set of tuples in case a release counts tuples.
        values = (_ll * (size.value * len(knobs)))()
        _call("cufftdxGetKnobInt64s", self.handle, len(knobs), kinds, size.value, values)
        flat = list(values)[: size.value]
        return [tuple(flat[i : i + len(knobs)]) for i in range(0, len(flat) - len(knobs) + 1, len(knobs))]


def fft_descriptor() -> _Descriptor:
    """A new cuFFTDx descriptor (use as a context manager)."""
    return _Descriptor("cufftdx")


def blas_descriptor() -> _Descriptor:
    """A new cuBLASDx descriptor (use as a context manager)."""
    return _Descriptor("cublasdx")


def generate_ltoir(descriptor: _Descriptor, sm: int, arch_specific: bool, nvrtc_args=("-gen-opt-lto",)) -> bytes:
    """Compile ``descriptor`` to LTO-IR for ``sm`` (e.g. 900); costs seconds of CPU.

    ``arch_specific`` asks for the ``sm_XXa`` target (what numba-cuda compiles for on Hopper and
    later): ``COMMONDX_OPTION_TARGET_SM`` given as the pair ``[sm, 1]``.
    """
    code = ctypes.c_longlong()
    _call("commondxCreateCode", ctypes.byref(code))
    try:
        if arch_specific:
            target = _int64_array([sm, 1])
            _call("commondxSetCodeOptionInt64s", code.value, int(CodeOption.TARGET_SM), 2, target)
        else:
            _call("commondxSetCodeOptionInt64", code.value, int(CodeOption.TARGET_SM), sm)
        for argument in nvrtc_args:
            _call("commondxSetCodeOptionStr", code.value, int(CodeOption.EXTRA_NVRTC_ARGS), argument.encode())
        _call(f"{descriptor._prefix}FinalizeCode", code.value, descriptor.handle)
        size = ctypes.c_size_t()
        _call("commondxGetCodeLTOIRSize", code.value, ctypes.byref(size))
        buffer = ctypes.create_string_buffer(size.value)
        _call("commondxGetCodeLTOIR", code.value, size, buffer)
        return buffer.raw[: size.value]
    finally:
        _check(_functions()["commondxDestroyCode"](code.value), "commondxDestroyCode")
