"""The dense solvers' kernels (nvmathx.linalg._solver_kernels) compiled as host C++ and run over
host memory: the wide loads and the scalar tail of ``nonfinite`` see every element, at any
alignment and length; ``fill_pointers`` writes each pointer of its array and nothing beyond."""

import ctypes

import numpy as np
import pytest

from helpers.host_kernels import HostKernels
from nvmathx._codegen.nonfinite import nonfinite_items
from nvmathx.linalg._solver_kernels import KERNEL_NAMES, KERNEL_SOURCE

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


@pytest.mark.parametrize("count", [1, 2, 7, 65536])
@pytest.mark.parametrize("stride", [8, 40, 32768])  # one float64; a 5-vector; a 64 x 64 float64 matrix
def test_fill_pointers_writes_base_plus_index_times_stride(count, stride):
    storage = np.full(count + 2, 0xDEADBEEF, np.uint64)  # a guard element either side
    base = 0x7F12_3456_7000  # a device address as the GPU sees one (below 2**63: a Python int packs it)
    _launch(None, 0, "fill_pointers", count, storage.ctypes.data + 8, count, base, stride)
    assert storage[0] == storage[-1] == 0xDEADBEEF
    assert (storage[1:-1] == base + stride * np.arange(count, dtype=np.uint64)).all()


def test_the_same_source_compiles_for_the_gpu_with_nvrtc():
    from nvmathx.linalg._solver_kernels import KERNELS

    try:
        code = KERNELS.compile("sm_90", use_cache=False)
    except (ImportError, RuntimeError) as error:
        if "nvrtc" not in str(error).lower() and not isinstance(error, ImportError):
            raise
        pytest.skip(f"NVRTC is not available: {error}")
    assert code.code


@pytest.mark.parametrize("index, c_type", [(np.int32, "int"), (np.int64, "long long")])
@pytest.mark.parametrize("n", [1, 2, 7, 64])
def test_pivots_become_the_permutation_that_lu_factors(rng, index, c_type, n):
    import scipy.linalg as sl

    count = 3
    matrices = rng.standard_normal((count, n, n))
    factors = [sl.lu_factor(m) for m in matrices]  # LAPACK getrf: zero-based interchanges here
    pivots = np.stack([piv + 1 for _, piv in factors]).astype(index)  # one-based, as cuSOLVER writes them
    permutation = np.full((count, n), -7, index)
    _launch(None, 0, f"pivots_to_permutation<{c_type}>", count, pivots.ctypes.data, count, n, permutation.ctypes.data)
    for matrix, (lu, _), order in zip(matrices, factors, permutation):
        lower, upper = np.tril(lu, -1) + np.eye(n), np.triu(lu)
        np.testing.assert_allclose(matrix[order], lower @ upper, atol=1e-12)  # P^T A = L U: row i is A[order[i]]
        assert sorted(order) == list(range(n))


@pytest.mark.parametrize("element, dtype", [("float", np.float32), ("double", np.float64), ("float2", np.complex64),
                                            ("double2", np.complex128)])
@pytest.mark.parametrize("index, c_type", [(np.int32, "int"), (np.int64, "long long")])
def test_permute_rows_gathers_by_the_permutation(rng, element, dtype, index, c_type):
    n = 37
    source = (rng.standard_normal(n) + (1j * rng.standard_normal(n) if dtype().dtype.kind == "c" else 0)).astype(dtype)
    order = rng.permutation(n).astype(index)
    target = np.zeros(n + 1, dtype)  # a guard element after the end
    target[-1] = 5
    _launch(None, 0, f"permute_rows<{element}, {c_type}>", n, source.ctypes.data, order.ctypes.data, n,
            target.ctypes.data)
    np.testing.assert_array_equal(target[:n], source[order])
    assert target[-1] == 5
