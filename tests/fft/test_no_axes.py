"""A transform over no axis (``axes=[]``, ``axes=()``, or ``s=[]`` without axes), as scipy.fft 1.17
does it: the complex fftn/ifftn/fft2/ifft2 return ``x`` itself (same object, dtype and values; a
list comes back as ``numpy.asarray`` makes it), and the real and Hermitian variants raise an
OptionsError naming ``axes``. nvmathx still checks what any call checks (dtype, ``norm``,
``workers``, ``plan``, callbacks), and an ``s`` with entries for no axis names ``s`` where scipy
ignores it. On the CPU space, the GPU code path (``_fake_device.py``) and a real GPU."""

import numpy as np
import pytest
import scipy.fft

import nvmathx.fft as nfft
from nvmathx import OperandError, OptionsError, UnsupportedOperandError

from ._fake_device import install, to_device

SPACES = ["cpu", "fake-gpu", pytest.param("gpu", marks=pytest.mark.gpu)]
COMPLEX = ["fftn", "ifftn", "fft2", "ifft2"]
REAL_OR_HERMITIAN = ["rfftn", "irfftn", "rfft2", "irfft2", "hfftn", "ihfftn", "hfft2", "ihfft2"]
NO_AXIS = {"axes=[]": {"axes": []}, "axes=()": {"axes": ()}, "s=[], axes=[]": {"s": [], "axes": []}}
DTYPES = ["complex128", "complex64", "float64", "float32", "float16", "int64", "bool"]


@pytest.fixture
def space(request, monkeypatch):
    nfft.plan_cache.clear()
    if request.param == "fake-gpu":
        install(monkeypatch)
    yield request.param
    nfft.plan_cache.clear()


def _on(space, host):
    if space == "cpu":
        return host
    if space == "fake-gpu":
        return to_device(host)
    try:
        import cupy
    except ImportError:
        from helpers.torch_cuda import torch_with_cuda

        return torch_with_cuda().from_numpy(np.array(host, order="C")).cuda()  # (0-d stays 0-d)
    return cupy.asarray(host)


def _values(dtype, rng):
    values = rng.standard_normal((3, 5)) + 1j * rng.standard_normal((3, 5))
    if dtype == "bool":
        return values.real > 0
    if dtype == "int64":
        return np.round(10 * values.real).astype(np.int64)
    return (values if dtype.startswith("complex") else values.real).astype(dtype)


@pytest.mark.parametrize("space", SPACES, indirect=True)
@pytest.mark.parametrize("name", COMPLEX)
@pytest.mark.parametrize("no_axis", sorted(NO_AXIS))
@pytest.mark.parametrize("dtype", DTYPES)
def test_complex_transforms_return_x_itself(space, rng, name, no_axis, dtype):
    host = _values(dtype, rng)
    expected = host.copy()
    assert getattr(scipy.fft, name)(host, **NO_AXIS[no_axis]) is host  # what scipy.fft does
    x = _on(space, host)
    assert getattr(nfft, name)(x, **NO_AXIS[no_axis]) is x
    np.testing.assert_array_equal(host, expected)


@pytest.mark.parametrize("name", ["fftn", "ifftn"])
def test_s_empty_without_axes_is_no_axis_too(rng, name):
    x = rng.standard_normal((3, 5))
    assert getattr(scipy.fft, name)(x, s=[]) is x
    assert getattr(nfft, name)(x, s=[]) is x


def test_lists_scalars_and_0d_arrays_come_back_as_scipy_returns_them():
    for value in ([1, 2, 3], [[1.5, 2.0]], (1j, 2j), 3.0):
        got, expected = nfft.fftn(value, axes=[]), scipy.fft.fftn(value, axes=[])
        assert type(got) is np.ndarray and got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)
    zero_d = np.array(2.0 + 1j)
    assert nfft.fftn(zero_d, axes=()) is zero_d is scipy.fft.fftn(zero_d, axes=())


@pytest.mark.parametrize("space", SPACES, indirect=True)
@pytest.mark.parametrize("name", REAL_OR_HERMITIAN)
@pytest.mark.parametrize("no_axis", sorted(NO_AXIS))
def test_real_and_hermitian_transforms_name_axes(space, rng, name, no_axis):
    host = rng.standard_normal((3, 5))
    if name in ("irfftn", "irfft2", "hfftn", "hfft2"):
        host = host + 1j
    with pytest.raises(ValueError, match="at least 1 axis"):  # scipy refuses it too
        getattr(scipy.fft, name)(host, **NO_AXIS[no_axis])
    with pytest.raises(OptionsError, match="^axes: .*at least one axis") as info:
        getattr(nfft, name)(_on(space, host), **NO_AXIS[no_axis])
    assert info.value.argument == "axes"


