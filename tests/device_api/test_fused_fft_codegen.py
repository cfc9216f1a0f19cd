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


# What the kernel computes is checked by running its source on the host (test_fused_fft_host.py);
# here: what only the GPU build sees.
@pytest.mark.parametrize("element, c_element, c_real", [("complex64", "float2", "float"),
                                                        ("complex128", "double2", "double")])
def test_source_declares_the_cufftdx_function_and_the_launch_bounds(element, c_element, c_real):
    source = fused_fft.kernel_source("kernel", "cufftdx_f", element=element, input=element, output=element,
                                     **_C2C_1000)
    assert f'extern "C" __device__ void cufftdx_f({c_element}* thread_data, {c_element}* shared);' in source
    assert f"__launch_bounds__(250) kernel(\n    const {c_element}* in, {c_element}* out," in source
    assert f"{c_real} scale, void* load_info, void* store_info)" in source
    # every thread of a block reaches the transform, which synchronises the block
    assert source.index("cufftdx_f(thread_data") < source.index("if (!active) return;")


@pytest.mark.parametrize("fft_type", ["r2c", "c2r"])
@pytest.mark.parametrize("real_mode", ["normal", "folded"])
def test_real_kernels_link(fft_type, real_mode):
    from nvmathx.device_api import FFT

    fft = FFT(512, np.float32, fft_type=fft_type, sm=(9, 0), real_mode=real_mode)
    kernel = fused_fft.fused_kernel(fft)
    assert kernel.cubin[:4] == b"\x7fELF" and kernel.symbol.encode() in kernel.cubin


