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


_C2C_1000 = dict(input_length=1000, output_length=1000, stride=125, input_count=8, output_count=8, storage=8,
                 ffts_per_block=2, threads=250)


@pytest.mark.parametrize("element, c_element, c_real", [("complex64", "float2", "float"),
                                                        ("complex128", "double2", "double")])
def test_source_loads_transforms_scales_and_stores_a_row(element, c_element, c_real):
    source = fused_fft.kernel_source("kernel", "cufftdx_f", element=element, input=element, output=element,
                                     **_C2C_1000)
    assert f'extern "C" __device__ void cufftdx_f({c_element}* thread_data, {c_element}* shared);' in source
    assert f"__launch_bounds__(250) kernel(\n    const {c_element}* in, {c_element}* out," in source
    assert f"{c_real} scale, void* load_info, void* store_info)" in source
    assert "const unsigned position = threadIdx.x + i * 125u;" in source
    assert "const long long offset = row * in_row_stride + position * in_element_stride;" in source
    assert f"position < 1000u ? in[offset] : {c_element}{{}}" in source  # a short row reads zeros
    assert f"out[offset] = {c_element}{{value.x * scale, value.y * scale}}" in source
    assert source.index("cufftdx_f(thread_data") < source.index("if (!active) return;")  # every row transforms


def test_source_of_real_transforms_uses_the_real_register_layout():
    r2c = fused_fft.kernel_source("kernel", "f", element="complex64", input="float32", output="complex64",
                                  input_length=1024, output_length=513, stride=32, input_count=32, output_count=32,
                                  storage=32, ffts_per_block=2, threads=64)
    assert "const float* in, float2* out" in r2c
    assert "float* const loaded = reinterpret_cast<float*>(thread_data);" in r2c
    assert "loaded[i] = active && position < 1024u ? in[offset] : float{};" in r2c
    assert "if (position < 513u)" in r2c and "out[offset] = float2{value.x * scale, value.y * scale}" in r2c
    c2r = fused_fft.kernel_source("kernel", "f", element="complex128", input="complex128", output="float64",
                                  input_length=513, output_length=1024, stride=32, input_count=32, output_count=32,
                                  storage=32, ffts_per_block=2, threads=64, store="user_store")
    assert "const double2* in, double* out" in c2r
    assert "const double* const results = reinterpret_cast<const double*>(thread_data);" in c2r
    assert 'extern "C" __device__ void user_store(void*, unsigned long long, double, void*, void*);' in c2r
    assert "user_store(out, (unsigned long long)offset, value * scale, store_info, nullptr)" in c2r


@pytest.mark.parametrize("fft_type", ["r2c", "c2r"])
def test_real_kernels_link(fft_type):
    from nvmathx.device_api import FFT

    fft = FFT(512, np.float32, fft_type=fft_type, sm=(9, 0))
    kernel = fused_fft.fused_kernel(fft)
    assert kernel.cubin[:4] == b"\x7fELF" and kernel.symbol.encode() in kernel.cubin


def test_source_calls_callbacks_with_cuffts_signature():
    source = fused_fft.kernel_source("kernel", "cufftdx_f", element="complex64", input="complex64",
                                     output="complex64", input_length=64, output_length=64, stride=16, input_count=4,
                                     output_count=4, storage=4, ffts_per_block=2, threads=32, load="user_load",
                                     store="user_store")
    assert 'extern "C" __device__ float2 user_load(void*, unsigned long long, void*, void*);' in source
    assert 'extern "C" __device__ void user_store(void*, unsigned long long, float2, void*, void*);' in source
    assert "user_load(const_cast<float2*>(in), (unsigned long long)offset, load_info, nullptr)" in source
    assert ("user_store(out, (unsigned long long)offset, float2{value.x * scale, value.y * scale}, store_info, "
            "nullptr)") in source
    assert "in[offset]" not in source and "out[offset] =" not in source


def test_kernel_links_the_users_callbacks():
    import nvmathx.fft as nfft
    from helpers import compilers

    compiler = next((name for name in ("numba-cuda", "numba-cuda-mlir") if not isinstance(compilers.load(name), str)),
                    None)
    if compiler is None:
        pytest.skip("no Numba compiler to compile callbacks")

    def doubled(data, offset, info, shared):
        return data[offset] * 2

    def halved(data, offset, value, info, shared):
        data[offset] = value * 0.5

    prolog = nfft.compile_prolog(doubled, element_dtype="complex64", target="sm_90", compiler=compiler)
    epilog = nfft.compile_epilog(halved, element_dtype="complex64", target="sm_90", compiler=compiler)
    plain = fused_fft.fused_kernel(_fft())
    with_callbacks = fused_fft.fused_kernel(_fft(), prolog=prolog, epilog=epilog)
    assert with_callbacks.symbol != plain.symbol  # the callbacks are part of the cache key
    assert with_callbacks.cubin[:4] == b"\x7fELF"
    assert prolog.symbol.encode() not in with_callbacks.cubin  # inlined by link-time optimization


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
