"""Callbacks under either Numba compiler: which one compiles by default, the ``compiler`` argument,
and numba-cuda-mlir's LTO-IR for every signature (no GPU needed where nvJitLink is installed: that
compiler links what it compiles)."""

import numpy as np
import pytest

import nvmathx.fft as nfft
from helpers.compilers import load, require
from nvmathx import OptionsError
from nvmathx._codegen import compilers
from nvmathx._fftcore import callbacks as _callbacks

ELEMENTS = ["complex64", "complex128", "float32", "float64"]
LTOIR_MAGIC = b"\xedCN\x7f"
MLIR, NUMBA_CUDA = compilers.NUMBA_CUDA_MLIR, compilers.NUMBA_CUDA


@pytest.fixture
def mlir():
    compiler = require(MLIR)
    try:
        from cuda.bindings import nvjitlink

        nvjitlink.version()
    except Exception as error:  # noqa: BLE001
        pytest.skip(f"numba-cuda-mlir links what it compiles: nvJitLink is not available ({type(error).__name__})")
    return compiler


def scale_load(data, offset, info, smem):
    return data[offset] * 2


def scale_store(data, offset, value, info, smem):
    data[offset] = value * 3


@pytest.mark.parametrize(
    "installed, driver, expected",
    [
        ((MLIR, NUMBA_CUDA), True, MLIR),
        ((MLIR, NUMBA_CUDA), False, NUMBA_CUDA),  # numba-cuda-mlir asks the driver for the architecture
        ((MLIR,), False, MLIR),  # the only one: it says why it cannot compile, if it cannot
        ((NUMBA_CUDA,), True, NUMBA_CUDA),
    ],
)
def test_the_default_compiler(monkeypatch, installed, driver, expected):
    monkeypatch.setattr(compilers, "installed", lambda: installed)
    monkeypatch.setattr(_callbacks.cuda_driver, "driver_available", lambda: driver)
    assert _callbacks.resolve_callback_compiler(None) == expected


def test_compiler_names(monkeypatch):
    with pytest.raises(OptionsError, match=r"^compiler: expected 'numba-cuda-mlir' or 'numba-cuda' \(got 'numba'\)"):
        _callbacks.resolve_callback_compiler("numba")
    monkeypatch.setattr(compilers, "installed", lambda: (NUMBA_CUDA,))
    with pytest.raises(nfft.CallbackCompileError, match=r"^compiler: numba-cuda-mlir is not installed"):
        _callbacks.resolve_callback_compiler(MLIR)
    monkeypatch.setattr(compilers, "installed", lambda: ())
    with pytest.raises(nfft.CallbackCompileError, match=r"^compiler: .*nvmathx\[device\]"):
        _callbacks.resolve_callback_compiler(None)


@pytest.mark.parametrize("element", ELEMENTS)
@pytest.mark.parametrize("role", ["prolog", "epilog"])
def test_every_signature_compiles_under_numba_cuda_mlir(callback_cache, mlir, role, element):
    compile_ = nfft.compile_prolog if role == "prolog" else nfft.compile_epilog
    callback = compile_(scale_load if role == "prolog" else scale_store, element_dtype=element, target="sm_90",
                        compiler=MLIR)
    assert callback.ltoir.startswith(LTOIR_MAGIC) and len(callback.ltoir) > 100
    assert (callback.role, callback.element_dtype, callback.target) == (role, element, "sm_90")
    numba_cuda_works = not isinstance(load(NUMBA_CUDA), str)  # installed and importable with this numpy
    numba_cuda = compile_(scale_load if role == "prolog" else scale_store, element_dtype=element, target="sm_90",
                          compiler=NUMBA_CUDA) if numba_cuda_works else None
    if numba_cuda is not None:  # the same cuFFT symbol, compiled twice and cached apart
        assert numba_cuda.symbol == callback.symbol and numba_cuda.key != callback.key


def test_bad_functions_name_fn_under_numba_cuda_mlir(callback_cache, mlir):
    def untypable(data, offset, info, smem):
        return data[offset] + "text"

    def returns_nothing(data, offset, info, smem):
        data[offset] = 0

    with pytest.raises(nfft.CallbackCompileError, match=r"(?s)^fn: .*untypable does not compile .*numba-cuda-mlir"):
        nfft.compile_prolog(untypable, element_dtype="float32", target="sm_90", compiler=MLIR)
    with pytest.raises(nfft.CallbackCompileError, match=r"^fn: .*returns_nothing does not compile"):
        nfft.compile_prolog(returns_nothing, element_dtype="complex64", target="sm_90", compiler=MLIR)


def test_user_info_is_typed_under_numba_cuda_mlir(callback_cache, mlir):
    def windowed(data, offset, window, smem):
        return data[offset] * window[offset % 16]

    a = nfft.compile_prolog(windowed, element_dtype=np.complex64, user_info_dtype=np.float32, target="sm_90",
                            compiler=MLIR)
    b = nfft.compile_prolog(windowed, element_dtype=np.complex64, user_info_dtype=np.float64, target="sm_90",
                            compiler=MLIR)
    assert a.key != b.key and a.ltoir != b.ltoir



def test_an_installed_numba_cuda_that_cannot_run_is_a_typed_error(monkeypatch, callback_cache):
    """numba-cuda 0.30 imports on numpy 2.5 but fails where it first compiles (``numba.cuda.cudaimpl``,
    np.row_stack): the caller gets CallbackCompileError naming ``compiler``, not numba's error."""
    import sys

    if isinstance(load(NUMBA_CUDA), str):
        pytest.skip("numba-cuda is not usable here")

    def double_load(data, offset, info, smem):  # compiled nowhere else in this process
        return data[offset] + data[offset]

    monkeypatch.setitem(sys.modules, "numba.cuda.cudaimpl", None)  # its import fails
    with pytest.raises(nfft.CallbackCompileError, match=r"^compiler: numba-cuda is installed but cannot compile"):
        nfft.compile_prolog(double_load, element_dtype="float32", target="sm_90", compiler=NUMBA_CUDA)
