"""Kernels that call FFT/Matmul compile on a machine without a GPU, under each Numba compiler; under
numba-cuda they also link where nvJitLink is found.

Compiling types and lowers the kernel (traits as compile-time constants, execute's typing) down to
a call of the generated symbol: PTX for numba-cuda, the MLIR module for numba-cuda-mlir (which
needs the driver from PTX on). Linking checks the symbol resolves against libmathdx's LTO-IR.
"""

import numpy as np
import pytest

from helpers.compilers import H100, require
from helpers.compilers import compiled_calls as _calls
from helpers.requirements import needs_mathdx
from nvmathx.device_api import FFT, Matmul

from . import _kernels

pytestmark = needs_mathdx


def _c64(compiler):
    return compiler.types.complex64[:, ::1]


def _f32(compiler):
    return compiler.types.float32[:, ::1]


@pytest.fixture(scope="module")
def block_fft():
    return FFT(16, np.float32, direction="forward", elements_per_thread=4, ffts_per_block=2, sm=H100)


def test_block_fft_kernel_compiles_to_a_call_of_the_generated_symbol(compiler, block_fft):
    calls = _calls(compiler, _kernels.block_c2c(block_fft), (_c64(compiler), _c64(compiler)))
    assert calls == [block_fft.code("registers").symbol]


def test_real_transforms_compile(compiler):
    if compiler.name == "numba-cuda":
        pytest.skip("Array.view is a jitted overload, which numba-cuda compiles only with a device (a gpu test)")
    r2c = FFT(16, np.float32, fft_type="r2c", sm=H100)
    assert _calls(compiler, _kernels.block_r2c(r2c), (_f32(compiler), _c64(compiler))) == [r2c.code().symbol]


def test_folded_real_transforms_compile(compiler):
    r2c = FFT(64, np.float32, fft_type="r2c", sm=H100, real_mode="folded")
    c2r = FFT(64, np.float32, fft_type="c2r", sm=H100, real_mode="folded")
    assert r2c.code().symbol != FFT(64, np.float32, fft_type="r2c", sm=H100).code().symbol
    assert _calls(compiler, _kernels.block_r2c_folded(r2c), (_f32(compiler), _c64(compiler))) == [r2c.code().symbol]
    assert _calls(compiler, _kernels.block_c2r_folded(c2r), (_c64(compiler), _f32(compiler))) == [c2r.code().symbol]


def test_shared_memory_form_calls_its_own_symbol(compiler, block_fft):
    calls = _calls(compiler, _kernels.block_c2c_shared(block_fft), (_c64(compiler), _c64(compiler)))
    assert calls == [block_fft.code("shared").symbol]
    assert block_fft.code("shared").symbol != block_fft.code("registers").symbol


def test_thread_fft_kernel_compiles(compiler):
    fft = FFT(4, np.float32, direction="forward", execution="Thread", sm=H100)
    assert _calls(compiler, _kernels.thread_c2c(fft), (_c64(compiler), _c64(compiler))) == [fft.code().symbol]


def test_wrong_dtype_is_a_typing_error_naming_the_expected_call(compiler, block_fft):
    def kernel(x):
        regs = cuda.local.array(4, dtype=np.float32)  # noqa: F821 (bound by the compiler)
        block_fft.execute(regs, regs)

    with pytest.raises(Exception, match="execute\\(thread_data, shared\\)"):
        _calls(compiler, kernel, (_c64(compiler),))


def test_shared_form_of_a_real_transform_is_refused(compiler):
    r2c = FFT(16, np.float32, fft_type="r2c", sm=H100)

    def kernel(x):
        shared = cuda.shared.array(0, dtype=r2c.value_type)  # noqa: F821
        r2c.execute(shared)

    with pytest.raises(Exception, match="c2c transforms only"):
        _calls(compiler, kernel, (_c64(compiler),))


def test_traits_that_are_not_constants_are_refused_in_kernels(compiler):
    fft = FFT(4, np.float32, direction="forward", execution="Thread", sm=H100)
    assert fft.max_threads_per_block is None

    def kernel(out):
        out[0] = fft.max_threads_per_block  # None for Thread execution: not offered inside kernels

    with pytest.raises(Exception, match="not available inside a kernel"):
        _calls(compiler, kernel, (compiler.types.int64[::1],))


