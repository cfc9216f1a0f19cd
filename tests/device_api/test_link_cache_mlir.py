"""numba-cuda-mlir's links of kernels that call nvmathx code go through the on-disk image cache.

The kernels compile through numba-cuda-mlir's real pipeline (no GPU needed up to the link); the
link itself (nvJitLink) is replaced by a stand-in that returns bytes derived from its inputs.
"""

import hashlib

import numpy as np
import pytest

from helpers.compilers import H100, require
from helpers.requirements import mathdx_missing
from nvmathx._codegen import cache as _cache
from nvmathx._codegen import link
from nvmathx.device_api import FFT, cache_info, set_cache_dir

from . import _kernels, _link_probe


@pytest.fixture
def mlir():
    if mathdx_missing():
        pytest.skip(mathdx_missing())
    return require("numba-cuda-mlir")


@pytest.fixture
def fft(mlir):
    fft = FFT(16, np.float32, direction="forward", elements_per_thread=4, ffts_per_block=2, sm=H100)
    fft.code("registers")  # generated into the session's code cache, before tests switch folders
    return fft


@pytest.fixture
def links(mlir, monkeypatch, tmp_path):
    """An empty cache folder and a stand-in link whose 'cubin' digests the inputs; counts links."""
    from numba_cuda_mlir.numba_cuda.cudadrv import driver

    from nvmathx.device_api import _link_cache

    monkeypatch.setattr(_cache, "_override", None)
    monkeypatch.delenv(link.ENVIRONMENT_VARIABLE, raising=False)
    set_cache_dir(tmp_path)
    if link.linker_identity() is None:
        pytest.skip("cuda.core cannot tell which linker it uses")
    calls = []

    def inputs(linker):
        linker._materialize_pending_cu()
        return {hashlib.sha256(bytes(code.code)).hexdigest() for code in linker._object_codes}

    complete = _link_probe.stand_in_complete(calls, inputs)
    monkeypatch.setattr(driver._Linker, "complete", complete)
    assert _link_cache.install_numba_cuda_mlir()  # wraps the stand-in; monkeypatch restores the class
    return calls


def _compiled_cubin(mlir, kernel):
    """The cubin numba-cuda-mlir makes of ``kernel(x, y)`` on complex64 matrices (its compile step
    that also links: the public compile_ptx and compile return before or without the cubin)."""
    from numba_cuda_mlir.compiler import _compile_and_optimize

    result = _compile_and_optimize(mlir.bind(kernel), (mlir.types.complex64[:, ::1],) * 2, {"chip": "sm_90"})
    return bytes(result.metadata["cubin"])


def test_a_second_link_of_the_same_kernel_is_read_from_the_cache(mlir, fft, links):
    first = _compiled_cubin(mlir, _kernels.block_c2c(fft))
    assert len(links) == 1 and hashlib.sha256(fft.code("registers").code).hexdigest() in links[0]
    second = _compiled_cubin(mlir, _kernels.block_c2c(fft))
    assert len(links) == 1 and second == first  # the stand-in's bytes end in random ones: only a hit repeats
    assert cache_info().link_hits >= 1


def test_a_changed_kernel_links_again(mlir, fft, links):
    _compiled_cubin(mlir, _kernels.block_c2c(fft))
    _compiled_cubin(mlir, _kernels.block_c2c(fft, scale=2))
    assert len(links) == 2


def test_the_cache_can_be_turned_off(mlir, fft, links, monkeypatch):
    monkeypatch.setenv(link.ENVIRONMENT_VARIABLE, "0")
    first = _compiled_cubin(mlir, _kernels.block_c2c(fft))
    second = _compiled_cubin(mlir, _kernels.block_c2c(fft))
    assert len(links) == 2 and first != second


def test_kernels_without_nvmathx_code_are_linked_unchanged(mlir, links):
    def plain(x, y):
        y[0, 0] = x[0, 0]

    first = _compiled_cubin(mlir, plain)
    second = _compiled_cubin(mlir, plain)
    assert len(links) == 2 and first != second
