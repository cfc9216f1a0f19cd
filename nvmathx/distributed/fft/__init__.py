"""Distributed FFTs: ``fft``, ``ifft``, ``rfft``, ``irfft`` and the stateful ``FFT``.

The transpose algorithm: local cuFFT (or scipy.fft) passes over the axes a rank holds whole, and
all-to-all exchanges (NCCL, or the process group on the CPU) between slab decompositions. 2-D and
3-D global arrays, or the last 2 or 3 axes of a batched array; ``Slab.X`` / ``Slab.Y`` or a pair
of Boxes.
"""

from ._fft import FFT
from ._functions import fft, ifft, irfft, rfft
from ._options import FFTOptions

__all__ = ["FFT", "FFTOptions", "fft", "ifft", "rfft", "irfft"]
