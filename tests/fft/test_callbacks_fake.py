"""Callbacks and the fused norm scale through the GPU code path, on the host stand-in for the device
(``_fake_device.py``): which pass gets which callback, with which pointer, in which plan, and the
results against numpy. The fake runs a test's Python callback per element with the offsets cuFFT
documents (elements from the execution's pointer, following the layout)."""

import numpy as np
import pytest

import nvmathx.fft as nfft
from helpers.requirements import needs_nvrtc
from nvmathx import OperandError, OptionsError
from nvmathx._codegen import elementwise as _kernels
from nvmathx._fftcore import callbacks as _callbacks
from nvmathx._fftcore import plan as _cufft_plan
from nvmathx._fftcore.scale_callback import scale_callback
from nvmathx.device_api import set_cache_dir

from ._fake_device import install, to_device, to_host, view_at

N = 16


@pytest.fixture
def fake(monkeypatch, tmp_path):
    set_cache_dir(tmp_path)
    nfft.plan_cache.clear()
    fake_cufft, _ = install(monkeypatch)
    monkeypatch.setattr(_callbacks, "require_lto", lambda argument: None)
    monkeypatch.setattr(_cufft_plan, "_device_capability", lambda device_id: (9, 0))
    launches = []
    launch = _kernels._launch
    monkeypatch.setattr(_kernels, "_launch", lambda *args: (launches.append(args[2]), launch(*args)))
    yield fake_cufft, launches
    nfft.plan_cache.clear()
    set_cache_dir(None)


def _callback(role, element, label, user_info=None):
    """A compiled callback whose LTO-IR is a unique stand-in: the fake finds its emulator by it."""
    symbol = _callbacks.cufft_symbol(role, element)
    return nfft.CompiledCallback(role, element, user_info, "sm_90", symbol, b"\xedCN\x7f" + label.encode(), label * 2)


def window_load(data, offset, window, smem):
    return data[offset] * window[offset % N]


def filter_store(data, offset, value, h, smem):
    data[offset] = value * h[offset]


def _close(got, expected, tolerance=1e-10):
    np.testing.assert_allclose(got, expected, rtol=tolerance, atol=tolerance * np.abs(expected).max())


def test_prolog_reads_user_data_and_plans_apart(fake, rng):
    fake_cufft, _ = fake
    x = rng.standard_normal((5, N))
    window = np.hanning(N)
    device_window = to_device(window)
    prolog = _callback("prolog", "float64", "nvmathx_prolog_w", "float64")
    fake_cufft.emulators[prolog.ltoir] = (window_load, view_at(device_window.ptr, (N,), (1,), np.float64))
    device_x = to_device(x)
    plain = nfft.rfft(device_x)
    windowed = nfft.rfft(device_x, prolog=(prolog, device_window))
    _close(to_host(plain), np.fft.rfft(x))
    _close(to_host(windowed), np.fft.rfft(x * window))
    assert nfft.plan_cache.info().size == 2  # a callback plan is an entry of its own
    loads = [c for calls in fake_cufft.callbacks.values() for c in calls]
    assert loads == [(prolog.ltoir, 3, [device_window.ptr])]  # LD_REAL_DOUBLE with the window's pointer
    nfft.rfft(device_x, prolog=(prolog, device_window))
    assert nfft.plan_cache.info().size == 2  # the same callback and data: a cache hit
    other = to_device(2 * window)
    fake_cufft.emulators[prolog.ltoir] = (window_load, view_at(other.ptr, (N,), (1,), np.float64))
    _close(to_host(nfft.rfft(device_x, prolog=(prolog, other))), np.fft.rfft(x * 2 * window))
    assert nfft.plan_cache.info().size == 3  # other user data: another plan


def test_epilog_on_a_batched_strided_c2c(fake, rng):
    fake_cufft, _ = fake
    x = rng.standard_normal((4, 3, N)) + 1j * rng.standard_normal((4, 3, N))
    view = x.transpose(1, 0, 2)  # batch axes that do not collapse into one
    h = rng.standard_normal((3, 4, N)) + 1j * rng.standard_normal((3, 4, N))
    epilog = _callback("epilog", "complex128", "nvmathx_epilog_h", "complex128")
    device_view = to_device(view)
    probe = nfft.fft(device_view)  # the result's layout, which the filter must share
    filter_host = np.empty_like(to_host(probe))
    device_h = to_device(filter_host)
    h_view = view_at(device_h.ptr, h.shape, device_h.strides, np.complex128)
    h_view[...] = h
    result_strides = probe.strides
    assert tuple(device_h.strides) == tuple(result_strides)
    fake_cufft.emulators[epilog.ltoir] = (filter_store, view_at(device_h.ptr, (h.size,), (1,), np.complex128))
    _close(to_host(nfft.fft(device_view, epilog=(epilog, device_h))), np.fft.fft(view) * h)


@needs_nvrtc
def test_fused_ortho_uses_the_scale_callback(fake, rng):
    fake_cufft, launches = fake
    x = rng.standard_normal((6, N)) + 1j * rng.standard_normal((6, N))
    device_x = to_device(x)
    for _ in range(2):
        _close(to_host(nfft.fft(device_x, norm="ortho")), np.fft.fft(x, norm="ortho"))
        _close(to_host(nfft.ifft(device_x, norm="ortho")), np.fft.ifft(x, norm="ortho"))
        _close(to_host(nfft.fft(device_x, norm="forward")), np.fft.fft(x, norm="forward"))
    assert not [name for name in launches if name.startswith("scale")]  # no elementwise pass
    scale_code = scale_callback("complex128", "sm_90").ltoir
    scaled = [calls for calls in fake_cufft.callbacks.values() if calls[0][0] == scale_code]
    assert len(scaled) == 2  # one plan per factor (1/sqrt(N) both ways, 1/N), made once
    factors = sorted(float(view_at(calls[0][2][0], (1,), (1,), np.float64)[0]) for calls in scaled)
    assert np.allclose(factors, [1 / N, 1 / np.sqrt(N)])
    assert nfft.plan_cache.info().size == 1  # all of it in the one cached transform
    _close(to_host(nfft.ifft(device_x)), np.fft.ifft(x))  # the default inverse keeps its pass
    assert [name for name in launches if name.startswith("scale")]


