"""What the fused engine's GPU tests share: operands, the error against a float64 reference, a
plan with ``engine="fused"`` and the callbacks they attach."""

import numpy as np
import pytest

import nvmathx.fft as nfft

TOLERANCE = {np.complex64: 2e-6, np.complex128: 1e-14}  # per log2(points), relative to the norm


def cupy_or_skip():
    return pytest.importorskip("cupy")


def signal(shape, dtype, rng):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def relative_error(got, expected):
    got, expected = np.asarray(got, np.complex128), np.asarray(expected, np.complex128)
    return np.linalg.norm(got - expected) / np.linalg.norm(expected)


def planned(x, **options):
    """``FFT(x, options={"engine": "fused", **options})``, planned (``axes`` taken from ``options``)."""
    fft = nfft.FFT(x, axes=options.pop("axes", None), options={"engine": "fused", **options})
    fft.plan()
    return fft


def windowed(data, offset, window, shared):
    return data[offset] * window[offset % 4096]


def scale_load(data, offset, factor, shared):
    return data[offset] * factor[offset]


def scale_store(data, offset, value, factor, shared):
    data[offset] = value * factor[offset]


def scaling_callbacks(x, rng):
    """A prolog and an epilog that multiply by fresh random factors of ``x``'s shape (user data on
    the GPU): ``(callbacks, load_factor, store_factor)``, ``callbacks`` as ``plan()`` takes them."""
    cupy = cupy_or_skip()
    dtype = np.dtype(x.dtype)
    real = np.float32 if dtype == np.complex64 else np.float64
    load_factor = rng.uniform(0.5, 2.0, x.shape).astype(real)
    store_factor = rng.uniform(0.5, 2.0, x.shape).astype(real)
    prolog = nfft.compile_prolog(scale_load, element_dtype=dtype, user_info_dtype=real)
    epilog = nfft.compile_epilog(scale_store, element_dtype=dtype, user_info_dtype=real)
    callbacks = {"prolog": (prolog, cupy.asarray(load_factor)), "epilog": (epilog, cupy.asarray(store_factor))}
    return callbacks, load_factor, store_factor
