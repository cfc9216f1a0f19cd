"""Matmul device functions run in kernels of each Numba compiler and match numpy (needs a GPU)."""

import numpy as np
import pytest

from . import _kernels

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize(
    "size, precision, data_type",
    [
        ((32, 32, 32), np.float32, "real"),
        ((16, 24, 8), np.float64, "real"),
        ((16, 16, 16), np.float32, "complex"),
        ((64, 32, 16), np.float32, "real"),
    ],
)
def test_block_gemm_matches_numpy(compiler, size, precision, data_type):
    from nvmathx.device_api import Matmul

    gemm = Matmul(size, precision, data_type=data_type)
    m, n, k = size
    rng = np.random.default_rng(sum(size))
    dtype = gemm.value_dtype

    def random(shape):
        values = rng.standard_normal(shape)
        if dtype.kind == "c":
            values = values + 1j * rng.standard_normal(shape)
        return values.astype(dtype)

    a, b, c = random((m, k)), random((k, n)), random((m, n))
    alpha, beta = 1.5, -0.5
    cuda = compiler.cuda
    c_d = cuda.to_device(c)
    kernel = cuda.jit(compiler.bind(_kernels.block_gemm(gemm)))
    kernel[1, gemm.block_dim, 0, gemm.shared_memory_size](cuda.to_device(a), cuda.to_device(b), c_d, alpha, beta)
    result = c_d.copy_to_host()
    reference = alpha * (a.astype(np.complex128) @ b) + beta * c
    tolerance = 1e-5 if np.dtype(precision) == np.float32 else 1e-12
    assert np.linalg.norm(result - reference) / np.linalg.norm(reference) < tolerance
