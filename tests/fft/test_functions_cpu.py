"""The scipy.fft functions on the CPU: against numpy.fft, scipy.fft and a naive DFT."""

import numpy as np
import pytest
import scipy.fft

import nvmathx.fft as nfft
from helpers.dft import dft_reference
from nvmathx import OperandError, OptionsError

C2C_1D = ["fft", "ifft"]
ALL_1D = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
ALL_ND = ["fft2", "ifft2", "fftn", "ifftn", "rfft2", "irfft2", "rfftn", "irfftn", "hfft2", "ihfft2", "hfftn", "ihfftn"]
NORMS = [None, "backward", "ortho", "forward"]
REAL_INPUT = {"rfft", "ihfft", "rfft2", "rfftn", "ihfft2", "ihfftn"}


def _operand(name, shape, rng):
    x = rng.standard_normal(shape)
    return x if name in REAL_INPUT else x + 1j * rng.standard_normal(shape)


def naive_dft(x, inverse=False):
    n = x.shape[-1]
    k = np.arange(n)
    sign = 1 if inverse else -1
    matrix = np.exp(sign * 2j * np.pi * np.outer(k, k) / n)
    return x @ matrix.T


@pytest.mark.parametrize("name", ALL_1D)
@pytest.mark.parametrize("norm", NORMS)
def test_one_dimensional_against_scipy(rng, name, norm):
    x = _operand(name, (3, 10), rng)
    for n in (None, 7, 16):
        for axis in (-1, 0):
            expected = getattr(scipy.fft, name)(x, n=n, axis=axis, norm=norm)
            got = getattr(nfft, name)(x, n=n, axis=axis, norm=norm)
            np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ALL_ND)
