"""ctypes bindings of the host cuRAND calls nvmathx needs: Sobol direction vectors and scramble
constants (the device API's quasi-random generators take them as inputs), with typed errors.

These calls return pointers to tables inside libcurand; nothing runs on a GPU. Constants follow
curand.h (cuRAND 10 of CUDA 12 and 13).
"""

from __future__ import annotations

import ctypes
import enum

import numpy as np

from .._errors import CudaLibraryError
from ._loader import FunctionTable

__all__ = ["CurandError", "Status", "status_name", "DirectionVectorSet", "DIMENSIONS", "get_version",
           "direction_vectors", "scramble_constants"]

DIMENSIONS = 20_000  # the Joe-Kuo tables' dimensions (curand.h)


class CurandError(CudaLibraryError):
    """A cuRAND call returned a nonzero ``curandStatus_t``."""

    library = "cuRAND"


class Status(enum.IntEnum):
    """curandStatus_t."""

    SUCCESS = 0
    VERSION_MISMATCH = 100
    NOT_INITIALIZED = 101
    ALLOCATION_FAILED = 102
    TYPE_ERROR = 103
    OUT_OF_RANGE = 104
    LENGTH_NOT_MULTIPLE = 105
    DOUBLE_PRECISION_REQUIRED = 106
    LAUNCH_FAILURE = 201
    PREEXISTING_FAILURE = 202
    INITIALIZATION_FAILED = 203
    ARCH_MISMATCH = 204
    INTERNAL_ERROR = 999


def status_name(status: int) -> str:
    """The C name of a status (``"CURAND_STATUS_OUT_OF_RANGE"``)."""
    try:
        return f"CURAND_STATUS_{Status(status).name}"
    except ValueError:
        return f"CURAND_STATUS_{int(status)}"


class DirectionVectorSet(enum.IntEnum):
    """curandDirectionVectorSet_t."""

    JOEKUO6_32 = 101
    SCRAMBLED_JOEKUO6_32 = 102
    JOEKUO6_64 = 103
    SCRAMBLED_JOEKUO6_64 = 104


_int, _p = ctypes.c_int, ctypes.c_void_p
_lib = FunctionTable("curand", {
    "curandGetVersion": (_int, [ctypes.POINTER(_int)]),
    "curandGetDirectionVectors32": (_int, [ctypes.POINTER(_p), _int]),
    "curandGetDirectionVectors64": (_int, [ctypes.POINTER(_p), _int]),
    "curandGetScrambleConstants32": (_int, [ctypes.POINTER(_p)]),
    "curandGetScrambleConstants64": (_int, [ctypes.POINTER(_p)]),
})


def _call(name: str, *args) -> None:
    status = _lib()[name](*args)
    if status != 0:
        raise CurandError(status, status_name(status), name)


def get_version() -> int:
    """curandGetVersion(): e.g. 10405 for cuRAND 10.4.5."""
    version = _int()
    _call("curandGetVersion", ctypes.byref(version))
    return version.value


def _table(pointer: int | None, count: int, bits: int) -> np.ndarray:
    """A copy of ``count`` words of ``bits`` bits at ``pointer`` (libcurand owns the memory)."""
    if not pointer:
        raise CurandError(0, "CURAND_STATUS_SUCCESS", "curandGet*", "the table's pointer is NULL")
    word = ctypes.c_uint64 if bits == 64 else ctypes.c_uint32
    return np.ctypeslib.as_array((word * count).from_address(pointer)).copy()


def direction_vectors(vector_set: DirectionVectorSet, dimensions: int) -> np.ndarray:
    """The first ``dimensions`` rows of a direction-vector set: (dimensions, 32) uint32 for the
    32-bit sets, (dimensions, 64) uint64 for the 64-bit ones."""
    bits = 64 if vector_set in (DirectionVectorSet.JOEKUO6_64, DirectionVectorSet.SCRAMBLED_JOEKUO6_64) else 32
    pointer = _p()
    _call(f"curandGetDirectionVectors{bits}", ctypes.byref(pointer), int(vector_set))
    return _table(pointer.value, dimensions * bits, bits).reshape(dimensions, bits)


def scramble_constants(bits: int, dimensions: int) -> np.ndarray:
    """The first ``dimensions`` scramble constants of scrambled Sobol (uint32 or uint64)."""
    pointer = _p()
    _call(f"curandGetScrambleConstants{bits}", ctypes.byref(pointer))
    return _table(pointer.value, dimensions, bits)
