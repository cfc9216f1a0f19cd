"""torch's lazy views (conjugate and negative bits) through the fft functions and FFT on the GPU code
path, with torch CPU tensors presented as device tensors to the host fake of cuFFT; checked against
scipy.fft on the views' values. cuFFT reads memory, so every lazy view is materialised."""

import numpy as np
import pytest
import scipy.fft

import nvmathx.fft as nfft
from helpers.fake_torch_device import present_torch_as_device

from ._fake_device import install

torch = pytest.importorskip("torch")

VIEWS = {
    "conj": (lambda x: x.conj(), np.conj),
    "neg": (lambda x: torch._neg_view(x), np.negative),
    "neg_conj": (lambda x: torch._neg_view(x.conj()), lambda x: -np.conj(x)),
    "conj_mT": (lambda x: x.mT.conj(), lambda x: np.conj(np.swapaxes(x, -1, -2))),
}


@pytest.fixture
def fake(monkeypatch):
    nfft.plan_cache.clear()
    install(monkeypatch)
    present_torch_as_device(monkeypatch)
    yield
    nfft.plan_cache.clear()


def _close(got, expected, dtype):
    assert isinstance(got, torch.Tensor) and not got.is_conj() and not got.is_neg()
    tolerance = 2e-5 if dtype in ("complex64", "float32") else 1e-11
    assert np.linalg.norm(got.numpy() - expected) <= tolerance * np.linalg.norm(expected)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("name", ["fft", "ifft", "fftn", "irfft", "hfft"])
@pytest.mark.parametrize("view", sorted(VIEWS))
def test_functions_first_and_cached_call(fake, rng, view, name, dtype):
    base = torch.from_numpy((rng.standard_normal((6, 8)) + 1j * rng.standard_normal((6, 8))).astype(dtype))
    make, values = VIEWS[view]
    x = make(base)
    for _ in range(2):  # a cache miss, then a hit (with new values in the same memory)
        _close(getattr(nfft, name)(x), getattr(scipy.fft, name)(values(base.numpy())), dtype)
        base.copy_(torch.from_numpy(rng.standard_normal((6, 8)) + 1j * rng.standard_normal((6, 8))))
    plain = make(base).resolve_conj().resolve_neg()
    _close(getattr(nfft, name)(plain), getattr(scipy.fft, name)(values(base.numpy())), dtype)
    # the views and the plain operand share one layout, and a cuFFT plan: the copy is what differs
    assert nfft.plan_cache.info(0).size == 1


@pytest.mark.parametrize("name", ["rfft", "ihfft"])
def test_real_negative_views(fake, rng, name):
    base = torch.from_numpy(rng.standard_normal((4, 10)))
    for x, values in ((torch._neg_view(base), -base.numpy()), (torch._neg_view(base).mT, -base.numpy().T)):
        for _ in range(2):
            _close(getattr(nfft, name)(x), getattr(scipy.fft, name)(values), "float64")


@pytest.mark.parametrize("view", sorted(VIEWS))
def test_stateful_fft(fake, rng, view):
    base = torch.from_numpy(rng.standard_normal((5, 8)) + 1j * rng.standard_normal((5, 8)))
    make, values = VIEWS[view]
    with nfft.FFT(make(base), axes=[-1]) as plan:
        plan.plan()
        expected = scipy.fft.fft(values(base.numpy()), axis=-1)
        _close(plan.execute(), expected, "complex128")
        _close(plan.execute("inverse"), scipy.fft.ifft(values(base.numpy()), axis=-1, norm="forward"), "complex128")
        other = torch.from_numpy(rng.standard_normal(base.shape) + 1j * rng.standard_normal(base.shape))
        plan.reset_operand(make(other))
        _close(plan.execute(), scipy.fft.fft(values(other.numpy()), axis=-1), "complex128")


def test_host_functions_materialise_views(rng):
    base = torch.from_numpy(rng.standard_normal((3, 8)) + 1j * rng.standard_normal((3, 8)))
    for make, values in VIEWS.values():
        _close(nfft.fft(make(base)), scipy.fft.fft(values(base.numpy())), "complex128")
