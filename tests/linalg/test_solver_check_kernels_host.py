"""The dense solvers' check kernels (nvmathx.linalg._solver_kernels) compiled as host C++ and run
over host memory: the wide loads and the scalar tail of ``nonfinite`` see every element, at any
alignment and length."""

import ctypes

import numpy as np
import pytest

from helpers.host_kernels import HostKernels
from nvmathx.linalg._solver_kernels import KERNEL_NAMES, KERNEL_SOURCE, nonfinite_items

_launch = HostKernels(KERNEL_SOURCE, KERNEL_NAMES, "solver-checks").launch


def _flag(values: np.ndarray, offset: int, count: int, real: str) -> int:
    flag = np.zeros(1, np.int32)
    pointer = values.ctypes.data + offset * values.itemsize
    _launch(None, 0, f"nonfinite<{real}>", nonfinite_items(count, real), pointer, count, flag.ctypes.data)
    return int(flag[0])


@pytest.mark.parametrize("dtype, real", [(np.float32, "float"), (np.float64, "double")])
@pytest.mark.parametrize("count", [1, 2, 3, 5, 8, 17, 1001])
@pytest.mark.parametrize("offset", [0, 1, 2, 3])  # elements from a 64-byte aligned start: 16-byte loads or not
def test_nonfinite_finds_a_nan_or_inf_anywhere(rng, dtype, real, count, offset):
    storage = np.zeros(count + offset + 64 // np.dtype(dtype).itemsize + 8, dtype)
    aligned = -storage.ctypes.data % 64 // storage.itemsize
    assert aligned + offset + count <= storage.size
    values = storage[aligned:]
    values[offset:offset + count] = rng.standard_normal(count)
    values[offset + count:] = np.nan  # beyond the end: never read
    values[:offset] = np.inf  # before the start: never read
    assert _flag(values, offset, count, real) == 0
    for position in {0, count // 2, count - 1}:
        for bad in (np.nan, np.inf, -np.inf):
            values[offset + position] = bad
            assert _flag(values, offset, count, real) == 1, (position, bad)
            values[offset + position] = rng.standard_normal()
            assert _flag(values, offset, count, real) == 0


def test_nonfinite_items_cover_sixteen_bytes_each():
    assert [nonfinite_items(n, "float") for n in (0, 1, 4, 5)] == [0, 1, 1, 2]
    assert [nonfinite_items(n, "double") for n in (0, 1, 2, 3)] == [0, 1, 1, 2]
    assert ctypes.sizeof(ctypes.c_float) * 4 == ctypes.sizeof(ctypes.c_double) * 2 == 16


def test_the_same_source_compiles_for_the_gpu_with_nvrtc():
    from nvmathx.linalg._solver_kernels import KERNELS

    try:
        code = KERNELS.compile("sm_90", use_cache=False)
    except (ImportError, RuntimeError) as error:
        if "nvrtc" not in str(error).lower() and not isinstance(error, ImportError):
            raise
        pytest.skip(f"NVRTC is not available: {error}")
    assert code.code
