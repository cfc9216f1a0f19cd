"""The fused FFT kernel's code generation (groundwork of the fused engine, no GPU needed): its CUDA
C++, its link with the cuFFTDx function into an sm_90 cubin, and its place in the disk cache."""

import numpy as np
import pytest

from helpers.requirements import needs_mathdx
from nvmathx._codegen import fused_fft

pytestmark = needs_mathdx


def _fft(size=256, precision=np.float32, direction="forward", elements_per_thread=4, ffts_per_block=2):
    from nvmathx.device_api import FFT

    return FFT(size, precision, direction=direction, elements_per_thread=elements_per_thread,
               ffts_per_block=ffts_per_block, sm=(9, 0))


@pytest.mark.parametrize("element, c_element, c_real", [("complex64", "float2", "float"),
                                                        ("complex128", "double2", "double")])
def test_source_loads_transforms_scales_and_stores_a_row(element, c_element, c_real):
    source = fused_fft.kernel_source("kernel", "cufftdx_f", element=element, size=1000, stride=125,
                                     elements_per_thread=8, storage=8, ffts_per_block=2, threads=250)
    assert f'extern "C" __device__ void cufftdx_f({c_element}* thread_data, {c_element}* shared);' in source
    assert "__launch_bounds__(250) kernel(" in source and f"{c_real} scale)" in source
    assert "const unsigned position = threadIdx.x + i * 125u;" in source
    assert "position < 1000u ? source[position * in_element_stride]" in source  # a short row reads zeros
    assert f"{c_element}{{value.x * scale, value.y * scale}}" in source
    assert source.index("cufftdx_f(thread_data") < source.index("if (!active) return;")  # every row transforms


def test_kernel_links_with_cufftdx_and_is_cached():
    fft = _fft()
    kernel = fused_fft.fused_kernel(fft)
    assert kernel.symbol.startswith("nvmathx_fused_fft_") and kernel.symbol.encode() in kernel.cubin
    assert kernel.cubin[:4] == b"\x7fELF"
    assert (kernel.block_dim, kernel.ffts_per_block) == (tuple(fft.block_dim), 2)
    assert kernel.shared_memory_size == fft.shared_memory_size >= 2 * 256 * 8
    assert fused_fft.fused_kernel(_fft()) == kernel  # the same kernel, from the cache


def test_each_transform_has_its_own_kernel():
    forward = fused_fft.fused_kernel(_fft())
    inverse = fused_fft.fused_kernel(_fft(direction="inverse"))
    double = fused_fft.fused_kernel(_fft(precision=np.float64))
    assert len({forward.symbol, inverse.symbol, double.symbol}) == 3
