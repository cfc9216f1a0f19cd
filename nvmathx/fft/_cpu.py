"""CPU execution: host operands run through scipy.fft (with its ``workers`` threads)."""

from __future__ import annotations

import importlib

import numpy as np

__all__ = ["run_on_cpu", "to_package"]


def run_on_cpu(name: str, x, *args, workers=None):
    """``scipy.fft.<name>(x, *args, workers=workers)`` for a host array of any library; the result
    comes back as ``x``'s kind of array.

    scipy's own backend is called directly, so a call that came through the scipy.fft backend
    protocol is dispatched once, never back to nvmathx.
    """
    import scipy.fft

    function = getattr(scipy.fft, name)
    with scipy.fft.set_backend("scipy", only=True):
        if isinstance(x, np.ndarray):
            return function(x, *args, workers=workers)
        return to_package(function(np.asarray(x), *args, workers=workers), x)


def to_package(result: np.ndarray, like):
    """``result`` as an array of ``like``'s library (zero-copy through DLPack where it can)."""
    if isinstance(like, np.ndarray):
        return result
    package = type(like).__module__.partition(".")[0]
    module = importlib.import_module({"jaxlib": "jax.numpy", "jax": "jax.numpy"}.get(package, package))
    converter = getattr(module, "from_dlpack", None) or getattr(module, "asarray")
    return converter(np.ascontiguousarray(result))
