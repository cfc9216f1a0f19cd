"""nvmathx and nvmath-python in one process, on the same CuPy arrays and stream: each runs a matmul
and an FFT, and both agree with numpy (the two share libmathdx, cuBLASLt and cuFFT there)."""

import numpy as np
import pytest

pytestmark = pytest.mark.gpu


def test_nvmathx_and_nvmath_python_share_a_process_arrays_and_a_stream(rng):
    cupy = pytest.importorskip("cupy")
    nvmath_fft = pytest.importorskip("nvmath.fft")
    nvmath_matmul = pytest.importorskip("nvmath.linalg.advanced").matmul
    from importlib.metadata import version

    import nvmathx.fft
    import nvmathx.linalg

    a_host = rng.standard_normal((64, 48)).astype(np.float32)
    b_host = rng.standard_normal((48, 32)).astype(np.float32)
    x_host = (rng.standard_normal((4, 256)) + 1j * rng.standard_normal((4, 256))).astype(np.complex64)
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        a, b, x = cupy.asarray(a_host), cupy.asarray(b_host), cupy.asarray(x_host)
        ours = nvmathx.linalg.matmul(a, b, stream=stream)
        theirs = nvmath_matmul(a, b, stream=stream)
        our_fft = nvmathx.fft.fft(x)
        their_fft = nvmath_fft.fft(x, axes=[-1], stream=stream)  # (its default: every axis)
        stream.synchronize()
    product = a_host.astype(np.float64) @ b_host.astype(np.float64)
    spectrum = np.fft.fft(x_host.astype(np.complex128), axis=-1)
    for name, result in (("nvmathx matmul", ours), ("nvmath-python matmul", theirs)):
        assert isinstance(result, cupy.ndarray), name
        assert np.linalg.norm(cupy.asnumpy(result) - product) <= 1e-5 * np.linalg.norm(product), name
    for name, result in (("nvmathx fft", our_fft), ("nvmath-python fft", their_fft)):
        assert isinstance(result, cupy.ndarray), name
        assert np.linalg.norm(cupy.asnumpy(result) - spectrum) <= 1e-5 * np.linalg.norm(spectrum), name
    assert version("nvmath-python").startswith("1.0")
