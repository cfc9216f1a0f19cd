"""ctypes bindings to libmathdx (cuFFTDx, cuBLASDx, cuRANDDx and cuSOLVERDx code generation), releases
0.3.1 and 0.4.2 and later 0.4 releases (:func:`is_supported_release`).

libmathdx turns a cuFFTDx, cuBLASDx, cuRANDDx or cuSOLVERDx descriptor into LTO-IR at run time; it needs
no GPU. Any other release is refused when the library loads (:class:`LibraryNotFoundError` naming the
installed and the supported versions): its C entry points keep their names when their signatures change.
The two lines differ, for what nvmathx calls, in three places (checked against both releases' headers;
:func:`release_features` says which the loaded release has):

- 0.4 removed ``curanddxSetOperatorDoubles`` and ``CURANDDX_OPERATOR_DISTRIBUTION_PARAMETERS``: the
  distribution's parameters are a third argument of the generate function, ``param_type* params``;
- 0.4 removed cuSOLVERDx's ``SHARED_MEMORY_SIZE`` and ``SUGGESTED_LEADING_DIMENSION`` traits (nvmathx
  computes both: nvmathx/_codegen/solver.py);
- everything else 0.4 changed is additive (197 exported symbols against 159; enum values unchanged).

The few functions looked up at run time (``commondxGetLastErrorStr``, ``mathdxGetCommit``, ``nvrtcVersion``,
``curanddxSetOperatorDoubles``) may be absent from a build; callers handle that. 0.3.1 needs
``CUFFTDX_OPERATOR_API`` set before any cuFFTDx trait query.

Handles are ``long long`` integers. Every wrapper returns Python values and raises
:class:`MathdxError` (carrying the C status name) on a nonzero status.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import enum

from .._errors import CudaLibraryError, LibraryNotFoundError
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
    "RandOperator",
    "RandTrait",
    "RandDistribution",
    "RandNormalMethod",
    "RandGenerateMethod",
    "RandGenerator",
    "RandDeviceFunction",
    "SolverOperator",
    "SolverTrait",
    "SolverApi",
    "SolverType",
    "SolverFunction",
    "SolverArrangement",
    "SolverTransposeMode",
    "SolverFillMode",
    "SolverSide",
    "SolverDiag",
    "SUPPORTED_RELEASES",
    "SUPPORTED_TEXT",
    "ReleaseFeatures",
    "is_supported_release",
    "release_features",
    "features",
    "version",
    "commit",
    "nvrtc_version",
    "rand_version",
    "solver_version",
    "has_function",
    "fft_descriptor",
    "blas_descriptor",
    "rand_descriptor",
    "solver_descriptor",
    "generate_ltoir",
    "generate_ltoirs",
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
    R_32UI = 28
    R_64UI = 30


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


class FftComplexLayout(enum.IntEnum):
    NATURAL = 0  # N/2 + 1 complex values
    PACKED = 1  # N/2 complex values, the Nyquist value's real part in element 0's imaginary part
    FULL = 2  # N complex values


class FftRealMode(enum.IntEnum):
    NORMAL = 0  # the real side as N reals
    FOLDED = 1  # the real side as N/2 complex values (pairs of reals): an N/2-point transform


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


class RandOperator(enum.IntEnum):
    """curanddxOperatorType."""

    GENERATOR = 0
    PHILOX_ROUNDS = 1
    SM = 2
    EXECUTION = 3  # THREAD only
    DISTRIBUTION = 4
    OUTPUT_TYPE = 5  # a ValueType
    GENERATE_METHOD = 6
    NORMAL_METHOD = 7
    DEVICE_FUNCTIONS = 8  # RandDeviceFunction flags
    DISTRIBUTION_PARAMETERS = 9  # one or two doubles: set_doubles(); 0.3 only (0.4: generate's argument)


class RandTrait(enum.IntEnum):
    """curanddxTraitType."""

    SYMBOL_GENERATE_NAME = 0
    SYMBOL_INIT_STATE_NAME = 1
    SYMBOL_DESTROY_STATE_NAME = 2
    SYMBOL_SKIP_OFFSET_NAME = 3
    SYMBOL_SKIP_SUBSEQUENCE_NAME = 4
    SYMBOL_SKIP_SEQUENCE_NAME = 5
    STATE_SIZE = 6
    STATE_ALIGNMENT = 7


class RandDistribution(enum.IntEnum):
    UNIFORM_BITS = 0
    UNIFORM = 1
    NORMAL = 2
    LOG_NORMAL = 3
    POISSON = 4


class RandNormalMethod(enum.IntEnum):
    ICDF = 0
    BOX_MULLER = 1


class RandGenerateMethod(enum.IntEnum):
    SINGLE = 0  # generate
    PAIR = 1  # generate2
    QUAD = 2  # generate4


class RandGenerator(enum.IntEnum):
    XORWOW = 0
    MRG32K3A = 1
    PHILOX4_32 = 2
    PCG = 3
    SOBOL32 = 4
    SCRAMBLED_SOBOL32 = 5
    SOBOL64 = 6
    SCRAMBLED_SOBOL64 = 7


class RandDeviceFunction(enum.IntFlag):
    """curanddxDeviceFunctionType: bit flags, or-ed into ``RandOperator.DEVICE_FUNCTIONS``."""

    GENERATE = 1 << 1
    INIT_STATE = 1 << 2
    DESTROY_STATE = 1 << 3
    SKIP_OFFSET = 1 << 4
    SKIP_SUBSEQUENCE = 1 << 5
    SKIP_SEQUENCE = 1 << 6


class SolverOperator(enum.IntEnum):
    """cusolverdxOperatorType."""

    SIZE = 0  # M, (M, N) or (M, N, K)
    TYPE = 1
    PRECISION = 2
    SM = 3
    EXECUTION = 4
    BLOCK_DIM = 5
    API = 6
    FUNCTION = 7
    ARRANGEMENT = 8
    FILL_MODE = 9
    SIDE = 10
    DIAG = 11
    TRANSPOSE_MODE = 12
    LEADING_DIMENSION = 13
    BATCHES_PER_BLOCK = 14


class SolverTrait(enum.IntEnum):
    """cusolverdxTraitType (it starts at 1)."""

    SHARED_MEMORY_SIZE = 1  # 0.3 only
    SYMBOL_NAME = 2
    BLOCK_DIM = 3
    SUGGESTED_LEADING_DIMENSION = 4  # 0.3 only
    SUGGESTED_BLOCK_DIM = 5
    SUGGESTED_BATCHES_PER_BLOCK = 6


class SolverApi(enum.IntEnum):
    SMEM = 0
    SMEM_DYNAMIC_LD = 1


class SolverType(enum.IntEnum):
    REAL = 0
    COMPLEX = 1


class SolverFunction(enum.IntEnum):
    GETRF_NO_PIVOT = 0
    GETRS_NO_PIVOT = 1
    POTRF = 2
    POTRS = 3
    TRSM = 4
    GETRF_PARTIAL_PIVOT = 5
    GETRS_PARTIAL_PIVOT = 6
    GEQRF = 7
    UNMQR = 8
    GELQF = 9
    UNMLQ = 10
    POSV = 11
    GESV_NO_PIVOT = 12
    GESV_PARTIAL_PIVOT = 13
    GELS = 14


class SolverArrangement(enum.IntEnum):
    COL_MAJOR = 0
    ROW_MAJOR = 1


class SolverTransposeMode(enum.IntEnum):
    NON_TRANSPOSED = 0
    TRANSPOSED = 1
    CONJ_TRANSPOSED = 2


class SolverFillMode(enum.IntEnum):
    UPPER = 0
    LOWER = 1


class SolverSide(enum.IntEnum):
    LEFT = 0
    RIGHT = 1


class SolverDiag(enum.IntEnum):
    UNIT = 0
    NON_UNIT = 1


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
_strp = ctypes.POINTER(ctypes.c_char_p)
_doublep = ctypes.POINTER(ctypes.c_double)
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
    "commondxGetCodeNumLTOIRs": (_int, [_ll, _sizep], True),
    "commondxGetCodeLTOIRSizes": (_int, [_ll, _size, _sizep], True),
    "commondxGetCodeLTOIRs": (_int, [_ll, _size, ctypes.POINTER(ctypes.c_void_p)], True),
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
    # cuRANDDx has no SetOperatorInt64s and no GetTraitInt64s.
    "curanddxGetVersion": (_int, [_intp, _intp, _intp], True),
    "curanddxCreateDescriptor": (_int, [_llp], True),
    "curanddxDestroyDescriptor": (_int, [_ll], True),
    "curanddxSetOptionStr": (_int, [_ll, _int, _str], True),
    "curanddxSetOptionStrs": (_int, [_ll, _int, _size, _strp], True),
    "curanddxSetOperatorInt64": (_int, [_ll, _int, _ll], True),
    "curanddxSetOperatorDoubles": (_int, [_ll, _int, _size, _doublep], False),  # 0.3 only
    "curanddxGetTraitStrSize": (_int, [_ll, _int, _sizep], True),
    "curanddxGetTraitStr": (_int, [_ll, _int, _size, ctypes.c_char_p], True),
    "curanddxGetTraitInt64": (_int, [_ll, _int, _llp], True),
    "curanddxFinalizeCode": (_int, [_ll, _ll], True),
    "cusolverdxGetVersion": (_int, [_intp, _intp, _intp], True),
    "cusolverdxCreateDescriptor": (_int, [_llp], True),
    "cusolverdxDestroyDescriptor": (_int, [_ll], True),
    "cusolverdxSetOptionStr": (_int, [_ll, _int, _str], True),
    "cusolverdxSetOptionStrs": (_int, [_ll, _int, _size, _strp], True),
    "cusolverdxSetOperatorInt64": (_int, [_ll, _int, _ll], True),
    "cusolverdxSetOperatorInt64s": (_int, [_ll, _int, _size, _llp], True),
    "cusolverdxGetLTOIRSize": (_int, [_ll, _sizep], True),
    "cusolverdxGetLTOIR": (_int, [_ll, _size, ctypes.c_void_p], True),
    "cusolverdxGetUniversalFATBINSize": (_int, [_ll, _sizep], True),
    "cusolverdxGetUniversalFATBIN": (_int, [_ll, _size, ctypes.c_void_p], True),
    "cusolverdxGetTraitStrSize": (_int, [_ll, _int, _sizep], True),
    "cusolverdxGetTraitStr": (_int, [_ll, _int, _size, ctypes.c_char_p], True),
    "cusolverdxGetTraitInt64": (_int, [_ll, _int, _llp], True),
    "cusolverdxGetTraitInt64s": (_int, [_ll, _int, _size, _llp], True),
    "cusolverdxFinalizeCode": (_int, [_ll, _ll], True),
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


# The releases whose C API this module binds, as half-open ranges of (major, minor, patch). The entry
# points are extern "C", so another release links silently and can read garbage (0.4 changed cuRANDDx's
# generate signature and dropped cuSOLVERDx traits): a release outside these is refused when the library
# loads. Keep them equal to the `device` extras' ranges (pyproject.toml, tests/device_api/test_extras.py).
SUPPORTED_RELEASES = (((0, 3, 1), (0, 3, 2)), ((0, 4, 2), (0, 5, 0)))
SUPPORTED_TEXT = "0.3.1 or 0.4.2 and later 0.4 releases"


def is_supported_release(release: tuple) -> bool:
    """Whether nvmathx binds libmathdx ``release`` (major, minor, patch)."""
    return any(low <= tuple(release[:3]) < high for low, high in SUPPORTED_RELEASES)


@dataclasses.dataclass(frozen=True)
class ReleaseFeatures:
    """What differs between the supported libmathdx lines, for the calls nvmathx makes."""

    # 0.3: CURANDDX_OPERATOR_DISTRIBUTION_PARAMETERS; 0.4: generate's third argument
    distribution_parameters_operator: bool
    solver_layout_traits: bool  # 0.3: cuSOLVERDx's SHARED_MEMORY_SIZE and SUGGESTED_LEADING_DIMENSION traits


def release_features(release: tuple) -> ReleaseFeatures:
    """The :class:`ReleaseFeatures` of a supported release."""
    line_03 = tuple(release[:2]) == (0, 3)
    return ReleaseFeatures(distribution_parameters_operator=line_03, solver_layout_traits=line_03)


def features() -> ReleaseFeatures:
    """The :class:`ReleaseFeatures` of the loaded libmathdx."""
    return release_features(version())


def _require_supported_release(functions: dict) -> None:
    major, minor, patch = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
    _check(functions["mathdxGetVersionEx"](ctypes.byref(major), ctypes.byref(minor), ctypes.byref(patch)),
           "mathdxGetVersionEx")
    loaded = (major.value, minor.value, patch.value)
    if not is_supported_release(loaded):
        spec = LIBRARIES["mathdx"]
        raise LibraryNotFoundError(
            "mathdx", spec.pip_package, spec.env_var,
            f"{load_library('mathdx').path} is libmathdx {'.'.join(map(str, loaded))}; nvmathx binds the C API "
            f"of {SUPPORTED_TEXT}",
        )


_functions = FunctionTable("mathdx", _SIGNATURES, before_load=_preload_nvrtc, after_load=_require_supported_release)


def has_function(name: str) -> bool:
    """Whether the loaded libmathdx exports ``name`` (for functions only newer releases have)."""
    return name in _functions()


def _status_name(status: int) -> str:
    try:
        return Status(status).name
    except ValueError:
        return f"COMMONDX_STATUS_{status}"


def _last_error_detail(status: int) -> str:
    lib = _functions()
    if "commondxGetLastErrorStr" not in lib or "commondxGetLastErrorStrSize" not in lib:
        return ""
    size = ctypes.c_size_t()
    if lib["commondxGetLastErrorStrSize"](ctypes.byref(size)) != 0 or size.value == 0:
        return ""
    buffer = ctypes.create_string_buffer(size.value)
    code = ctypes.c_int()
    # The last error outlives its call (a compilation log stays until the next one): attach it only
    # to the status it records, not to a later INVALID_VALUE.
    if lib["commondxGetLastErrorStr"](ctypes.byref(code), size, buffer) != 0 or code.value != status:
        return ""
    return buffer.value.decode(errors="replace").strip()


def _check(status: int, function: str) -> None:
    if status != 0:
        raise MathdxError(status, _status_name(status), function, _last_error_detail(status))


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


def _component_version(prefix: str) -> tuple[int, int, int]:
    major, minor, patch = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
    _call(f"{prefix}GetVersion", ctypes.byref(major), ctypes.byref(minor), ctypes.byref(patch))
    return major.value, minor.value, patch.value


def rand_version() -> tuple[int, int, int]:
    """The (major, minor, patch) of the cuRANDDx inside the loaded libmathdx."""
    return _component_version("curanddx")


def solver_version() -> tuple[int, int, int]:
    """The (major, minor, patch) of the cuSOLVERDx inside the loaded libmathdx."""
    return _component_version("cusolverdx")


def _int64_array(values) -> ctypes.Array:
    return (_ll * len(values))(*values)


class _Descriptor:
    """A cuFFTDx, cuBLASDx, cuRANDDx or cuSOLVERDx descriptor handle: set operators, read traits, generate code.

    ``prefix`` is "cufftdx", "cublasdx", "curanddx" or "cusolverdx"; the C function names differ only by
    it. A method whose C function the library lacks (e.g. ``traits`` of cuRANDDx) raises TypeError.
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

    def _function(self, suffix: str) -> str:
        name = self._prefix + suffix
        if name not in _functions():
            raise TypeError(f"libmathdx {'.'.join(map(str, version()))} has no {name}")
        return name

    def set(self, operator: int, value) -> None:
        """Set an operator to an int or to a sequence of ints."""
        if isinstance(value, (tuple, list)):
            array = _int64_array(value)
            _call(self._function("SetOperatorInt64s"), self.handle, int(operator), len(value), array)
        else:
            _call(f"{self._prefix}SetOperatorInt64", self.handle, int(operator), int(value))

    def set_doubles(self, operator: int, values) -> None:
        """Set an operator to a sequence of floats (cuRANDDx's ``DISTRIBUTION_PARAMETERS``; 0.3 only)."""
        array = (ctypes.c_double * len(values))(*values)
        _call(self._function("SetOperatorDoubles"), self.handle, int(operator), len(values), array)

    def set_symbol_name(self, name: str) -> None:
        _call(f"{self._prefix}SetOptionStr", self.handle, int(CodeOption.SYMBOL_NAME), name.encode())

    def trait(self, trait: int) -> int:
        value = ctypes.c_longlong()
        _call(f"{self._prefix}GetTraitInt64", self.handle, int(trait), ctypes.byref(value))
        return value.value

    def traits(self, trait: int, count: int) -> tuple[int, ...]:
        array = (_ll * count)()
        _call(self._function("GetTraitInt64s"), self.handle, int(trait), count, array)
        return tuple(array)

    def trait_str(self, trait: int) -> str:
        size = ctypes.c_size_t()
        _call(f"{self._prefix}GetTraitStrSize", self.handle, int(trait), ctypes.byref(size))
        buffer = ctypes.create_string_buffer(size.value)
        _call(f"{self._prefix}GetTraitStr", self.handle, int(trait), size, buffer)
        return buffer.value.decode()

    def _bytes(self, what: str) -> bytes:
        size = ctypes.c_size_t()
        _call(self._function(f"Get{what}Size"), self.handle, ctypes.byref(size))
        buffer = ctypes.create_string_buffer(size.value)
        _call(self._function(f"Get{what}"), self.handle, size, buffer)
        return buffer.raw[: size.value]

    def ltoir(self) -> bytes:
        """cuSOLVERDx's LTO-IR of the descriptor, for its ``SM`` operator; costs seconds of CPU.

        The bytes :func:`generate_ltoir` gives for that SM without NVRTC arguments. Calls into the
        library's own code remain unresolved: link :meth:`universal_fatbin` with it.
        """
        return self._bytes("LTOIR")

    def universal_fatbin(self) -> bytes:
        """cuSOLVERDx's library code that its LTO-IR calls, as a fatbin (the same for every descriptor)."""
        return self._bytes("UniversalFATBIN")

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


