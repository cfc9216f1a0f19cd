"""torch's lazy views (conjugate and negative bits) through nvmathx.fft on a real GPU, against torch.fft
on the same views (first and cached calls, and the stateful FFT)."""

import pytest

import nvmathx.fft as nfft
from helpers.torch_cuda import torch_with_cuda

pytestmark = pytest.mark.gpu


@pytest.fixture
def torch():
    return torch_with_cuda()


def _close(got, expected):
    assert not got.is_conj() and not got.is_neg() and got.dtype == expected.dtype
    expected = expected.resolve_conj().resolve_neg()
    rtol = 1e-12 if str(expected.dtype) in ("torch.complex128", "torch.float64") else 1e-5
    assert float((got - expected).abs().norm() / expected.abs().norm()) < rtol


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("name", ["fft", "ifft", "fft2", "irfft", "hfft"])
@pytest.mark.parametrize("view", ["conj", "neg", "neg_conj", "conj_mT"])
def test_functions(torch, rng, view, name, dtype):
    make = {"conj": lambda x: x.conj(), "neg": lambda x: torch._neg_view(x),
            "neg_conj": lambda x: torch._neg_view(x.conj()), "conj_mT": lambda x: x.mT.conj()}[view]
    values = rng.standard_normal((16, 64)) + 1j * rng.standard_normal((16, 64))
    base = torch.from_numpy(values).to(getattr(torch, dtype)).cuda()
    x = make(base)
    for _ in range(2):  # a cache miss, then a hit
        _close(getattr(nfft, name)(x), getattr(torch.fft, name)(x))
        base.mul_(-0.5j)


def test_real_negative_view(torch, rng):
    x = torch._neg_view(torch.from_numpy(rng.standard_normal((8, 32))).cuda())
    for _ in range(2):
        _close(nfft.rfft(x), torch.fft.rfft(x))


def test_stateful(torch, rng):
    base = torch.from_numpy(rng.standard_normal((8, 32)) + 1j * rng.standard_normal((8, 32))).cuda()
    with nfft.FFT(base.conj(), axes=[-1]) as plan:
        plan.plan()
        _close(plan.execute(), torch.fft.fft(base.conj()))
        other = torch.from_numpy(rng.standard_normal((8, 32)) + 1j * rng.standard_normal((8, 32))).cuda()
        plan.reset_operand(torch._neg_view(other))
        _close(plan.execute(), torch.fft.fft(torch._neg_view(other)))
