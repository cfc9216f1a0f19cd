"""Raw cuSOLVER and cuBLAS bindings against the loaded libraries (needs a GPU): versions, handles,
an LU solve through the 64-bit and the legacy API, a batched LU and a triangular solve, checked against numpy."""

import ctypes

import numpy as np
import pytest

from helpers.torch_cuda import torch_with_cuda
from nvmathx._bindings import cublas, cusolver

pytestmark = pytest.mark.gpu


def _column_major(torch, host):
    return torch.from_numpy(np.asfortranarray(host).T.copy()).cuda()  # rows of the tensor are columns


def test_versions_and_handles():
    torch = torch_with_cuda()
    torch.cuda.init()
    assert cusolver.get_version() >= 11000
    handle = cublas.create()
    try:
        assert cublas.get_version(handle) >= 110000
    finally:
        cublas.destroy(handle)
    handle, params = cusolver.create(), cusolver.create_params()
    cusolver.destroy_params(params)
    cusolver.destroy(handle)


def test_xgetrf_xgetrs_solve(rng):
    torch = torch_with_cuda()
    n, k = 7, 2
    a = rng.standard_normal((n, n)) + n * np.eye(n)
    b = rng.standard_normal((n, k))
    a_d, b_d = _column_major(torch, a), _column_major(torch, b)
    ipiv = torch.zeros(n, dtype=torch.int64, device="cuda")
    info = torch.full((2,), -1, dtype=torch.int32, device="cuda")
    stream = torch.cuda.current_stream().cuda_stream
    handle, params = cusolver.create(), cusolver.create_params()
    try:
        cusolver.set_stream(handle, stream)
        device_bytes, host_bytes = cusolver.xgetrf_buffer_size(handle, params, n, "float64", a_d.data_ptr(), n)
        work = torch.empty(max(device_bytes, 1), dtype=torch.uint8, device="cuda")
        host = ctypes.create_string_buffer(max(host_bytes, 1))
        cusolver.xgetrf(handle, params, n, "float64", a_d.data_ptr(), n, ipiv.data_ptr(), work.data_ptr(),
                        device_bytes, ctypes.addressof(host), host_bytes, info.data_ptr())
        cusolver.xgetrs(handle, params, cusolver.Operation.N, n, k, "float64", a_d.data_ptr(), n, ipiv.data_ptr(),
                        b_d.data_ptr(), n, info.data_ptr() + 4)
        torch.cuda.synchronize()
    finally:
        cusolver.destroy_params(params)
        cusolver.destroy(handle)
    assert info.tolist() == [0, 0]
    np.testing.assert_allclose(b_d.cpu().numpy().T, np.linalg.solve(a, b), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "complex128"])
def test_legacy_getrf_getrs_solve(rng, dtype):
    torch = torch_with_cuda()
    n, k = 9, 3
    a = (rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n)) + n * np.eye(n)).astype(dtype)
    b = (rng.standard_normal((n, k)) + 1j * rng.standard_normal((n, k))).astype(dtype)
    a_d, b_d = _column_major(torch, a), _column_major(torch, b)
    ipiv = torch.zeros(n, dtype=torch.int32, device="cuda")
    info = torch.full((2,), -1, dtype=torch.int32, device="cuda")
    handle = cusolver.create()
    try:
        cusolver.set_stream(handle, torch.cuda.current_stream().cuda_stream)
        work = torch.empty(max(cusolver.getrf_buffer_size(handle, n, dtype, a_d.data_ptr(), n), 1), dtype=torch.uint8,
                           device="cuda")
        cusolver.getrf(handle, n, dtype, a_d.data_ptr(), n, work.data_ptr(), ipiv.data_ptr(), info.data_ptr())
        cusolver.getrs(handle, cusolver.Operation.T, n, k, dtype, a_d.data_ptr(), n, ipiv.data_ptr(), b_d.data_ptr(),
                       n, info.data_ptr() + 4)
        torch.cuda.synchronize()
    finally:
        cusolver.destroy(handle)
    assert info.tolist() == [0, 0]
    tolerance = 1e-4 if dtype == "float32" else 1e-10
    np.testing.assert_allclose(b_d.cpu().numpy().T, np.linalg.solve(a.T, b), rtol=tolerance, atol=tolerance)


def test_batched_lu_and_trsm(rng):
    torch = torch_with_cuda()
    batch, n = 3, 5
    a = rng.standard_normal((batch, n, n)).astype(np.float32) + n * np.eye(n, dtype=np.float32)
    b = rng.standard_normal((batch, n, 1)).astype(np.float32)
    a_d = torch.from_numpy(np.swapaxes(a, -1, -2).copy()).cuda()  # column-major matrices
    x_d = torch.from_numpy(np.swapaxes(b, -1, -2).copy()).cuda()
    pointers = lambda t, step: torch.tensor([t.data_ptr() + i * step for i in range(batch)],  # noqa: E731
                                            dtype=torch.int64, device="cuda")
    a_ptrs, x_ptrs = pointers(a_d, n * n * 4), pointers(x_d, n * 4)
    pivots = torch.zeros(batch * n, dtype=torch.int32, device="cuda")
    info = torch.full((batch,), -1, dtype=torch.int32, device="cuda")
    handle = cublas.create()
    try:
        cublas.set_stream(handle, torch.cuda.current_stream().cuda_stream)
        cublas.getrf_batched(handle, n, "float32", a_ptrs.data_ptr(), n, pivots.data_ptr(), info.data_ptr(), batch)
        cublas.getrs_batched(handle, cublas.Operation.N, n, 1, "float32", a_ptrs.data_ptr(), n, pivots.data_ptr(),
                             x_ptrs.data_ptr(), n, batch)
        torch.cuda.synchronize()
        assert info.tolist() == [0] * batch
        np.testing.assert_allclose(np.swapaxes(x_d.cpu().numpy(), -1, -2), np.linalg.solve(a, b), rtol=1e-4, atol=1e-5)
        lower = np.tril(a[0]) + n * np.eye(n, dtype=np.float32)
        l_d = torch.from_numpy(lower.T.copy()).cuda()
        y_d = torch.from_numpy(b[0].T.copy()).cuda()
        cublas.trsm(handle, cublas.SideMode.LEFT, cublas.FillMode.LOWER, cublas.Operation.T, cublas.DiagType.NON_UNIT,
                    n, 1, "float32", l_d.data_ptr(), n, y_d.data_ptr(), n)
        torch.cuda.synchronize()
        np.testing.assert_allclose(y_d.cpu().numpy().T, np.linalg.solve(lower.T, b[0]), rtol=1e-4, atol=1e-5)
    finally:
        cublas.destroy(handle)


def test_bad_argument_is_a_typed_error():
    torch_with_cuda()
    handle = cublas.create()
    try:
        with pytest.raises(cublas.CublasError) as info:
            cublas.getrf_batched(handle, -1, "float64", 0, 1, 0, 0, 1)
        assert info.value.status_name == "CUBLAS_STATUS_INVALID_VALUE"
    finally:
        cublas.destroy(handle)
