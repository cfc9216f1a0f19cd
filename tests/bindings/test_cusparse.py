"""The raw cuSPARSE bindings: status names, enum values, and (on a GPU) an SpMV and an SpMM made with
descriptors alone, without nvmathx.sparse."""

import ctypes
import pickle

import numpy as np
import pytest

from nvmathx._bindings import cusparse
from nvmathx._bindings._loader import LIBRARIES


def test_status_names_and_error_pickle():
    assert cusparse.status_name(3) == "CUSPARSE_STATUS_INVALID_VALUE"
    assert cusparse.status_name(10) == "CUSPARSE_STATUS_NOT_SUPPORTED"
    error = cusparse.CusparseError(10, "CUSPARSE_STATUS_NOT_SUPPORTED", "cusparseSpMM", "alg 12")
    assert "CUSPARSE_STATUS_NOT_SUPPORTED" in str(error) and "cusparseSpMM" in str(error)
    assert "CUSPARSE_LOG_LEVEL" in str(error)
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is cusparse.CusparseError and again.status == 10 and str(again) == str(error)
    with pytest.raises(cusparse.CusparseError, match="CUSPARSE_STATUS_ALLOC_FAILED"):
        cusparse.check(2, "cusparseCreate")
    cusparse.check(0, "cusparseCreate")


def test_enum_values_follow_cusparse_h():
    assert (cusparse.Order.COL, cusparse.Order.ROW) == (1, 2)
    assert (cusparse.IndexType.INDEX_32I, cusparse.IndexType.INDEX_64I) == (2, 3)
    assert (cusparse.SpMVAlg.CSR_ALG1, cusparse.SpMVAlg.CSR_ALG2) == (2, 3)
    assert (cusparse.SpMMAlg.CSR_ALG1, cusparse.SpMMAlg.CSR_ALG2, cusparse.SpMMAlg.CSR_ALG3) == (4, 6, 12)
    assert cusparse.DTYPE_NAMES["bfloat16"] == 14 and cusparse.DTYPE_NAMES["complex128"] == 5


def test_the_library_is_known_to_the_loader():
    spec = LIBRARIES["cusparse"]
    assert spec.env_var == "NVMATHX_CUSPARSE_PATH" and "nvidia-cusparse" in spec.pip_package


@pytest.mark.gpu
def test_spmv_and_spmm_with_descriptors(rng):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA")
    assert cusparse.get_version()[0] >= 11
    dense = np.where(rng.random((6, 5)) < 0.4, rng.standard_normal((6, 5)), 0.0)
    a = torch.from_numpy(dense).cuda().to_sparse_csr()
    crow, col, values = a.crow_indices(), a.col_indices(), a.values()
    x = torch.from_numpy(rng.standard_normal(5)).cuda()
    b = torch.from_numpy(rng.standard_normal((5, 3))).cuda()
    y, c = torch.empty(6, dtype=torch.float64, device="cuda"), torch.empty(6, 3, dtype=torch.float64, device="cuda")
    handle = cusparse.create()
    stream = torch.cuda.current_stream().cuda_stream
    cusparse.set_stream(handle, stream)
    r64 = cusparse.DataType.R_64F
    mat = cusparse.create_csr(6, 5, a._nnz(), crow.data_ptr(), col.data_ptr(), values.data_ptr(),
                              cusparse.IndexType.INDEX_64I, r64)
    vec_x, vec_y = cusparse.create_dn_vec(5, x.data_ptr(), r64), cusparse.create_dn_vec(6, y.data_ptr(), r64)
    mat_b = cusparse.create_dn_mat(5, 3, 3, b.data_ptr(), r64, cusparse.Order.ROW)
    mat_c = cusparse.create_dn_mat(6, 3, 3, c.data_ptr(), r64, cusparse.Order.ROW)
    alpha, beta = ctypes.c_double(1.0), ctypes.c_double(0.0)
    pa, pb = ctypes.addressof(alpha), ctypes.addressof(beta)
    no = cusparse.Operation.NON_TRANSPOSE
    try:
        size = cusparse.spmv_buffer_size(handle, no, pa, mat, vec_x, pb, vec_y, r64, cusparse.SpMVAlg.DEFAULT)
        spmv_buffer = torch.empty(max(size, 1), dtype=torch.uint8, device="cuda")
        cusparse.spmv(handle, no, pa, mat, vec_x, pb, vec_y, r64, cusparse.SpMVAlg.DEFAULT, spmv_buffer.data_ptr())
        size = cusparse.spmm_buffer_size(handle, no, no, pa, mat, mat_b, pb, mat_c, r64, cusparse.SpMMAlg.DEFAULT)
        buffer = torch.empty(max(size, 1), dtype=torch.uint8, device="cuda")
        cusparse.spmm_preprocess(handle, no, no, pa, mat, mat_b, pb, mat_c, r64, cusparse.SpMMAlg.DEFAULT,
                                 buffer.data_ptr())
        cusparse.spmm(handle, no, no, pa, mat, mat_b, pb, mat_c, r64, cusparse.SpMMAlg.DEFAULT, buffer.data_ptr())
        torch.cuda.synchronize()
        np.testing.assert_allclose(y.cpu().numpy(), dense @ x.cpu().numpy(), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(c.cpu().numpy(), dense @ b.cpu().numpy(), rtol=1e-12, atol=1e-12)
        # new values through the setters
        x.mul_(2.0)
        cusparse.dn_vec_set_values(vec_x, x.data_ptr())
        cusparse.csr_set_pointers(mat, crow.data_ptr(), col.data_ptr(), values.data_ptr())
        cusparse.spmv(handle, no, pa, mat, vec_x, pb, vec_y, r64, cusparse.SpMVAlg.DEFAULT, spmv_buffer.data_ptr())
        torch.cuda.synchronize()
        np.testing.assert_allclose(y.cpu().numpy(), dense @ x.cpu().numpy(), rtol=1e-12, atol=1e-12)
        # the prepared calls read alpha where it lives at each call
        alpha.value = -3.0
        cusparse.spmv_prepared(handle, no, pa, mat, vec_x, pb, vec_y, r64, cusparse.SpMVAlg.DEFAULT,
                               spmv_buffer.data_ptr())()
        cusparse.spmm_prepared(handle, no, no, pa, mat, mat_b, pb, mat_c, r64, cusparse.SpMMAlg.DEFAULT,
                               buffer.data_ptr())()
        torch.cuda.synchronize()
        np.testing.assert_allclose(y.cpu().numpy(), -3.0 * dense @ x.cpu().numpy(), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(c.cpu().numpy(), -3.0 * dense @ b.cpu().numpy(), rtol=1e-12, atol=1e-12)
        with pytest.raises(cusparse.CusparseError, match="cusparseSpMV"):  # a NULL handle
            cusparse.spmv_prepared(0, no, pa, mat, vec_x, pb, vec_y, r64, cusparse.SpMVAlg.DEFAULT,
                                   spmv_buffer.data_ptr())()
    finally:
        cusparse.destroy_dn_mat(mat_c)
        cusparse.destroy_dn_mat(mat_b)
        cusparse.destroy_dn_vec(vec_y)
        cusparse.destroy_dn_vec(vec_x)
        cusparse.destroy_sp_mat(mat)
        cusparse.destroy(handle)
