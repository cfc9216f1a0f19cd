"""Kernels that call FFT/Matmul compile on a machine without a GPU; they link where nvJitLink is found.

Compiling to PTX types and lowers the kernel (traits as compile-time constants, execute's
typing); linking checks the generated symbol resolves against libmathdx's LTO-IR.
"""

import numpy as np
import pytest

pytest.importorskip("numba.cuda", reason="the device API tests need numba-cuda (the device extra)")

from numba import cuda  # noqa: E402
from numba.cuda import types  # noqa: E402

from helpers.requirements import needs_mathdx  # noqa: E402
from nvmathx.device_api import FFT, Matmul  # noqa: E402

from . import _kernels  # noqa: E402

pytestmark = needs_mathdx

H100 = (9, 0)
C64_2D = types.complex64[:, ::1]
F32_2D = types.float32[:, ::1]


def _ptx(kernel, signature):
    try:
        ptx, _ = cuda.compile_ptx(kernel, signature, cc=H100)
    except Exception as error:  # NVVM missing is "not available", anything else is a failure
        if "NVVM" in str(error) or "libnvvm" in str(error):
            pytest.skip(f"libNVVM not available: {error}")
        raise
    return ptx


def _extern_calls(ptx):
    return [line.split()[-1] for line in ptx.splitlines() if line.startswith(".extern .func") and "nvmathx_" in line]


@pytest.fixture(scope="module")
def block_fft():
    return FFT(16, np.float32, direction="forward", elements_per_thread=4, ffts_per_block=2, sm=H100)


def test_block_fft_kernel_compiles_to_a_call_of_the_generated_symbol(block_fft):
    ptx = _ptx(_kernels.block_c2c(block_fft), (C64_2D, C64_2D))
    assert _extern_calls(ptx) == [block_fft.code("registers").symbol]


@pytest.mark.gpu  # Array.view is a jitted overload, which numba-cuda compiles only with a device
def test_real_transforms_compile():
    r2c = FFT(16, np.float32, fft_type="r2c", sm=H100)
    assert _extern_calls(_ptx(_kernels.block_r2c(r2c), (F32_2D, C64_2D))) == [r2c.code().symbol]


def test_shared_memory_form_calls_its_own_symbol(block_fft):
    ptx = _ptx(_kernels.block_c2c_shared(block_fft), (C64_2D, C64_2D))
    assert _extern_calls(ptx) == [block_fft.code("shared").symbol]
    assert block_fft.code("shared").symbol != block_fft.code("registers").symbol


def test_thread_fft_kernel_compiles():
    fft = FFT(4, np.float32, direction="forward", execution="Thread", sm=H100)
    assert _extern_calls(_ptx(_kernels.thread_c2c(fft), (C64_2D, C64_2D))) == [fft.code().symbol]


def test_wrong_dtype_is_a_typing_error_naming_the_expected_call(block_fft):
    def kernel(x):
        regs = cuda.local.array(4, dtype=np.float32)
        block_fft.execute(regs, regs)

    with pytest.raises(Exception, match="execute\\(thread_data, shared\\)"):
        _ptx(kernel, (C64_2D,))


def test_shared_form_of_a_real_transform_is_refused():
    r2c = FFT(16, np.float32, fft_type="r2c", sm=H100)

    def kernel(x):
        shared = cuda.shared.array(0, dtype=r2c.value_type)
        r2c.execute(shared)

    with pytest.raises(Exception, match="c2c transforms only"):
        _ptx(kernel, (C64_2D,))


def test_traits_are_constants_in_kernels(block_fft):
    def kernel(out):
        out[0] = block_fft.storage_size
        out[1] = block_fft.stride
        out[2] = block_fft.block_dim[0]
        out[3] = block_fft.shared_memory_size

    ptx = _ptx(kernel, (types.int64[::1],))
    for value in (block_fft.stride, block_fft.shared_memory_size):
        assert f", {value};" in ptx


def test_gemm_kernel_compiles():
    gemm = Matmul((8, 8, 8), np.float32, block_dim=(32,), sm=H100)
    ptx = _ptx(_kernels.block_gemm(gemm), (F32_2D, F32_2D, F32_2D, types.float32, types.float32))
    assert _extern_calls(ptx) == [gemm.code().symbol]


def test_kernel_links_against_generated_code(block_fft):
    from numba.cuda.compiler import compile_cuda

    from nvmathx import LibraryNotFoundError
    from nvmathx._bindings._loader import load_library

    try:
        load_library("nvJitLink")
    except LibraryNotFoundError as error:
        pytest.skip(f"nvJitLink not available: {error}")
    result = compile_cuda(_kernels.block_c2c(block_fft), types.void, (C64_2D, C64_2D), cc=H100)
    cubin = result.library.get_cubin(cc=(9, 0, "a"))
    assert len(cubin.code) > 10000
