"""Link (``cpu``) or launch (``gpu``) a kernel that calls ``FFT.execute`` in a fresh interpreter and
print, as one JSON line, what the link cache did.

Run by test_link_cache: ``python tests/device_api/_link_probe.py cpu [scaled] | gpu SEED``. The code
cache folder comes from ``NVMATHX_CACHE_DIR``; ``SEED`` seeds the GPU launch's data (the test's seed).
"""

import hashlib
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import _kernels  # noqa: E402

from helpers.compilers import load  # noqa: E402


def _numba_cuda_kernel(function):
    """``function`` compiled by numba-cuda, whose linker the link cache serves."""
    return load("numba-cuda").bind(function)

H100 = (9, 0)


def small_fft(sm=None):
    from nvmathx.device_api import FFT

    return FFT(16, np.float32, direction="forward", elements_per_thread=4, ffts_per_block=2, sm=sm)


def compile_library(pyfunc, cc=H100):
    """numba's code library of the kernel ``pyfunc(x, y)`` on complex64 matrices, compiled without a GPU."""
    from numba.cuda import types
    from numba.cuda.compiler import _compile_pyfunc_with_fixup

    matrix = types.complex64[:, ::1]
    library, _ = _compile_pyfunc_with_fixup(_numba_cuda_kernel(pyfunc), (matrix, matrix), device=False, cc=cc,
                                            opt=True, abi="numba")
    return library


def stand_in_complete(calls, record=lambda linker: 1):
    """A linker ``complete`` for tests: appends ``record(linker)`` to ``calls`` and returns a 'cubin'
    that digests the inputs, plus random bytes (so only a cache hit repeats one)."""
    from cuda.core import ObjectCode

    def complete(self):
        calls.append(record(self))
        self.linker, self._complete, self._info_log, self._error_log = object(), True, "stand-in log", ""
        digest = hashlib.sha256()
        for code in self._object_codes:
            digest.update(bytes(code.code))
        return ObjectCode.from_cubin(b"STAND-IN-CUBIN" + digest.digest() + os.urandom(8))

    return complete


def count_links():
    """A list whose length is the number of links numba's linker completes from now on."""
    from numba.cuda.cudadrv import driver

    calls = []
    complete = driver._Linker.complete

    def counted(self):
        calls.append(1)
        return complete(self)

    driver._Linker.complete = counted
    return calls


def _counters():
    from nvmathx.device_api import cache_info

    info = cache_info()
    return {"link_hits": info.link_hits, "link_misses": info.link_misses, "link_corrupted": info.link_corrupted}


def link_on_cpu(variant: str) -> dict:
    links = count_links()
    library = compile_library(_kernels.block_c2c(small_fft(H100), scale=2 if variant == "scaled" else 1))
    cubin = library.get_cubin(cc=(*H100, "a"))
    return {"links": len(links), "sha256": hashlib.sha256(bytes(cubin.code)).hexdigest(), **_counters()}


def launch_on_gpu(rng) -> dict:
    from numba import cuda

    links = count_links()
    fft = small_fft()
    kernel = cuda.jit(_numba_cuda_kernel(_kernels.block_c2c(fft)))
    x = (rng.standard_normal((64, fft.size)) + 1j * rng.standard_normal((64, fft.size))).astype(np.complex64)
    y = cuda.device_array_like(x)
    kernel[x.shape[0] // fft.ffts_per_block, fft.block_dim, 0, fft.shared_memory_size](cuda.to_device(x), y)
    reference = np.fft.fft(x.astype(np.complex128), axis=1)
    error = float(np.linalg.norm(y.copy_to_host() - reference) / np.linalg.norm(reference))
    return {"links": len(links), "error": error, **_counters()}


if __name__ == "__main__":
    if sys.argv[1] == "cpu":
        report = link_on_cpu(sys.argv[2] if len(sys.argv) > 2 else "")
    else:
        report = launch_on_gpu(np.random.default_rng(int(sys.argv[2])))
    print(json.dumps(report))
