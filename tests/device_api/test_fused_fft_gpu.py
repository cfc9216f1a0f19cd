"""The fused FFT kernel on a GPU: rows loaded, transformed, scaled and stored in one launch, against
numpy in float64 (C-contiguous and strided rows, a ragged last block, both precisions)."""

import numpy as np
import pytest

from helpers.requirements import needs_mathdx
from nvmathx._codegen import fused_fft

pytestmark = [pytest.mark.gpu, needs_mathdx]


def _launch(kernel, x_in, x_out, rows, in_strides, out_strides, scale, real):
    from cuda.core import Device, LaunchConfig, ObjectCode, launch

    device = Device()
    device.set_current()
    function = ObjectCode.from_cubin(kernel.cubin).get_kernel(kernel.symbol)
    stream = device.create_stream()
    blocks = -(-rows // kernel.ffts_per_block)
    config = LaunchConfig(grid=blocks, block=kernel.block_dim, shmem_size=kernel.shared_memory_size)
    pointers = [np.uint64(array.__cuda_array_interface__["data"][0]) for array in (x_in, x_out)]
    launch(stream, config, function, *pointers, np.int64(rows), *map(np.int64, in_strides), *map(np.int64, out_strides),
           real(scale), np.uint64(0), np.uint64(0))  # no callbacks: no user data
    stream.sync()


@pytest.mark.parametrize("precision, tolerance", [(np.float32, 2e-6), (np.float64, 1e-14)])
@pytest.mark.parametrize("size, elements_per_thread, ffts_per_block", [(64, 4, 4), (1024, 8, 2), (2048, 16, 1)])
@pytest.mark.parametrize("direction", ["forward", "inverse"])
def test_rows_match_numpy(rng, precision, tolerance, size, elements_per_thread, ffts_per_block, direction):
    cupy = pytest.importorskip("cupy")
    from nvmathx.device_api import FFT

    fft = FFT(size, precision, direction=direction, elements_per_thread=elements_per_thread,
              ffts_per_block=ffts_per_block)
    kernel = fused_fft.fused_kernel(fft)
    complex_type = np.complex64 if precision == np.float32 else np.complex128
    rows = 3 * ffts_per_block + 1  # the last block holds one row
    x = (rng.standard_normal((rows, size)) + 1j * rng.standard_normal((rows, size))).astype(complex_type)
    expected = np.fft.fft(x.astype(np.complex128)) if direction == "forward" else np.fft.ifft(x) * size
    scale = 0.5
    out = cupy.zeros_like(cupy.asarray(x))
    _launch(kernel, cupy.asarray(x), out, rows, (size, 1), (size, 1), scale, precision)
    error = np.abs(out.get() - scale * expected).max() / np.abs(expected).max()
    assert error < tolerance * np.log2(size)


def test_strided_rows_and_columns(rng):
    cupy = pytest.importorskip("cupy")
    from nvmathx.device_api import FFT

    size, rows = 256, 5
    fft = FFT(size, np.float64, direction="forward", elements_per_thread=4, ffts_per_block=2)
    kernel = fused_fft.fused_kernel(fft)
    # transform along axis 0 of a (size, rows) array: element stride rows, row stride 1
    x = rng.standard_normal((size, rows)) + 1j * rng.standard_normal((size, rows))
    out = cupy.zeros((size, rows), np.complex128)
    _launch(kernel, cupy.asarray(x), out, rows, (1, rows), (1, rows), 1.0, np.float64)
    np.testing.assert_allclose(out.get(), np.fft.fft(x, axis=0), rtol=0, atol=1e-12 * np.abs(x).sum(axis=0).max())
