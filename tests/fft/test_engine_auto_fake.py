"""``FFTOptions(engine="auto")`` through the GPU code path on the host stand-in (``_fake_device.py``):
which calls and plans take the fused engine, which stay on cuFFT, and that each plans apart. The
fused plan is a numpy fake there; the fused kernel itself runs in tests/device_api/test_fused_fft_host.py
and on the GPU."""

import numpy as np
import pytest

import nvmathx.fft as nfft
from nvmathx._fftcore import callbacks as _callbacks

from ._fake_device import FakeFusedPlan, to_device, to_host

N = 64


def _signal(rng, shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def _close(got, expected):
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10 * np.abs(expected).max())


def test_scaled_calls_run_the_cached_fused_kernel_and_plain_calls_cufft(fake_with, rng):
    fake_with("cached")
    x = _signal(rng, (6, N))
    device_x = to_device(x)
    _close(to_host(nfft.fft(device_x, norm="ortho")), np.fft.fft(x, norm="ortho"))
    assert [rows.fft_type for rows, _ in FakeFusedPlan.made] == ["C2C"]
    _close(to_host(nfft.ifft(device_x, norm="ortho")), np.fft.ifft(x, norm="ortho"))  # the same fused plan
    _close(to_host(nfft.fft(device_x)), np.fft.fft(x))  # unscaled: cuFFT, a plan of its own
    assert len(FakeFusedPlan.made) == 1 and nfft.plan_cache.info().size == 2


def test_a_scaled_call_stays_on_cufft_until_the_kernel_is_cached(fake_with, rng):
    fake_cufft = fake_with("absent")
    x = _signal(rng, (3, N))
    _close(to_host(nfft.fft(to_device(x), norm="forward")), np.fft.fft(x, norm="forward"))
    assert FakeFusedPlan.made == [] and fake_cufft.plans


def test_real_transforms_and_the_conjugated_forms(fake_with, rng):
    fake_with("cached")
    x = rng.standard_normal((4, N))
    half = np.fft.rfft(x)
    _close(to_host(nfft.rfft(to_device(x), norm="ortho")), np.fft.rfft(x, norm="ortho"))
    _close(to_host(nfft.irfft(to_device(half), n=N, norm="ortho")), np.fft.irfft(half, n=N, norm="ortho"))
    assert [rows.fft_type for rows, _ in FakeFusedPlan.made] == ["R2C", "C2R"]
    # hfft transforms the conjugated operand: the fused C2R does not conjugate, so cuFFT runs it
    _close(to_host(nfft.hfft(to_device(half), n=N, norm="ortho")), np.fft.hfft(half, n=N, norm="ortho"))
    assert len(FakeFusedPlan.made) == 2


def test_a_plan_with_callbacks_takes_the_fused_engine_unless_told(fake_with, rng):
    fake_with("absent")  # callbacks build the kernel they need
    device_x = to_device(_signal(rng, (3, N)))
    symbol = _callbacks.cufft_symbol("prolog", "complex128")
    prolog = nfft.CompiledCallback("prolog", "complex128", None, "sm_90", symbol, b"\xedCN\x7fauto", "auto")
    with nfft.FFT(device_x, axes=[1]) as fft:
        fft.plan(prolog=prolog)
        assert fft.engine == "fused"
    assert [(rows.fft_type, callbacks) for rows, callbacks in FakeFusedPlan.made] == [("C2C", True)]
    with nfft.FFT(device_x, axes=[1], options={"engine": "cufft"}) as fft:
        fft.plan(prolog=prolog)
        assert fft.engine == "cufft"
    with nfft.FFT(to_device(_signal(rng, (3, N, N)))) as fft:  # two axes: not one block row
        fft.plan(prolog=prolog)
        assert fft.engine == "cufft"
    assert len(FakeFusedPlan.made) == 1


def test_where_the_fused_engine_cannot_run_auto_says_why(fake_with, rng, caplog):
    fake_with("libmathdx is not available (not installed)")
    device_x = to_device(_signal(rng, (3, N)))
    symbol = _callbacks.cufft_symbol("epilog", "complex128")
    epilog = nfft.CompiledCallback("epilog", "complex128", None, "sm_90", symbol, b"\xedCN\x7fwhy", "why")
    with nfft.FFT(device_x, axes=[1]) as fft, caplog.at_level("INFO"):
        fft.plan(epilog=epilog)
        assert fft.engine == "cufft"
    assert "libmathdx is not available (not installed)" in caplog.text
    _close(to_host(nfft.fft(device_x, norm="ortho")), np.fft.fft(to_host(device_x), norm="ortho"))
    assert FakeFusedPlan.made == []


def test_the_function_forms_log_the_engine_they_plan_with(fake_with, rng, caplog):
    fake_with("cached")
    device_x = to_device(_signal(rng, (3, N)))
    with caplog.at_level("INFO", logger="nvmathx"):
        nfft.fft(device_x, norm="ortho")
        nfft.fft(device_x)
    planned = [record.getMessage() for record in caplog.records if "planned" in record.getMessage()]
    assert len(planned) == 2
    assert "engine fused" in planned[0] and "options.engine='auto'" in planned[0]
    assert "engine cufft" in planned[1] and "a plain transform" in planned[1]
    caplog.clear()
    with caplog.at_level("INFO", logger="nvmathx"):
        nfft.fft(device_x, norm="ortho")  # a cached plan: nothing is chosen, nothing is logged
    assert not [record for record in caplog.records if "planned" in record.getMessage()]


@pytest.mark.parametrize("state, fused", [("cached", True), ("absent", False)])
def test_a_plain_transform_the_table_measured_faster_takes_the_cached_fused_kernel(fake_with, rng, state, fused):
    """C2R 4096 float32 is in the measured table for this GPU family: auto runs it in the fused kernel
    once that is cached, never building it for a plain call; a plain C2C stays on cuFFT."""
    fake_with(state)
    half = np.fft.rfft(rng.standard_normal((3, 4096)), axis=1).astype(np.complex64)
    expected = np.fft.irfft(half.astype(np.complex128), n=4096)
    np.testing.assert_allclose(to_host(nfft.irfft(to_device(half), n=4096)), expected, rtol=1e-5,
                               atol=1e-5 * np.abs(expected).max())  # float32
    assert [rows.fft_type for rows, _ in FakeFusedPlan.made] == (["C2R"] if fused else [])
    x = _signal(rng, (3, N)).astype(np.complex64)
    nfft.fft(to_device(x))
    assert len(FakeFusedPlan.made) == (1 if fused else 0)
