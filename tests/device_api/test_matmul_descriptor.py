"""Matmul descriptors on the host: validation and traits (no GPU, no code generation)."""

import numpy as np
import pytest

from helpers.requirements import needs_mathdx
from nvmathx import OptionsError
from nvmathx.device_api import Matmul
from nvmathx.device_api._matmul import tile_sizes

H100 = (9, 0)


@needs_mathdx
@pytest.mark.parametrize(
    "precision, data_type, itemsize",
    [(np.float32, "real", 4), (np.float64, "real", 8), (np.float32, "complex", 8), (np.float64, "complex", 16)],
)
@pytest.mark.parametrize("size", [(8, 8, 8), (32, 16, 64)])
def test_traits(size, precision, data_type, itemsize):
    gemm = Matmul(size, precision, data_type=data_type, sm=H100)
    m, n, k = size
    assert (gemm.m, gemm.n, gemm.k) == size
    assert (gemm.lda, gemm.ldb, gemm.ldc) == (k, n, n)  # row-major and tight by default
    assert (gemm.a_size, gemm.b_size, gemm.c_size) == (m * k, k * n, m * n)
    assert gemm.shared_memory_size == (m * k + k * n + m * n) * itemsize
    assert gemm.value_dtype.itemsize == itemsize
    assert 1 <= gemm.block_size <= 1024 and gemm.block_size == int(np.prod(gemm.block_dim))


@needs_mathdx
def test_column_major_and_suggested_leading_dimensions():
    gemm = Matmul((32, 16, 8), np.float32, arrangement="col_major", leading_dimension="suggested", sm=H100)
    assert gemm.lda >= 32 and gemm.ldb >= 8 and gemm.ldc >= 32
    assert (gemm.a_size, gemm.b_size, gemm.c_size) == (gemm.lda * 8, gemm.ldb * 16, gemm.ldc * 16)


@needs_mathdx
def test_explicit_block_dim_and_leading_dimension():
    gemm = Matmul((16, 16, 16), np.float64, block_dim=(64,), leading_dimension=(20, 24, 28), sm=H100)
    assert gemm.block_dim == (64, 1, 1)
    assert (gemm.lda, gemm.ldb, gemm.ldc) == (20, 24, 28)


@pytest.mark.parametrize(
    "arrangement, ld, expected",
    [(("row_major",) * 3, (4, 5, 5), (12, 20, 15)), (("col_major",) * 3, (3, 4, 3), (12, 20, 15))],
)
def test_tile_sizes(arrangement, ld, expected):
    assert tile_sizes(3, 5, 4, arrangement, ld) == expected


@pytest.mark.parametrize(
    "argument, kwargs",
    [
        ("size", {"size": (8, 8)}),
        ("size", {"size": (8, 0, 8)}),
        pytest.param("size", {"size": (512, 512, 512)}, marks=needs_mathdx),  # no cuBLASDx implementation
        ("precision", {"precision": np.int32}),
        ("data_type", {"data_type": "quaternion"}),
        ("arrangement", {"arrangement": "diagonal"}),
        ("arrangement", {"arrangement": ("row_major", "col_major")}),
        ("block_dim", {"block_dim": (2048, 1, 1)}),
        ("block_dim", {"block_dim": (0, 1, 1)}),
        ("leading_dimension", {"leading_dimension": (1, 2)}),
        ("sm", {"sm": (5, 2)}),
    ],
)
def test_bad_arguments_are_named(argument, kwargs):
    arguments = dict(size=(32, 32, 32), precision=np.float32, sm=H100)
    arguments.update(kwargs)
    with pytest.raises(OptionsError) as info:
        Matmul(**arguments)
    assert info.value.argument == argument, str(info.value)


@needs_mathdx
def test_tiles_larger_than_shared_memory_name_the_limit():
    with pytest.raises(OptionsError, match="232448") as info:
        Matmul((256, 256, 256), np.float64, sm=H100)
    assert info.value.argument == "size"


@needs_mathdx
def test_execute_outside_a_kernel_raises():
    with pytest.raises(RuntimeError, match="numba.cuda.jit"):
        Matmul((8, 8, 8), np.float32, sm=H100).execute(1.0, None, None, 0.0, None)
