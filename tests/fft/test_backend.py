"""The scipy.fft backend protocol: dispatch, fall-back and signatures."""

import inspect

import numpy as np
import pytest
import scipy.fft

import nvmathx.fft as nfft
from helpers.dft import dft_reference
from nvmathx.fft import _backend

SERVED = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2", "rfftn", "irfftn",
          "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn"]
REAL_INPUT = {"rfft", "rfft2", "rfftn", "ihfft", "ihfft2", "ihfftn"}


@pytest.mark.parametrize("backend", [nfft, nfft.backend], ids=["module", "object"])
@pytest.mark.parametrize("name", SERVED)
def test_each_function_dispatches_exactly_once(rng, name, backend, monkeypatch):
    """With the device check forced on, scipy.fft.<name> reaches our function once and returns its
    result (our CPU path then runs scipy's own backend, never ours again)."""
    calls = []
    real = _backend._SERVED[name]

    def counting(*args, **kwargs):
        calls.append(name)
        return real(*args, **kwargs)

    monkeypatch.setattr(_backend, "_on_device", lambda x: True)
    monkeypatch.setitem(_backend._SERVED, name, counting)
    x = rng.standard_normal((4, 6))
    if name not in REAL_INPUT:
        x = x + 1j * rng.standard_normal((4, 6))
    with scipy.fft.set_backend(backend):
        result = getattr(scipy.fft, name)(x)
    assert calls == [name]
    with scipy.fft.set_backend("scipy", only=True):
        expected = getattr(scipy.fft, name)(x)
    np.testing.assert_allclose(result, expected, rtol=1e-12, atol=1e-12)


def test_host_arrays_are_not_served():
    x = np.ones(8, complex)
    assert nfft.__ua_function__(scipy.fft.fft, (x,), {}) is NotImplemented
    assert nfft.__ua_function__(scipy.fft.fft, (), {"x": [1, 2, 3]}) is NotImplemented
    assert nfft.__ua_function__(scipy.fft.fft, (object(),), {}) is NotImplemented
    assert nfft.__ua_function__(scipy.fft.fft, (), {}) is NotImplemented


def test_unknown_functions_are_not_served(monkeypatch):
    monkeypatch.setattr(_backend, "_on_device", lambda x: True)
    assert nfft.__ua_function__(scipy.fft.dct, (np.ones(8),), {}) is NotImplemented
    assert nfft.__ua_function__(object(), (np.ones(8),), {}) is NotImplemented


@pytest.mark.parametrize("backend", [nfft, nfft.backend], ids=["module", "object"])
def test_scipy_falls_back_for_host_arrays(rng, backend):
    x = rng.standard_normal(16)
    n = np.arange(16)
    # DCT-II from its definition: y[k] = 2 * sum_n x[n] cos(pi k (2n + 1) / 2N)
    dct = 2 * np.cos(np.pi * np.outer(n, 2 * n + 1) / 32) @ x
    with scipy.fft.set_backend(backend):
        np.testing.assert_allclose(scipy.fft.fft(x), dft_reference("fft", x), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(scipy.fft.dct(x), dct, rtol=1e-12, atol=1e-12)
    assert nfft.__ua_domain__ == "numpy.scipy.fft" == nfft.backend.__ua_domain__


@pytest.mark.parametrize("name", SERVED + ["fftfreq", "rfftfreq", "fftshift", "ifftshift"])
def test_signatures_match_scipy(name):
    # Names, kinds and defaults as scipy's (ours carry type annotations, scipy's none).
    ours = [(p.name, p.kind, p.default) for p in inspect.signature(getattr(nfft, name)).parameters.values()]
    theirs = [(p.name, p.kind, p.default) for p in inspect.signature(getattr(scipy.fft, name)).parameters.values()]
    assert ours[:len(theirs)] == theirs
    # Beyond scipy's: the keyword-only callbacks of the cuFFT transforms (hfft* take none), then the
    # execution space and stream of every transform.
    extra = ours[len(theirs):]
    callbacks = [("prolog", inspect.Parameter.KEYWORD_ONLY, None), ("epilog", inspect.Parameter.KEYWORD_ONLY, None)]
    space = [("execution", inspect.Parameter.KEYWORD_ONLY, None), ("stream", inspect.Parameter.KEYWORD_ONLY, None)]
    if name not in SERVED:
        assert extra == []
    else:
        assert extra == ([] if "h" in name else callbacks) + space
    assert getattr(nfft, name).__name__ == name