def test_traits_are_constants_in_kernels(block_fft):
    numba_cuda = require("numba-cuda")

    def kernel(out):
        out[0] = block_fft.storage_size
        out[1] = block_fft.stride
        out[2] = block_fft.block_dim[0]
        out[3] = block_fft.shared_memory_size

    ptx, _ = numba_cuda.cuda.compile_ptx(numba_cuda.bind(kernel), (numba_cuda.types.int64[::1],), cc=H100)
    for value in (block_fft.stride, block_fft.shared_memory_size):
        assert f", {value};" in ptx


def test_traits_are_constants_in_kernels_under_numba_cuda_mlir(block_fft):
    mlir = require("numba-cuda-mlir")

    def kernel(out):
        regs = cuda.local.array(block_fft.storage_size, dtype=block_fft.value_type)  # noqa: F821
        regs[0] = 1
        out[0] = regs.size
        out[1] = block_fft.stride
        out[2] = block_fft.block_dim[0]
        out[3] = block_fft.shared_memory_size

    text = mlir.cuda.compile_mlir(mlir.bind(kernel), (mlir.types.int64[::1],), cc=H100)
    # a local array's shape must be a compile-time constant: it types only if storage_size is one
    assert f"memref<{block_fft.storage_size}xcomplex<f32>" in text
    for value in (block_fft.stride, block_fft.shared_memory_size):
        assert f"{value} : i64" in text


def test_gemm_kernel_compiles(compiler):
    gemm = Matmul((8, 8, 8), np.float32, block_dim=(32,), sm=H100)
    f32 = compiler.types.float32
    calls = _calls(compiler, _kernels.block_gemm(gemm), (_f32(compiler), _f32(compiler), _f32(compiler), f32, f32))
    assert calls == [gemm.code().symbol]


def test_both_compilers_in_one_process_type_the_same_descriptor(block_fft):
    """One FFT object, a kernel for each compiler: each gets its own compiler's type."""
    mlir, numba_cuda = require("numba-cuda-mlir"), require("numba-cuda")
    for compiler in (mlir, numba_cuda, mlir):
        calls = compiler.generated_calls(_kernels.block_c2c(block_fft), (_c64(compiler), _c64(compiler)))
        assert calls == [block_fft.code("registers").symbol]


def test_kernel_links_against_generated_code(block_fft):
    numba_cuda = require("numba-cuda")
    from numba.cuda.compiler import compile_cuda

    from nvmathx import LibraryNotFoundError
    from nvmathx._bindings._loader import load_library

    try:
        load_library("nvJitLink")
    except LibraryNotFoundError as error:
        pytest.skip(f"nvJitLink not available: {error}")
    types = numba_cuda.types
    result = compile_cuda(numba_cuda.bind(_kernels.block_c2c(block_fft)), types.void,
                          (_c64(numba_cuda), _c64(numba_cuda)), cc=H100)
    cubin = result.library.get_cubin(cc=(9, 0, "a"))
    assert len(cubin.code) > 10000


def test_numba_cuda_mlir_kernel_links_against_generated_code(block_fft):
    """The whole numba-cuda-mlir pipeline, link included (nvJitLink needs no GPU)."""
    mlir = require("numba-cuda-mlir")
    from numba_cuda_mlir.compiler import _compile_and_optimize

    from nvmathx import LibraryNotFoundError
    from nvmathx._bindings._loader import load_library

    try:
        load_library("nvJitLink")
    except LibraryNotFoundError as error:
        pytest.skip(f"nvJitLink not available: {error}")
    # the compile step that links (compile_ptx stops before the link, compile() discards its result)
    result = _compile_and_optimize(mlir.bind(_kernels.block_c2c(block_fft)), (_c64(mlir), _c64(mlir)),
                                   {"chip": "sm_90"})
    assert len(result.metadata["cubin"]) > 10000


def test_row_load_and_store_call_their_generated_copies(compiler, block_fft):
    from nvmathx.device_api import _rows

    calls = _calls(compiler, _kernels.block_rows(block_fft), (_c64(compiler), _c64(compiler)))
    expected = [_rows.row_code(block_fft, "load").symbol, block_fft.code("registers").symbol,
                _rows.row_code(block_fft, "store").symbol]
    assert sorted(calls) == sorted(expected)
    vector = compiler.types.complex64[::1]
    assert len(_calls(compiler, _kernels.block_c2c_vector_rows(block_fft), (vector, vector))) == 3