def rand_descriptor() -> _Descriptor:
    """A new cuRANDDx descriptor (use as a context manager).

    Set every operator first: the first trait query compiles (seconds) and freezes the descriptor,
    later ``set`` calls fail with COMMONDX_INVALID_VALUE. 0.3.1 accepts ``set_symbol_name`` but keeps
    its own symbol names: read them from the ``RandTrait.SYMBOL_*`` traits.
    """
    return _Descriptor("curanddx")


def solver_descriptor() -> _Descriptor:
    """A new cuSOLVERDx descriptor (use as a context manager).

    Set every operator first: the first trait query compiles (seconds) and freezes the descriptor,
    later ``set`` calls fail with COMMONDX_INVALID_VALUE.
    """
    return _Descriptor("cusolverdx")


@contextlib.contextmanager
def _finalized_code(descriptor: _Descriptor, sm: int, arch_specific: bool, nvrtc_args):
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
        yield code.value
    finally:
        _check(_functions()["commondxDestroyCode"](code.value), "commondxDestroyCode")


def generate_ltoir(descriptor: _Descriptor, sm: int, arch_specific: bool, nvrtc_args=("-gen-opt-lto",)) -> bytes:
    """Compile ``descriptor`` to LTO-IR for ``sm`` (e.g. 900); costs seconds of CPU.

    ``arch_specific`` asks for the ``sm_XXa`` target (what numba-cuda compiles for on Hopper and
    later): ``COMMONDX_OPTION_TARGET_SM`` given as the pair ``[sm, 1]``.
    """
    with _finalized_code(descriptor, sm, arch_specific, nvrtc_args) as code:
        size = ctypes.c_size_t()
        _call("commondxGetCodeLTOIRSize", code, ctypes.byref(size))
        buffer = ctypes.create_string_buffer(size.value)
        _call("commondxGetCodeLTOIR", code, size, buffer)
        return buffer.raw[: size.value]


def generate_ltoirs(descriptor: _Descriptor, sm: int, arch_specific: bool, nvrtc_args=("-gen-opt-lto",)) -> list[bytes]:
    """:func:`generate_ltoir`, returning every LTO-IR object of the code (libmathdx may make more than one)."""
    with _finalized_code(descriptor, sm, arch_specific, nvrtc_args) as code:
        count = ctypes.c_size_t()
        _call("commondxGetCodeNumLTOIRs", code, ctypes.byref(count))
        sizes = (ctypes.c_size_t * count.value)()
        _call("commondxGetCodeLTOIRSizes", code, count, sizes)
        buffers = [ctypes.create_string_buffer(size) for size in sizes]
        pointers = (ctypes.c_void_p * count.value)(*(ctypes.addressof(buffer) for buffer in buffers))
        _call("commondxGetCodeLTOIRs", code, count, pointers)
        return [buffer.raw[:size] for buffer, size in zip(buffers, sizes)]
