"""``FFT.load`` / ``FFT.store`` in kernels of each Numba compiler, against numpy.fft (needs a GPU):
ragged batches, rows shorter and longer than the transform, a 1-D array as one row."""

import math

import numpy as np
import pytest

from . import _kernels

pytestmark = pytest.mark.gpu

SENTINEL = 1234.5 - 678.25j
# (size, precision, direction): sizes that fill the stride exactly and sizes that do not
CASES = [(7, np.float32, "forward"), (17, np.float32, "forward"), (63, np.float32, "inverse"),
         (128, np.float32, "forward"), (1024, np.float32, "forward"), (4096, np.float32, "inverse"),
         (17, np.float64, "forward"), (1024, np.float64, "inverse")]  # fmt: skip


def _name(case):
    size, precision, direction = case
    return f"{size}-{np.dtype(precision).name}-{direction}"


def _reference(x, size, direction):
    x = x.astype(np.complex128)
    return np.fft.fft(x, n=size, axis=-1) if direction == "forward" else np.fft.ifft(x, n=size, axis=-1) * size


def _complex(rng, shape, dtype):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def _tolerance(precision, size):
    return (1e-5 if np.dtype(precision) == np.float32 else 1e-12) * max(1.0, math.log2(size))


def _error(got, expected):
    return np.linalg.norm(got - expected) / np.linalg.norm(expected)


@pytest.mark.parametrize("case", CASES, ids=_name)
@pytest.mark.parametrize("lengths", ["exact", "short-in-long-out"])
def test_rows_match_numpy(compiler, rng, case, lengths):
    from nvmathx.device_api import FFT

    size, precision, direction = case
    cuda = compiler.cuda
    fft = FFT(size, precision, direction=direction)
    dtype = np.dtype(fft.value_type)
    batch = 3 * fft.ffts_per_block + 1  # the last block has rows past the arrays
    in_length, out_length = (size, size) if lengths == "exact" else (max(1, size - 3), size + 2)
    x = _complex(rng, (batch, in_length), dtype)
    # y has a row more than the kernel may write, and columns past the transform: both stay SENTINEL
    y_full = np.full((batch + 1, out_length), SENTINEL, dtype)
    y_d = cuda.to_device(y_full)
    kernel = cuda.jit(compiler.bind(_kernels.block_rows(fft)), launch_bounds=fft.max_threads_per_block)
    grid = math.ceil((batch + 1) / fft.ffts_per_block)
    kernel[grid, fft.block_dim, 0, fft.shared_memory_size](cuda.to_device(x), y_d[:batch])
    cuda.synchronize()
    y = y_d.copy_to_host()

    assert _error(y[:batch, :size], _reference(x, size, direction)) < _tolerance(precision, size)
    assert np.all(y[:batch, size:] == SENTINEL), "store wrote past the transform's length"
    assert np.all(y[batch] == SENTINEL), "store wrote a row outside the destination"


@pytest.mark.parametrize("precision", [np.float32, np.float64])
def test_a_vector_is_one_row(compiler, rng, precision):
    from nvmathx.device_api import FFT

    cuda = compiler.cuda
    fft = FFT(64, precision, direction="forward", elements_per_thread=4, ffts_per_block=2)
    dtype = np.dtype(fft.value_type)
    x = _complex(rng, 64, dtype)
    y_d = cuda.to_device(np.full(64, SENTINEL, dtype))
    kernel = cuda.jit(compiler.bind(_kernels.block_c2c_vector_rows(fft)))
    kernel[1, fft.block_dim, 0, fft.shared_memory_size](cuda.to_device(x), y_d)
    cuda.synchronize()
    assert _error(y_d.copy_to_host(), _reference(x, 64, "forward")) < _tolerance(precision, 64)


@pytest.mark.parametrize("size, real_mode", [(16, "normal"), (30, "normal"), (1000, "normal"), (4096, "normal"),
                                             (16, "folded"), (1024, "folded"), (4096, "folded")])
@pytest.mark.parametrize("precision", [np.float32, np.float64])
def test_real_rows_match_numpy(compiler, rng, size, real_mode, precision):
    """r2c reads real rows and writes size // 2 + 1 complex values; c2r the reverse; in both real
    modes (folded keeps two reals per register and one more complex position than it has
    elements per thread)."""
    from nvmathx.device_api import FFT

    cuda = compiler.cuda
    complex_dtype = np.result_type(precision, np.complex64)
    half = size // 2 + 1
    r2c = FFT(size, precision, fft_type="r2c", real_mode=real_mode)
    batch = 2 * r2c.ffts_per_block + 1
    x = rng.standard_normal((batch, size)).astype(precision)
    spectrum = cuda.to_device(np.full((batch, half + 1), SENTINEL, complex_dtype))  # a column past the transform
    _launch_rows(compiler, r2c, cuda.to_device(x), spectrum, batch)
    got = spectrum.copy_to_host()
    reference = np.fft.rfft(x.astype(np.float64), axis=1)
    assert _error(got[:, :half], reference) < _tolerance(precision, size)
    assert np.all(got[:, half:] == SENTINEL)

    c2r = FFT(size, precision, fft_type="c2r", real_mode=real_mode)
    back = cuda.to_device(np.full((batch, size), np.nan, precision))
    _launch_rows(compiler, c2r, cuda.to_device(reference.astype(complex_dtype)), back, batch)
    assert _error(back.copy_to_host() / size, x) < _tolerance(precision, size)


def _launch_rows(compiler, fft, source, destination, batch):
    """``block_rows`` over ``batch`` rows, opting into more than 48 KiB of shared memory where needed."""
    from nvmathx.device_api import set_max_dynamic_shared_memory

    cuda = compiler.cuda
    kernel = cuda.jit(compiler.bind(_kernels.block_rows(fft)), launch_bounds=fft.max_threads_per_block)
    if fft.shared_memory_size > 48 * 1024:
        kernel.compile((kernel.typeof_pyval(source), kernel.typeof_pyval(destination)))
        set_max_dynamic_shared_memory(kernel, fft.shared_memory_size)
    kernel[math.ceil(batch / fft.ffts_per_block), fft.block_dim, 0, fft.shared_memory_size](source, destination)
    cuda.synchronize()
