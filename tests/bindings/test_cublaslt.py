"""Raw cuBLASLt bindings against the loaded library: version, constants, a handle, a heuristic
query and a small matmul."""

import ctypes

import numpy as np
import pytest

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def lt():
    from nvmathx._bindings import cublaslt

    return cublaslt


def test_version_and_status_names(lt):
    version = lt.get_version()
    assert version >= 110000
    assert lt.status_name(15) == "CUBLAS_STATUS_NOT_SUPPORTED"
    error = lt.CublasLtError(15, lt.status_name(15), "cublasLtMatmul")
    assert "CUBLAS_STATUS_NOT_SUPPORTED" in str(error) and "CUBLASLT_LOG_LEVEL" in str(error)
    import pickle

    assert pickle.loads(pickle.dumps(error)).status_name == "CUBLAS_STATUS_NOT_SUPPORTED"


def test_attribute_sizes_are_accepted(lt):
    desc = lt.matmul_desc_create(lt.ComputeType.COMPUTE_32F, lt.DataType.R_32F)
    try:
        for attribute, value in ((lt.MatmulDescAttribute.TRANSA, 1),
                                 (lt.MatmulDescAttribute.EPILOGUE, lt.Epilogue.GELU_BIAS),
                                 (lt.MatmulDescAttribute.BIAS_POINTER, 256),
                                 (lt.MatmulDescAttribute.EPILOGUE_AUX_LD, 128),
                                 (lt.MatmulDescAttribute.SM_COUNT_TARGET, 8), (lt.MatmulDescAttribute.FAST_ACCUM, 1)):
            lt.matmul_desc_set(desc, attribute, value)
        wrong_size = ctypes.c_int64(1)  # TRANSA is an int32: cuBLASLt checks the size it is given
        status = lt._lib()["cublasLtMatmulDescSetAttribute"](
            desc, int(lt.MatmulDescAttribute.TRANSA), ctypes.byref(wrong_size), 8)
        with pytest.raises(lt.CublasLtError) as info:
            lt.check(status, "cublasLtMatmulDescSetAttribute")
        assert info.value.status_name == "CUBLAS_STATUS_INVALID_VALUE"
    finally:
        lt.matmul_desc_destroy(desc)


def test_handle_heuristic_and_matmul(rng, lt):
    from nvmathx._core.device import ensure_device
    from nvmathx._core.streams import resolve_stream

    device = ensure_device(0)
    stream = resolve_stream(None, 0)
    handle = lt.create()
    m, n, k = 32, 24, 16
    a = rng.standard_normal((m, k)).astype(np.float32, order="F")  # column-major, as cuBLASLt reads it
    b = rng.standard_normal((k, n)).astype(np.float32, order="F")
    buffers = [device.allocate(nbytes, stream=stream.core) for nbytes in (a.nbytes, b.nbytes, m * n * 4)]
    from nvmathx._bindings.cuda_driver import memcpy_async, stream_synchronize

    for buffer, host in zip(buffers, (a, b)):
        memcpy_async(int(buffer.handle), host.ctypes.data, host.nbytes, stream.handle)
    desc = lt.matmul_desc_create(lt.ComputeType.COMPUTE_32F, lt.DataType.R_32F)
    layouts = [lt.matrix_layout_create(lt.DataType.R_32F, rows, cols, rows) for rows, cols in ((m, k), (k, n), (m, n))]
    preference = lt.preference_create()
    try:
        results = lt.algo_get_heuristic(handle, desc, layouts[0], layouts[1], layouts[2], layouts[2], preference, 4)
        assert results and results[0].state == 0 and results[0].workspaceSize == 0
        checked = lt.algo_check(handle, desc, layouts[0], layouts[1], layouts[2], layouts[2], bytes(results[0].algo))
        assert checked.workspaceSize == 0
        alpha, beta = np.ones(1, np.float32), np.zeros(1, np.float32)
        algo = (ctypes.c_uint64 * 8)(*results[0].algo)
        pa, pb, pd = (int(buffer.handle) for buffer in buffers)
        lt.matmul(handle, desc, alpha.ctypes.data, pa, layouts[0], pb, layouts[1], beta.ctypes.data, pd, layouts[2], pd,
                  layouts[2], ctypes.addressof(algo), 0, 0, stream.handle)
        d = np.empty((m, n), np.float32, order="F")
        memcpy_async(d.ctypes.data, pd, d.nbytes, stream.handle)
        stream_synchronize(stream.handle)
        expected = a.astype(np.float64) @ b
        assert np.linalg.norm(d - expected) / np.linalg.norm(expected) < 1e-5  # float32: norm-wise
    finally:
        lt.preference_destroy(preference)
        for layout in layouts:
            lt.matrix_layout_destroy(layout)
        lt.matmul_desc_destroy(desc)
        for buffer in buffers:
            buffer.close(stream.core)
        lt.destroy(handle)
