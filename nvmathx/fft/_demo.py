"""FFT demos for ``python -m nvmathx``: each returns (result, numpy reference, tolerance)."""

from __future__ import annotations

import numpy as np

from ._fft import FFT

__all__ = ["DEMOS"]


def _batched_c2c(execution):
    """A batch of 1-D complex transforms and their inverse, through the stateful FFT."""
    rng = np.random.default_rng()
    x = (rng.standard_normal((64, 1024)) + 1j * rng.standard_normal((64, 1024))).astype(np.complex64)
    with FFT(x, axes=[1], execution=execution) as plan:
        plan.plan()
        spectrum = plan.execute()
    return spectrum, np.fft.fft(x.astype(np.complex128), axis=1), 1e-5


def _real_3d(execution):
    """A 3-D real-to-complex transform over a strided view (every other plane)."""
    rng = np.random.default_rng()
    x = rng.standard_normal((32, 48, 40))[::2]
    with FFT(x, execution=execution) as plan:
        plan.plan()
        spectrum = plan.execute()
    return spectrum, np.fft.rfftn(x), 1e-12


DEMOS = [("fft: batched C2C (stateful FFT)", _batched_c2c), ("fft: 3-D R2C of a strided view", _real_3d)]