def test_ortho_falls_back_when_callbacks_cannot_link(fake, monkeypatch, rng):
    _, launches = fake

    def unavailable(argument):
        raise nfft.CallbacksUnavailableError(f"{argument}: cuFFT 11206 has no LTO callbacks")

    monkeypatch.setattr(_callbacks, "require_lto", unavailable)
    x = rng.standard_normal((3, N)).astype(np.float32)
    _close(to_host(nfft.rfft(to_device(x), norm="ortho")), np.fft.rfft(x.astype(np.float64), norm="ortho"), 2e-5)
    assert [name for name in launches if name.startswith("scale")]


def test_scale_folds_into_a_copy_without_a_callback(fake, rng):
    fake_cufft, launches = fake
    x = rng.standard_normal((4, N)) + 1j * rng.standard_normal((4, N))
    _close(to_host(nfft.fft(to_device(x), n=2 * N, norm="ortho")), np.fft.fft(x, n=2 * N, norm="ortho"))
    assert not fake_cufft.callbacks and not [name for name in launches if name.startswith("scale")]


def test_callback_errors(fake, rng):
    x = rng.standard_normal((4, N))
    device_x = to_device(x)
    prolog = _callback("prolog", "float64", "nvmathx_prolog_p")
    with pytest.raises(OptionsError, match=r"^prolog: this R2C layout reads the operand through a copy"):
        nfft.rfft(device_x, n=2 * N, prolog=prolog)  # padding copies the operand first
    with pytest.raises(OptionsError, match=r"^prolog: .*compiled for float64 elements; this transform loads complex"):
        nfft.fft(to_device(x + 0j), prolog=prolog)
    with pytest.raises(OptionsError, match=r"^epilog: this callback was compiled as a prolog"):
        nfft.fft(to_device(x + 0j), epilog=prolog)
    with pytest.raises(OptionsError, match=r"^prolog: callbacks run on cuFFT"):
        nfft.rfft(x, prolog=prolog)
    with pytest.raises(OperandError, match=r"^prolog: the user data must be on the operand's GPU 0"):
        nfft.rfft(device_x, prolog=(prolog, np.ones(N)))
    spectrum = to_device(np.fft.rfft(x))
    complex_prolog = _callback("prolog", "complex128", "nvmathx_prolog_c")
    with pytest.raises(OptionsError, match=r"^prolog: this C2R layout reads the operand through a copy"):
        nfft.irfft(spectrum, prolog=complex_prolog)  # cuFFT's C2R overwrites its input: copied unless allowed
    assert nfft.plan_cache.info().size == 0


def test_c2r_prolog_with_overwrite_and_epilog(fake, rng):
    fake_cufft, _ = fake
    spectrum = np.fft.rfft(rng.standard_normal((3, N)))
    gain = rng.standard_normal(N)
    device_gain = to_device(gain)

    def scaled_load(data, offset, info, smem):
        return data[offset] * 0.5

    def gain_store(data, offset, value, g, smem):
        data[offset] = value * g[offset % N]

    prolog = _callback("prolog", "complex128", "nvmathx_prolog_half")
    epilog = _callback("epilog", "float64", "nvmathx_epilog_gain", "float64")
    fake_cufft.emulators[prolog.ltoir] = (scaled_load, None)
    fake_cufft.emulators[epilog.ltoir] = (gain_store, view_at(device_gain.ptr, (N,), (1,), np.float64))
    result = nfft.irfft(to_device(spectrum), overwrite_x=True, prolog=prolog, epilog=(epilog, device_gain))
    _close(to_host(result), np.fft.irfft(spectrum * 0.5) * gain)
    (calls,) = fake_cufft.callbacks.values()  # one pass took both
    assert [(code, kind) for code, kind, _ in calls] == [(prolog.ltoir, 1), (epilog.ltoir, 7)]


def test_stateful_plan_with_callbacks(fake, rng):
    fake_cufft, _ = fake
    x = rng.standard_normal((5, N))
    window = np.blackman(N)
    device_window = to_device(window)
    prolog = _callback("prolog", "float64", "nvmathx_prolog_s", "float64")
    fake_cufft.emulators[prolog.ltoir] = (window_load, view_at(device_window.ptr, (N,), (1,), np.float64))
    device_x = to_device(x)
    with nfft.FFT(device_x, axes=[1]) as plan:
        plain_key = plan.key
        plan.plan(prolog=(prolog, device_window))
        assert plan.key != plain_key and plan.key[:len(plain_key)] == plain_key
        _close(to_host(plan.execute()), np.fft.rfft(x * window))
        window[:] = 1.0  # the array is bound, its contents are read at every execution
        view_at(device_window.ptr, (N,), (1,), np.float64)[...] = window
        _close(to_host(plan.execute()), np.fft.rfft(x))
        with pytest.raises(OperandError, match="^plan: "):
            nfft.rfft(device_x, plan=plan)  # a plan with callbacks serves only calls with them
        _close(to_host(nfft.rfft(device_x, plan=plan, prolog=(prolog, device_window))), np.fft.rfft(x))
    with nfft.FFT(x) as host_plan, pytest.raises(OptionsError, match="^prolog: callbacks run on cuFFT"):
        host_plan.plan(prolog=prolog)
