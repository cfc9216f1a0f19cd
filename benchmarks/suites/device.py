"""Device API suite: a fused FFT convolution kernel, and the time to its first launch.

- ``fused_conv_16384x1024_c64``: forward FFT, multiply by a filter, inverse FFT and scale of
  16384 complex64 signals of 1024 points in one numba kernel (the kernel of
  ``examples/device_fft_convolution.py``; 8 elements per thread, 2 FFTs per block), beside torch's
  ``fft -> multiply -> ifft``. TB/s counts one read and one write of the signals.
- ``first_launch_warm_cache`` / ``first_launch_cold_cache``: wall seconds of a fresh interpreter
  from start to the first finished launch of that kernel, with the cache (generated code and the
  linked kernel image) filled by an earlier process, and with an empty ``NVMATHX_CACHE_DIR``
  (libmathdx generates the code, nvJitLink links it).
- ``first_launch_warm_cache_relink``: as ``first_launch_warm_cache`` with ``NVMATHX_LINK_CACHE=0``
  (generated code from the cache, the kernel linked again).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile

from benchmarks import Case, Skip, bandwidth

__all__ = ["cases"]

_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_EXAMPLE = os.path.join(_REPO_ROOT, "examples", "device_fft_convolution.py")
_BATCH, _SIZE = 16384, 1024

_FIRST_LAUNCH = f"""
import importlib.util
import numpy as np
spec = importlib.util.spec_from_file_location("conv", {_EXAMPLE!r})
conv = importlib.util.module_from_spec(spec)
spec.loader.exec_module(conv)
from numba import cuda
forward, inverse = conv.make_ffts({_SIZE})
kernel = conv.build_kernel(forward, inverse)
x = cuda.device_array(({_BATCH}, {_SIZE}), np.complex64)
f = cuda.device_array({_SIZE}, np.complex64)
out = cuda.device_array_like(x)
kernel[{_BATCH} // forward.ffts_per_block, forward.block_dim, 0, forward.shared_memory_size](x, f, out)
cuda.synchronize()
"""


def _example():
    spec = importlib.util.spec_from_file_location("device_fft_convolution", _EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _signals(ctx, batch, size):
    import numpy as np

    signals = (ctx.rng.standard_normal((batch, size)) + 1j * ctx.rng.standard_normal((batch, size))).astype(
        np.complex64
    )
    spectrum = np.fft.fft(ctx.rng.standard_normal(size)).astype(np.complex64)
    return signals, spectrum


def _fused_setups(ctx, batch, size):
    def nvmathx_kernel():
        try:
            from numba import cuda
        except ImportError as error:
            raise Skip(f"numba-cuda is not installed ({error})") from None
        example = _example()
        forward, inverse = example.make_ffts(size)
        kernel = example.build_kernel(forward, inverse)
        signals, spectrum = _signals(ctx, batch, size)
        x, f = cuda.to_device(signals), cuda.to_device(spectrum)
        out = cuda.device_array_like(x)
        launch = kernel[batch // forward.ffts_per_block, forward.block_dim, 0, forward.shared_memory_size]
        launch(x, f, out)
        cuda.synchronize()
        return lambda: launch(x, f, out)

    def torch_calls():
        import torch

        signals, spectrum = _signals(ctx, batch, size)
        x = torch.from_numpy(signals).to(f"cuda:{ctx.device_id}")
        f = torch.from_numpy(spectrum).to(f"cuda:{ctx.device_id}")
        return lambda: torch.fft.ifft(torch.fft.fft(x, dim=1) * f, dim=1)

    return {"nvmathx": nvmathx_kernel, "torch": torch_calls}


def _first_launch(cache_root_for_call, **variables):
    def run():
        environment = dict(os.environ, NVMATHX_CACHE_DIR=cache_root_for_call(), **variables)
        subprocess.run([sys.executable, "-c", _FIRST_LAUNCH], check=True, env=environment, cwd=_REPO_ROOT)

    return run


def _warm_setup(**variables):
    root = tempfile.mkdtemp(prefix="nvmathx-bench-warm-")
    _first_launch(lambda: root)()  # fills the cache; not timed
    return _first_launch(lambda: root, **variables)


def _cold_setup():
    return _first_launch(lambda: tempfile.mkdtemp(prefix="nvmathx-bench-cold-"))


def cases(ctx):
    batch = 1024 if ctx.quick else _BATCH
    return [
        Case(
            name=f"fused_conv_{_BATCH}x{_SIZE}_c64" if not ctx.quick else f"fused_conv_{batch}x{_SIZE}_c64",
            params={"batch": batch, "size": _SIZE, "dtype": "complex64", "elements_per_thread": 8, "ffts_per_block": 2},
            unit="ms",
            setups=_fused_setups(ctx, batch, _SIZE),
            derive=bandwidth(2 * batch * _SIZE * 8),
            note="nvmathx: one numba kernel (fft, multiply, ifft, scale); torch: fft -> multiply -> ifft",
        ),
        Case(
            name="first_launch_warm_cache",
            params={"batch": _BATCH, "size": _SIZE},
            unit="s",
            setups={"nvmathx": _warm_setup},
            repeats=3,
            note="fresh interpreter to the first finished launch; code and linked image cached earlier",
        ),
        Case(
            name="first_launch_warm_cache_relink",
            params={"batch": _BATCH, "size": _SIZE},
            unit="s",
            setups={"nvmathx": lambda: _warm_setup(NVMATHX_LINK_CACHE="0")},
            repeats=2,
            note="as first_launch_warm_cache, with NVMATHX_LINK_CACHE=0: the kernel is linked again",
        ),
        Case(
            name="first_launch_cold_cache",
            params={"batch": _BATCH, "size": _SIZE},
            unit="s",
            setups={"nvmathx": _cold_setup},
            repeats=2,
            note="fresh interpreter to the first finished launch with an empty NVMATHX_CACHE_DIR",
        ),
    ]
