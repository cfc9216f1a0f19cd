"""FFT device functions run in kernels of each Numba compiler and match numpy.fft (needs a GPU)."""

import math

import numpy as np
import pytest

from . import _kernels

pytestmark = pytest.mark.gpu

BLOCK_F32 = list(range(2, 65)) + [128, 256, 512, 1024, 4096, 16384]
BLOCK_F64 = [2, 3, 8, 17, 32, 64, 128, 1024, 4096, 16384]
INVERSE_F32 = [2, 7, 16, 63, 128, 1024, 4096]
THREAD = [2, 3, 4, 5, 8, 16, 32]
REAL = [8, 16, 64, 128, 1024, 4096]


def _specs():
    specs = [("c2c", "forward", "Block", n, np.float32) for n in BLOCK_F32]
    specs += [("c2c", "inverse", "Block", n, np.float32) for n in INVERSE_F32]
    specs += [("c2c", "forward", "Block", n, np.float64) for n in BLOCK_F64]
    specs += [
        ("c2c", d, "Thread", n, p) for n in THREAD for d in ("forward", "inverse") for p in (np.float32, np.float64)
    ]
    specs += [(t, None, "Block", n, p) for n in REAL for t in ("r2c", "c2r") for p in (np.float32, np.float64)]
    return specs


SPECS = _specs()


def _name(spec):
    fft_type, direction, execution, size, precision = spec
    return f"{fft_type}-{direction or ''}-{execution}-{size}-{np.dtype(precision).name}"


@pytest.fixture(scope="module")
def ffts():
    from nvmathx.device_api import FFT

    from ._warm import warm

    built = {spec: FFT(spec[3], spec[4], fft_type=spec[0], direction=spec[1], execution=spec[2]) for spec in SPECS}
    warm([(fft, "registers") for fft in built.values()])
    return built


def _launch(compiler, fft, kernel_factory, x, out_shape, out_dtype):
    from nvmathx.device_api import set_max_dynamic_shared_memory

    cuda = compiler.cuda
    # Launch bounds keep the registers within the block's share (16384 points in float64 needs it).
    kernel = cuda.jit(compiler.bind(kernel_factory(fft)), launch_bounds=fft.max_threads_per_block)
    x_d = cuda.to_device(x)
    y_d = cuda.device_array(out_shape, dtype=out_dtype)
    if fft.execution == "Thread":
        kernel[math.ceil(x.shape[0] / 64), 64](x_d, y_d)
    else:
        shared_form = kernel_factory is _kernels.block_c2c_shared
        smem = fft.shared_api_memory_size if shared_form else fft.shared_memory_size
        if smem > 48 * 1024:
            kernel.compile((kernel.typeof_pyval(x_d), kernel.typeof_pyval(y_d)))
            set_max_dynamic_shared_memory(kernel, smem)
        kernel[math.ceil(x.shape[0] / fft.ffts_per_block), fft.block_dim, 0, smem](x_d, y_d)
    cuda.synchronize()
    return y_d.copy_to_host()


def _tolerance(precision):
    return 1e-5 if np.dtype(precision) == np.float32 else 1e-12


@pytest.mark.parametrize("spec", SPECS, ids=_name)
def test_matches_numpy(compiler, ffts, spec):
    fft = ffts[spec]
    fft_type, direction, execution, size, precision = spec
    rng = np.random.default_rng(size)
    batch = 2 * fft.ffts_per_block + 1 if execution == "Block" else 70
    complex_dtype = np.result_type(precision, np.complex64)
    if fft_type == "c2c":
        x = (rng.standard_normal((batch, size)) + 1j * rng.standard_normal((batch, size))).astype(complex_dtype)
        factory = _kernels.block_c2c if execution == "Block" else _kernels.thread_c2c
        y = _launch(compiler, fft, factory, x, x.shape, complex_dtype)
        reference = (
            np.fft.fft(x.astype(np.complex128), axis=1)
            if direction == "forward"
            else np.fft.ifft(x.astype(np.complex128), axis=1) * size
        )
    elif fft_type == "r2c":
        x = rng.standard_normal((batch, size)).astype(precision)
        y = _launch(compiler, fft, _kernels.block_r2c, x, (batch, size // 2 + 1), complex_dtype)
        reference = np.fft.rfft(x.astype(np.float64), axis=1)
    else:
        signal = rng.standard_normal((batch, size))
        x = np.fft.rfft(signal, axis=1).astype(complex_dtype)
        y = _launch(compiler, fft, _kernels.block_c2r, x, (batch, size), precision)
        reference = np.fft.irfft(x.astype(np.complex128), n=size, axis=1) * size
    error = np.linalg.norm(y - reference) / np.linalg.norm(reference)
    assert error < _tolerance(precision) * max(1.0, math.log2(size)), f"relative error {error:.2e}"


@pytest.mark.parametrize("size", [16, 256, 1024])
def test_shared_memory_form_matches_numpy(compiler, size):
    from nvmathx.device_api import FFT

    fft = FFT(size, np.float32, direction="forward", elements_per_thread=min(8, size), ffts_per_block=2)
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((5, size)) + 1j * rng.standard_normal((5, size))).astype(np.complex64)
    y = _launch(compiler, fft, _kernels.block_c2c_shared, x, x.shape, np.complex64)
    reference = np.fft.fft(x.astype(np.complex128), axis=1)
    assert np.linalg.norm(y - reference) / np.linalg.norm(reference) < 1e-5


@pytest.mark.parametrize("size", [4, 16, 64, 1024, 4096, 32768])
@pytest.mark.parametrize("precision", [np.float32, np.float64])
def test_folded_real_transforms_match_numpy(compiler, rng, size, precision):
    from nvmathx.device_api import FFT

    if precision == np.float64 and size == 32768:
        pytest.skip("cuFFTDx has no 32768-point float64 real transform")
    complex_dtype = np.result_type(precision, np.complex64)
    r2c = FFT(size, precision, fft_type="r2c", real_mode="folded")
    assert (r2c.input_length, r2c.output_length) == (size // 2, size // 2 + 1)
    batch = 2 * r2c.ffts_per_block + 1
    x = rng.standard_normal((batch, size)).astype(precision)
    y = _launch(compiler, r2c, _kernels.block_r2c_folded, x, (batch, size // 2 + 1), complex_dtype)
    reference = np.fft.rfft(x.astype(np.float64), axis=1)
    tolerance = _tolerance(precision) * max(1.0, math.log2(size))
    assert np.linalg.norm(y - reference) / np.linalg.norm(reference) < tolerance

    c2r = FFT(size, precision, fft_type="c2r", real_mode="folded")
    half = reference.astype(complex_dtype)
    back = _launch(compiler, c2r, _kernels.block_c2r_folded, half, (batch, size), precision)
    expected = np.fft.irfft(half.astype(np.complex128), n=size, axis=1) * size
    assert np.linalg.norm(back - expected) / np.linalg.norm(expected) < tolerance


def test_small_r2c_runs(compiler):
    from nvmathx.device_api import FFT

    fft = FFT(16, np.float32, fft_type="r2c")
    x = np.random.default_rng(3).standard_normal((fft.ffts_per_block, 16)).astype(np.float32)
    y = _launch(compiler, fft, _kernels.block_r2c, x, (x.shape[0], 9), np.complex64)
    assert np.allclose(y, np.fft.rfft(x, axis=1), atol=1e-4)