@pytest.mark.parametrize("norm", NORMS)
def test_n_dimensional_against_scipy(rng, name, norm):
    x = _operand(name, (4, 6, 8), rng)
    cases = [{}, {"s": (5, 8)}, {"axes": (0, 2)}, {"s": (3, 4), "axes": (2, 0)}]
    if name.endswith("n"):
        cases += [{"axes": (1,)}, {"s": (3, 5, 6)}]
    for kwargs in cases:
        expected = getattr(scipy.fft, name)(x, norm=norm, **kwargs)
        got = getattr(nfft, name)(x, norm=norm, **kwargs)
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
        if not kwargs and hasattr(np.fft, name):  # the numpy spelling agrees too
            np.testing.assert_allclose(got, getattr(np.fft, name)(x, norm=norm), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("n", [1, 2, 4, 8, 16, 64, 3, 5, 7, 11, 13, 97])
@pytest.mark.parametrize("norm", NORMS)
def test_naive_dft(rng, n, norm):
    x = rng.standard_normal((2, n)) + 1j * rng.standard_normal((2, n))
    forward_scale = {None: 1, "backward": 1, "ortho": 1 / np.sqrt(n), "forward": 1 / n}[norm]
    inverse_scale = {None: 1 / n, "backward": 1 / n, "ortho": 1 / np.sqrt(n), "forward": 1}[norm]
    np.testing.assert_allclose(nfft.fft(x, norm=norm), forward_scale * naive_dft(x), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(nfft.ifft(x, norm=norm), inverse_scale * naive_dft(x, inverse=True), rtol=1e-10,
                               atol=1e-10)
    real = x.real.copy()
    np.testing.assert_allclose(nfft.rfft(real, norm=norm), forward_scale * naive_dft(real)[:, : n // 2 + 1],
                               rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("n", [1, 2, 5, 8, 17])
def test_round_trips(rng, norm, n):
    x = rng.standard_normal((3, n)) + 1j * rng.standard_normal((3, n))
    np.testing.assert_allclose(nfft.ifft(nfft.fft(x, norm=norm), norm=norm), x, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(nfft.ifftn(nfft.fftn(x, norm=norm), norm=norm), x, rtol=1e-12, atol=1e-12)
    real = x.real.copy()
    np.testing.assert_allclose(nfft.irfft(nfft.rfft(real, norm=norm), n, norm=norm), real, rtol=1e-12, atol=1e-12)
    # hfft reads x as the first half of a Hermitian spectrum (x[0] real: its imaginary part is
    # dropped) and ihfft recovers that half, padded with one zero to 2 * n // 2 + 1 points.
    hermitian = np.concatenate([x, np.zeros((3, 1))], axis=1)
    hermitian[:, 0] = hermitian[:, 0].real
    np.testing.assert_allclose(nfft.ihfft(nfft.hfft(x, 2 * n, norm=norm), norm=norm), hermitian, rtol=1e-12,
                               atol=1e-12)
    np.testing.assert_allclose(nfft.hfft(x, 2 * n, norm=norm), dft_reference("hfft", x, 2 * n, norm=norm), rtol=1e-12,
                               atol=1e-12)
    # Parseval with the orthonormal scale
    if norm == "ortho":
        np.testing.assert_allclose(np.linalg.norm(nfft.fft(x, norm=norm)), np.linalg.norm(x), rtol=1e-12)


def test_lists_and_workers():
    np.testing.assert_allclose(nfft.fft([1, 2, 3, 4], workers=2), np.fft.fft([1, 2, 3, 4]))


def test_float32_keeps_single_precision(rng):
    x = rng.standard_normal(16).astype(np.float32)
    assert nfft.fft(x).dtype == np.complex64
    assert nfft.rfft(x).dtype == np.complex64


def test_overwrite_x_is_accepted_and_input_intact_by_default(rng):
    x = rng.standard_normal((4, 5)) + 1j
    copy = x.copy()
    nfft.irfft(x)
    np.testing.assert_array_equal(x, copy)
    nfft.fft(x, overwrite_x=True)


# -- bad inputs: typed errors naming the argument -------------------------------------------------


@pytest.mark.parametrize("call,argument", [
    (lambda x: nfft.irfftn(x, axes=()), "axes"),
    (lambda x: nfft.fftn(x, axes=(0, 0)), "axes"),
    (lambda x: nfft.fftn(x, axes=(0, -2)), "axes"),
    (lambda x: nfft.fft2(x, axes=(5, 0)), "axes"),
    (lambda x: nfft.fft(x, axis=2), "axis"),
    (lambda x: nfft.fft(x, n=0), "n"),
    (lambda x: nfft.fft(x, n=-3), "n"),
    (lambda x: nfft.fftn(x, s=(0, 4)), "s"),
    (lambda x: nfft.fftn(x, s=(4, 4), axes=(0,)), "s"),
    (lambda x: nfft.fft(x, norm="bogus"), "norm"),
    (lambda x: nfft.fft(x, n=2.5), "n"),
    (lambda x: nfft.irfft(x[:, :1]), "n"),
])
def test_bad_arguments(call, argument):
    x = np.ones((4, 6), complex)
    with pytest.raises(OptionsError) as info:
        call(x)
    assert info.value.argument == argument
    assert argument in str(info.value)
    assert isinstance(info.value, ValueError)


def test_zero_length_axis_rejected():
    with pytest.raises(OptionsError):
        nfft.fft(np.ones((3, 0)))


def test_not_an_array():
    from nvmathx import UnsupportedOperandError

    with pytest.raises(UnsupportedOperandError) as info:
        nfft.fft(object())
    assert info.value.argument == "x"


def test_mismatched_plan():
    x = np.ones((4, 8), complex)
    with nfft.FFT(np.ones((4, 4), complex)) as plan:
        plan.plan()
        with pytest.raises(OperandError) as info:
            nfft.fft(x, plan=plan)
        assert info.value.argument == "plan"
    with pytest.raises(OptionsError) as info:
        nfft.fft(x, plan="not a plan")
    assert info.value.argument == "plan"


def test_functions_take_execution_and_stream_as_matmul_does(rng):
    """``execution="cpu"`` (or an ExecutionCPU, whose ``num_threads`` become ``workers``) runs as the
    default does; a stream with CPU execution is refused, naming ``stream``."""
    from nvmathx import ExecutionCPU

    x = rng.standard_normal((4, 6)) + 1j * rng.standard_normal((4, 6))
    expected = np.fft.fftn(x, norm="forward")
    np.testing.assert_allclose(nfft.fftn(x, norm="forward", execution="cpu"), expected, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(nfft.fftn(x, norm="forward", execution=ExecutionCPU(num_threads=2)), expected,
                               rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(nfft.ihfft(x.real.tolist(), execution="cpu"), np.fft.ihfft(x.real),
                               rtol=1e-12, atol=1e-14)
    for call in (lambda: nfft.fft(x, stream=0), lambda: nfft.fft(x, execution="cpu", stream=0)):
        with pytest.raises(OptionsError, match="^stream"):
            call()
    with pytest.raises(OptionsError, match="^execution"):
        nfft.fft(x, execution="tpu")