@pytest.mark.parametrize("space", SPACES, indirect=True)
def test_the_usual_checks_still_apply(space, rng):
    x = _on(space, rng.standard_normal((3, 5)) + 0j)
    with pytest.raises(OptionsError, match="^s: has 2 entries but 0 axes"):
        nfft.fftn(x, s=(3, 5), axes=[])  # scipy ignores s here; a length for no axis is a mistake
    with pytest.raises(OptionsError, match="^norm: "):
        nfft.fftn(x, axes=[], norm="unitary")
    with pytest.raises(OptionsError, match="^workers: "):
        nfft.ifftn(x, axes=[], workers=0)
    with nfft.FFT(x) as plan, pytest.raises(OperandError, match=r"^plan: was made for axes \(0, 1\)"):
        nfft.fftn(x, axes=[], plan=plan)


def test_unsupported_dtypes_are_refused_as_on_any_call():
    for value in (np.ones(3, np.longdouble), np.array(["a", "b"]), np.array([object()])):
        if value.dtype == np.longdouble and value.dtype.itemsize == 8:
            continue  # long double is double precision here
        with pytest.raises(UnsupportedOperandError, match="^x: "):
            nfft.fftn(value, axes=[])


def test_callbacks_with_no_axis_name_the_callback(monkeypatch):
    install(monkeypatch)
    from nvmathx._fftcore import callbacks as _callbacks

    x = to_device(np.ones((3, 5), complex))
    symbol = _callbacks.cufft_symbol("prolog", "complex128")
    prolog = nfft.CompiledCallback("prolog", "complex128", None, "sm_90", symbol, b"\xedCN\x7fp", "p")
    with pytest.raises(OptionsError, match="^prolog: no axis is transformed"):
        nfft.fftn(x, axes=[], prolog=prolog)
    with pytest.raises(OptionsError, match="^epilog: expected a callback"):
        nfft.fftn(x, axes=[], epilog="not a callback")
    nfft.plan_cache.clear()


def test_the_scipy_backend_serves_no_axis_on_the_gpu_path(monkeypatch):
    install(monkeypatch)
    x = to_device(np.ones((3, 5), complex))
    with scipy.fft.set_backend(nfft.backend):
        assert scipy.fft.fftn(x, axes=[]) is x
        with pytest.raises(OptionsError, match="^axes: "):
            scipy.fft.irfftn(x, axes=[])
    nfft.plan_cache.clear()


def test_the_stateful_fft_needs_an_axis(rng):
    with pytest.raises(OptionsError, match="^axes: expected at least one axis") as info:
        nfft.FFT(rng.standard_normal((3, 5)) + 0j, axes=[])
    assert info.value.argument == "axes"


@pytest.mark.parametrize("space", SPACES, indirect=True)
@pytest.mark.parametrize("name", ["fftn", "ifftn"])
@pytest.mark.parametrize("dtype", ["complex128", "float32", "int64"])
def test_a_0d_array_has_no_axis_to_transform(space, rng, name, dtype):
    """numpy.fft and scipy.fft return a 0-d operand of fftn/ifftn itself (every axis of it: none)."""
    host = np.asarray(_values(dtype, rng)[0, 0])
    assert host.shape == () and getattr(scipy.fft, name)(host) is host and getattr(np.fft, name)(host) is host
    x = _on(space, host)
    assert getattr(nfft, name)(x) is x and x.shape == ()


def test_a_0d_torch_tensor_has_no_axis_to_transform(rng):
    torch = pytest.importorskip("torch")
    x = torch.tensor(complex(rng.standard_normal()), dtype=torch.complex128)
    assert nfft.fftn(x) is x and nfft.ifftn(x, norm="ortho") is x


@pytest.mark.parametrize("space", SPACES, indirect=True)
@pytest.mark.parametrize("name", ["rfftn", "irfftn", "hfftn", "ihfftn"])
def test_real_and_hermitian_transforms_of_a_0d_array_name_x(space, name):
    host = np.array(2.0 if name in ("rfftn", "ihfftn") else 2.0 + 1j)
    with pytest.raises(OptionsError, match="^x: .*0-d") as info:
        getattr(nfft, name)(_on(space, host))
    assert info.value.argument == "x"


@pytest.mark.parametrize("space", SPACES, indirect=True)
@pytest.mark.parametrize("name", ["fft", "rfft", "fft2", "ifft2"])
def test_forms_with_default_axes_refuse_a_0d_array(space, name):
    """The 1-D and 2-D forms transform axes a 0-d array lacks (scipy.fft raises too)."""
    host = np.array(2.0 + (0j if name != "rfft" else 0))
    with pytest.raises(Exception):  # noqa: B017, PT011  (scipy's IndexError or ValueError)
        getattr(scipy.fft, name)(host)
    with pytest.raises(OptionsError, match="^(x|axes): "):
        getattr(nfft, name)(_on(space, host))
