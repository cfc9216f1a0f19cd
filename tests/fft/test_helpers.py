"""fftfreq, rfftfreq, fftshift, ifftshift on the CPU."""

import numpy as np
import pytest

import nvmathx.fft as nfft
from helpers.torch_random import randn


@pytest.mark.parametrize("n", [1, 4, 5, 16])
@pytest.mark.parametrize("d", [1.0, 0.25])
def test_frequencies(n, d):
    np.testing.assert_array_equal(nfft.fftfreq(n, d), np.fft.fftfreq(n, d))
    np.testing.assert_array_equal(nfft.rfftfreq(n, d), np.fft.rfftfreq(n, d))
    np.testing.assert_array_equal(nfft.fftfreq(n, d, xp=np), np.fft.fftfreq(n, d))


@pytest.mark.parametrize("shape", [(5,), (4, 7), (3, 4, 5)])
def test_shifts(rng, shape):
    x = rng.standard_normal(shape)
    np.testing.assert_array_equal(nfft.fftshift(x), np.fft.fftshift(x))
    np.testing.assert_array_equal(nfft.ifftshift(x), np.fft.ifftshift(x))
    np.testing.assert_array_equal(nfft.ifftshift(nfft.fftshift(x)), x)
    np.testing.assert_array_equal(nfft.fftshift(x, axes=0), np.fft.fftshift(x, axes=0))


def test_torch_cpu_tensor_stays_torch():
    torch = pytest.importorskip("torch")
    x = torch.arange(6.0)
    y = nfft.fftshift(x)
    assert isinstance(y, torch.Tensor)
    assert y.tolist() == np.fft.fftshift(np.arange(6.0)).tolist()
    spectrum = nfft.fft(x)
    assert isinstance(spectrum, torch.Tensor)
    np.testing.assert_allclose(spectrum.numpy(), np.fft.fft(np.arange(6.0)))


def test_torch_lazy_conjugate_is_resolved(rng):
    torch = pytest.importorskip("torch")
    x = torch.complex(randn(rng, 8, dtype=torch.float64), randn(rng, 8, dtype=torch.float64))
    lazy = x.conj()
    assert lazy.is_conj()
    np.testing.assert_allclose(nfft.fft(lazy).numpy(), np.fft.fft(np.conj(x.numpy())))
    with nfft.FFT(lazy) as f:
        f.plan()
        np.testing.assert_allclose(f.execute().numpy(), np.fft.fft(np.conj(x.numpy())))


@pytest.mark.parametrize("shift", [nfft.fftshift, nfft.ifftshift])
def test_shifts_of_a_0d_array_are_copies(rng, shift):
    """No axis to shift: the values, in a new 0-d array of the operand's library (numpy.roll fails here)."""
    torch = pytest.importorskip("torch")
    value = rng.standard_normal()
    for x in (np.array(value), torch.tensor(value, dtype=torch.float64)):
        y = shift(x)
        assert type(y) is type(x) and y.shape == () and float(y) == value
        assert not np.shares_memory(np.asarray(y), np.asarray(x))
