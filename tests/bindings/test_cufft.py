"""The raw cuFFT bindings: a plan made, executed and destroyed without nvmathx.fft."""

import ctypes

import numpy as np
import pytest

from nvmathx._bindings import cufft


def test_result_names_and_error_pickle():
    import pickle

    assert cufft.status_name(8) == "CUFFT_INVALID_SIZE"
    assert cufft.status_name(999) == "CUFFT_RESULT_999"
    error = cufft.CufftError(16, "CUFFT_NOT_SUPPORTED", "cufftMakePlanMany64", "n=(3,)")
    assert "CUFFT_NOT_SUPPORTED" in str(error) and "cufftMakePlanMany64" in str(error)
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is cufft.CufftError and again.status == 16 and str(again) == str(error)
    with pytest.raises(cufft.CufftError, match="CUFFT_INVALID_VALUE"):
        cufft.check(4, "cufftSetStream")
    cufft.check(0, "cufftSetStream")


@pytest.mark.gpu
def test_get_version():
    version = cufft.get_version()
    assert version >= 10000  # cuFFT 10.0 or later (12000 = cuFFT 12.0 of CUDA 13)


@pytest.mark.gpu
def test_plan_exec_destroy(rng):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA")
    batch, n = 8, 64
    host = (rng.standard_normal((batch, n)) + 1j * rng.standard_normal((batch, n))).astype(np.complex64)
    x = torch.from_numpy(host).cuda()
    y = torch.empty_like(x)
    plan = cufft.create()
    try:
        cufft.set_auto_allocation(plan, False)
        work = cufft.make_plan_many64(plan, [n], [n], 1, n, [n], 1, n, cufft.Type.C2C, batch)
        workspace = torch.empty(max(work, 1), dtype=torch.uint8, device="cuda")
        cufft.set_work_area(plan, workspace.data_ptr())
        cufft.set_stream(plan, torch.cuda.current_stream().cuda_stream)
        cufft.execute(plan, cufft.Type.C2C, x.data_ptr(), y.data_ptr(), cufft.FORWARD)
        # The argtypes-free function of the hot path, given prepared ctypes objects.
        raw, takes_direction, name = cufft.raw_exec_function(cufft.Type.C2C)
        assert takes_direction and name == "cufftExecC2C"
        z = torch.empty_like(x)
        status = raw(ctypes.c_int(plan), ctypes.c_void_p(x.data_ptr()), ctypes.c_void_p(z.data_ptr()),
                     ctypes.c_int(cufft.INVERSE))
        cufft.check(status, name)
        torch.cuda.synchronize()
    finally:
        cufft.destroy(plan)
    reference = np.fft.fft(host.astype(np.complex128), axis=-1)
    error = np.linalg.norm(y.cpu().numpy() - reference) / np.linalg.norm(reference)
    assert error < 1e-6
    inverse = np.fft.ifft(host.astype(np.complex128), axis=-1) * n
    assert np.linalg.norm(z.cpu().numpy() - inverse) / np.linalg.norm(inverse) < 1e-6


@pytest.mark.gpu
def test_invalid_size_raises_typed_error():
    plan = cufft.create()
    try:
        with pytest.raises(cufft.CufftError) as info:
            cufft.make_plan_many64(plan, [0], [0], 1, 1, [0], 1, 1, cufft.Type.C2C, 1)
        assert info.value.status_name.startswith("CUFFT_")
    finally:
        cufft.destroy(plan)
