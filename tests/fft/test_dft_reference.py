"""Every transform against an independent float64 reference (an explicit DFT matrix product, see
helpers/dft.py): lengths up to 64 (1, primes, powers of two), 1 to 3 dimensions, every ``norm``,
default and explicit lengths (cropped and padded) and axes; on the CPU path (numpy operands), on the
GPU code path with cuFFT and the device replaced by the host stand-in of ``_fake_device.py``, and,
under the ``gpu`` marker, the same cases through cuFFT (cupy, or torch CUDA, operands)."""

import numpy as np
import pytest

import nvmathx.fft as nfft
from helpers.dft import FUNCTIONS, dft_reference, relative_error
from nvmathx._core.device_array import DeviceArray

from ._fake_device import install, to_device, to_host

NORMS = [None, "backward", "ortho", "forward"]
REAL_INPUT = {"rfft", "rfft2", "rfftn", "ihfft", "ihfft2", "ihfftn"}
SHAPES = {1: [(2,), (7,), (16,), (64,)], 2: [(3, 8), (6, 5), (1, 64), (13, 2)], 3: [(2, 3, 5), (4, 1, 6), (3, 4, 8)]}
TOLERANCE = {"double": 1e-12, "single": 1e-5}
SPACES = ["cpu", "fake-gpu", pytest.param("gpu", marks=pytest.mark.gpu)]


def _cases(name, ndim):
    """(shape, keyword arguments) pairs: the defaults on every shape, then lengths and axes."""
    shapes = SHAPES[ndim]
    cases = [(shape, {}) for shape in shapes]
    if name[-1] not in "2n":
        cases.append((shapes[-1], {"n": 9}))  # padded
        cases.append((shapes[-1], {"n": 3}))  # cropped
        if ndim > 1:
            cases.append((shapes[0], {"axis": 0, "n": 5}))
    elif name.endswith("2"):
        cases.append((shapes[0], {"s": (5, 3)}))
        cases.append((shapes[0], {"axes": (1, 0)}))
        if ndim == 3:
            cases.append((shapes[-1], {"axes": (0, 2), "s": (4, 7)}))
    else:
        last = tuple(range(ndim))
        cases.append((shapes[0], {"s": (3,) * ndim}))
        cases.append((shapes[0], {"axes": last[::-1]}))
        cases.append((shapes[-1], {"s": (-1,) + (6,) * (ndim - 1)}))  # -1 keeps an extent
        if ndim > 1:
            cases.append((shapes[-1], {"axes": (0,), "s": (5,)}))
    return cases


def _parameters():
    for name in FUNCTIONS:
        for ndim in (1, 2, 3):
            if name.endswith("2") and ndim < 2:
                continue
            yield name, ndim


def _to_gpu(host):
    try:
        import cupy
    except ImportError:
        torch = pytest.importorskip("torch")
        if not torch.cuda.is_available():
            pytest.skip("neither cupy nor torch CUDA is available")
        return torch.from_numpy(np.ascontiguousarray(host)).cuda()
    return cupy.asarray(host)


def _to_host(array):
    if isinstance(array, np.ndarray):
        return array
    if isinstance(array, DeviceArray):
        return to_host(array)
    return array.get() if hasattr(array, "get") else array.cpu().numpy()


@pytest.fixture
def space_of(request, monkeypatch):
    """``space -> (to device, plan cache cleanup)``: the fake device is installed on demand."""

    def to(space, host):
        if space == "cpu":
            return host
        if space == "fake-gpu":
            if not getattr(request.node, "_fake_installed", False):
                nfft.plan_cache.clear()
                install(monkeypatch)
                request.node._fake_installed = True
            return to_device(host)
        return _to_gpu(host)

    yield to
    if getattr(request.node, "_fake_installed", False):
        nfft.plan_cache.clear()


@pytest.mark.parametrize("space", SPACES)
@pytest.mark.parametrize("precision", ["double", "single"])
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name, ndim", list(_parameters()))
def test_against_the_explicit_dft(rng, space_of, name, ndim, norm, precision, space):
    function = getattr(nfft, name)
    for shape, kwargs in _cases(name, ndim):
        x = rng.standard_normal(shape)
        if name not in REAL_INPUT:
            x = x + 1j * rng.standard_normal(shape)
        if precision == "single":
            x = x.astype(np.float32 if name in REAL_INPUT else np.complex64)
        operand = space_of(space, x)
        result = _to_host(function(operand, norm=norm, **kwargs))
        s = kwargs.get("n", kwargs.get("s"))
        axes = kwargs.get("axis", kwargs.get("axes"))
        expected = dft_reference(name, x.astype(np.complex128 if np.iscomplexobj(x) else np.float64), s, axes, norm)
        wanted = {"double": (np.float64, np.complex128), "single": (np.float32, np.complex64)}[precision]
        assert result.dtype == (wanted[0] if name.startswith(("irfft", "hfft")) else wanted[1]), (shape, kwargs)
        error = relative_error(result, expected)
        assert error < TOLERANCE[precision], (shape, kwargs, error)


def test_the_reference_is_the_definition():
    """The reference itself, on values whose transforms are known in closed form."""
    n = 12
    k = np.arange(n)
    tone = np.exp(2j * np.pi * 3 * k / n)  # all its energy in bin 3
    expected = np.zeros(n, complex)
    expected[3] = n
    assert relative_error(dft_reference("fft", tone), expected) < 1e-13
    assert relative_error(dft_reference("ifft", expected), tone) < 1e-13
    impulse = np.zeros((4, 6))
    impulse[0, 0] = 1.0
    assert relative_error(dft_reference("rfftn", impulse), np.ones((4, 4))) < 1e-15
    assert relative_error(dft_reference("irfftn", np.ones((4, 4)), norm="forward"), impulse * 24) < 1e-13
    cosine = np.cos(2 * np.pi * 2 * k / n)  # a real, even spectrum: hfft of its half is n/2 at +-2
    half = np.zeros(n // 2 + 1)
    half[2] = n / 2
    assert relative_error(dft_reference("hfft", half, n), cosine * n) < 1e-13
    assert relative_error(dft_reference("ihfft", cosine), half / n) < 1e-13