@pytest.mark.parametrize(
    "case, match",
    [
        ("wrong dtype", "C-contiguous 1-D or 2-D array of complex64"),
        ("3-D array", "C-contiguous 1-D or 2-D array of complex64"),
        ("strided rows", "C-contiguous 1-D or 2-D array of complex64"),
        ("float row", "an integer row"),
        ("arguments swapped", "load\\(source, thread_data, row\\)"),
        ("keyword", "load takes positional arguments only"),
    ],
)
def test_row_copies_refuse_bad_arguments(compiler, block_fft, case, match):
    types = compiler.types
    signature = {
        "wrong dtype": (types.complex128[:, ::1],),
        "3-D array": (types.complex64[:, :, ::1],),
        "strided rows": (types.complex64[:, :],),
    }.get(case, (_c64(compiler),))

    def kernel(x):
        regs = cuda.local.array(block_fft.storage_size, dtype=block_fft.value_type)  # noqa: F821
        if case == "float row":
            block_fft.load(x, regs, 1.5)
        elif case == "arguments swapped":
            block_fft.load(regs, x, 0)
        elif case == "keyword":
            block_fft.load(x, regs, row=0)
        else:
            block_fft.load(x, regs, 0)

    with pytest.raises(Exception, match=match):
        _calls(compiler, kernel, signature)


@pytest.mark.parametrize("real_mode", ["normal", "folded"])
def test_real_row_copies_take_reals_on_the_real_side(compiler, real_mode):
    from nvmathx.device_api import _rows

    r2c = FFT(64, np.float32, fft_type="r2c", sm=H100, real_mode=real_mode)
    c2r = FFT(64, np.float32, fft_type="c2r", sm=H100, real_mode=real_mode)
    r2c_calls = _calls(compiler, _kernels.block_rows(r2c), (_f32(compiler), _c64(compiler)))
    assert sorted(r2c_calls) == sorted([_rows.row_code(r2c, "load").symbol, r2c.code().symbol,
                                        _rows.row_code(r2c, "store").symbol])
    assert len(_calls(compiler, _kernels.block_rows(c2r), (_c64(compiler), _f32(compiler)))) == 3

    def complex_into_r2c(x):
        regs = cuda.local.array(r2c.storage_size, dtype=r2c.value_type)  # noqa: F821
        r2c.load(x, regs, 0)

    with pytest.raises(Exception, match="array of float32 \\(rows of the transform's input\\)"):
        _calls(compiler, complex_into_r2c, (_c64(compiler),))


def test_row_copies_are_block_only(compiler):
    thread = FFT(8, np.float32, direction="forward", execution="Thread", sm=H100)

    def kernel(x):
        regs = cuda.local.array(thread.storage_size, dtype=thread.value_type)  # noqa: F821
        thread.load(x, regs, 0)

    with pytest.raises(Exception, match="load supports Block transforms only"):
        _calls(compiler, kernel, (_c64(compiler),))


def test_row_copies_raise_on_the_host(block_fft):
    with pytest.raises(RuntimeError, match="can only be called inside a numba.cuda.jit kernel"):
        block_fft.load(np.zeros(16, np.complex64), np.zeros(4, np.complex64), 0)
    with pytest.raises(RuntimeError, match="can only be called inside a numba.cuda.jit kernel"):
        block_fft.store(np.zeros(4, np.complex64), np.zeros(16, np.complex64), 0)


@pytest.mark.parametrize("taps_first", [False, True])
def test_convolution_example_kernels_compile(compiler, taps_first):
    """examples/device_fft_convolution.py's kernel, the filter's spectrum read before or after the
    forward transform: the rows' load, both transforms and the store (a form that failed to type
    would show only on a GPU)."""
    import importlib.util
    import pathlib

    from nvmathx.device_api import _rows

    path = pathlib.Path(__file__).parents[2] / "examples" / "device_fft_convolution.py"
    spec = importlib.util.spec_from_file_location("device_fft_convolution", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    common = dict(size=64, precision=np.float32, elements_per_thread=4, ffts_per_block=2, sm=H100)
    forward, inverse = FFT(direction="forward", **common), FFT(direction="inverse", **common)
    kernel = example.build_kernel(forward, inverse, compiler.cuda, taps_first=taps_first)
    vector = compiler.types.complex64[::1]
    calls = _calls(compiler, kernel.py_func, (_c64(compiler), vector, _c64(compiler)))
    assert set(calls) == {_rows.row_code(forward, "load").symbol, forward.code("registers").symbol,
                          inverse.code("registers").symbol, _rows.row_code(inverse, "store").symbol}