def test_folded_parameters_count_the_extra_complex_position():
    from nvmathx.device_api import FFT

    fft = FFT(4096, np.float32, fft_type="r2c", sm=(9, 0), real_mode="folded")
    parameters = fused_fft.kernel_parameters(fft)
    assert (parameters["input"], parameters["output"], parameters["input_pairs"]) == ("float32", "complex64", True)
    # 2049 outputs over `stride` threads: thread 0 holds the last one in one register more than
    # 2048 / stride. cuFFTDx's default layout differs by release: 128 threads of 16 (libmathdx 0.3.1),
    # 64 threads of 32 (0.4.2, whose output_elements_per_thread counts the extra position: 33)
    assert fft.output_length == 2049 and fft.stride in (64, 128)
    assert fft.output_elements_per_thread in (2048 // fft.stride, 2048 // fft.stride + 1)
    assert parameters["output_count"] == 2048 // fft.stride + 1 <= fft.storage_size


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
    # a folded real side calls the callback once per real
    from nvmathx.device_api import FFT

    real_prolog = nfft.compile_prolog(doubled, element_dtype="float32", target="sm_90", compiler=compiler)
    folded = FFT(1024, np.float32, fft_type="r2c", sm=(9, 0), real_mode="folded")
    assert fused_fft.fused_kernel(folded, prolog=real_prolog, epilog=epilog).cubin[:4] == b"\x7fELF"


def test_kernel_links_with_cufftdx_and_is_cached():
    fft = _fft()
    kernel = fused_fft.fused_kernel(fft)
    assert kernel.symbol.startswith("nvmathx_fused_fft_") and kernel.symbol.encode() in kernel.cubin
    assert kernel.cubin[:4] == b"\x7fELF"
    assert (kernel.block_dim, kernel.ffts_per_block) == (tuple(fft.block_dim), 2)
    assert kernel.shared_memory_size == fft.shared_memory_size >= 2 * 256 * 8
    assert fused_fft.fused_kernel(_fft()) == kernel  # the same kernel, from the cache


def test_the_linked_image_is_keyed_by_the_linker_and_not_kept_without_the_link_cache(monkeypatch):
    from nvmathx._codegen import link

    fft = _fft()
    fused_fft.fused_kernel(fft)
    assert fused_fft.is_cached(fft)
    links = []
    real_link = fused_fft._link
    monkeypatch.setattr(fused_fft, "_link", lambda objects, arch: links.append(arch) or real_link(objects, arch))
    identity = dict(link.linker_identity() or {}, driver=-1)  # another driver (or nvJitLink, cuda.core)
    monkeypatch.setattr(link, "linker_identity", lambda: identity)
    assert not fused_fft.is_cached(fft)
    relinked = fused_fft.fused_kernel(fft)
    assert len(links) == 1 and fused_fft.is_cached(fft) and relinked.cubin[:4] == b"\x7fELF"
    monkeypatch.setenv(link.ENVIRONMENT_VARIABLE, "0")
    assert not fused_fft.is_cached(fft)
    fused_fft.fused_kernel(fft)
    assert len(links) == 2


def test_unit_element_strides_are_compiled_in_and_keyed():
    parameters = dict(element="complex64", input="complex64", output="complex64", **_C2C_1000)
    strided = fused_fft.kernel_source("kernel", "f", **parameters)
    unit_input = fused_fft.kernel_source("kernel", "f", **parameters, unit_strides=(True, False))
    assert "in_step = in_element_stride, out_step = out_element_stride;" in strided
    assert "in_step = 1, out_step = out_element_stride;" in unit_input
    fft = _fft()
    assert fused_fft.fused_kernel(fft).symbol != fused_fft.fused_kernel(fft, unit_strides=(True, True)).symbol


def test_dense_row_strides_are_compiled_in_on_unit_stride_sides_and_keyed():
    parameters = dict(element="complex64", input="complex64", output="complex64", **_C2C_1000)
    dense = fused_fft.kernel_source("kernel", "f", **parameters, unit_strides=(True, True), dense_rows=(True, False))
    assert "in_row = 1000ll, out_row = out_row_stride;" in dense
    strided = fused_fft.kernel_source("kernel", "f", **parameters, dense_rows=(True, True))  # no unit stride
    assert "in_row = in_row_stride, out_row = out_row_stride;" in strided
    fft = _fft()
    assert fused_fft.row_elements(fft) == (256, 256)
    assert (fused_fft.fused_kernel(fft, unit_strides=(True, True)).symbol
            != fused_fft.fused_kernel(fft, unit_strides=(True, True), dense_rows=(True, True)).symbol)


def test_each_transform_has_its_own_kernel():
    forward = fused_fft.fused_kernel(_fft())
    inverse = fused_fft.fused_kernel(_fft(direction="inverse"))
    double = fused_fft.fused_kernel(_fft(precision=np.float64))
    assert len({forward.symbol, inverse.symbol, double.symbol}) == 3


@pytest.mark.parametrize("size, precision, fft_type", [(4096, np.float32, "c2c"), (4096, np.float32, "r2c"),
                                                       (4096, np.float32, "c2r"), (1024, np.float32, "c2c"),
                                                       (16384, np.float64, "r2c"), (32768, np.float32, "r2c")])
def test_the_benchmarked_kernels_stay_in_registers(size, precision, fft_type):
    # what the fused engine builds for these transforms (contiguous rows) links for sm_90 without a
    # stack frame (16384-point float64 C2C, at 1024 threads of at most 64 registers, is the one that spills)
    from cuda.core import Linker, LinkerOptions, ObjectCode

    from nvmathx._codegen import nvrtc
    from nvmathx._fftcore.engine import FusedRows
    from nvmathx.fft._fused import _descriptor

    rows = FusedRows(fft_type.upper(), size, 64, np.dtype(precision).name, 0, 1, 0, 1)
    fft = _descriptor(rows, "forward" if fft_type == "c2c" else None, (9, 0))
    code = fft.code("registers")
    parameters = {**fused_fft.kernel_parameters(fft), "unit_strides": (True, True), "dense_rows": (True, True)}
    kernel = nvrtc.cached_ltoir({"test": "registers", **parameters, "fft": code.symbol}, "kernel",
                                fused_fft.kernel_source("kernel", code.symbol, **parameters), "sm_90")
    linker = Linker(ObjectCode.from_ltoir(kernel.code, name="kernel"), ObjectCode.from_ltoir(code.code, name="fft"),
                    options=LinkerOptions(arch="sm_90", link_time_optimization=True, ptxas_options=["-v"]))
    linker.link("cubin")
    report = linker.get_info_log()
    assert "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in report, report
    if (size, precision, fft_type) == (4096, np.float32, "c2c"):
        # with cuFFTDx's block shape assumed (no per-element bounds arithmetic) the 256-thread block
        # fits in 48 registers a thread: 5 blocks an SM (it took 64, 4 blocks, before)
        import re

        assert int(re.search(r"Used (\d+) registers", report).group(1)) <= 48, report


def test_min_blocks_caps_the_registers_per_thread():
    # __launch_bounds__(256, 6) leaves at most 65536 / (256 * 6) = 42 registers a thread
    import re

    from cuda.core import Linker, LinkerOptions, ObjectCode

    from nvmathx._codegen import nvrtc

    fft = _fft(4096, elements_per_thread=16, ffts_per_block=1)
    code = fft.code("registers")
    registers = {}
    for min_blocks in (None, 6):
        parameters = {**fused_fft.kernel_parameters(fft), "min_blocks": min_blocks}
        source = fused_fft.kernel_source("kernel", code.symbol, **parameters)
        assert ("__launch_bounds__(256, 6)" in source) == (min_blocks == 6)
        kernel = nvrtc.cached_ltoir({"test": "min_blocks", **parameters, "fft": code.symbol}, "kernel", source,
                                    "sm_90")
        linker = Linker(ObjectCode.from_ltoir(kernel.code, name="kernel"), ObjectCode.from_ltoir(code.code, name="fft"),
                        options=LinkerOptions(arch="sm_90", link_time_optimization=True, ptxas_options=["-v"]))
        linker.link("cubin")
        registers[min_blocks] = int(re.search(r"Used (\d+) registers", linker.get_info_log()).group(1))
    assert registers[6] <= 42 < registers[None]
    # and the kernel's cache key tells the two apart
    assert fused_fft.fused_kernel(fft).symbol != fused_fft.fused_kernel(fft, min_blocks=6).symbol
