"""Fixtures the fft tests share."""

import pytest


@pytest.fixture
def callback_cache(tmp_path):
    """An empty code cache folder, and no callback compiled in this process yet."""
    from nvmathx._fftcore import callbacks as _callbacks
    from nvmathx.device_api import set_cache_dir

    set_cache_dir(tmp_path)
    _callbacks._compiled.clear()
    yield tmp_path
    set_cache_dir(None)
    _callbacks._compiled.clear()


@pytest.fixture
def fake_with(monkeypatch, tmp_path):
    """Installs the host stand-in of the GPU (``_fake_device.py``) with the fused kernels in the
    given state (``"cached"``, ``"absent"`` or why they cannot run), callbacks linkable and an
    sm_90 device, an empty code cache and plan cache; returns the fake cuFFT."""
    import nvmathx.fft as nfft
    from nvmathx._fftcore import callbacks as _callbacks
    from nvmathx._fftcore import plan as _cufft_plan
    from nvmathx.device_api import set_cache_dir

    from ._fake_device import install

    def installed(state):
        fake_cufft, _ = install(monkeypatch, fused_kernels=state)
        monkeypatch.setattr(_callbacks, "require_lto", lambda argument: None)
        monkeypatch.setattr(_cufft_plan, "_device_capability", lambda device_id: (9, 0))
        return fake_cufft

    set_cache_dir(tmp_path)
    nfft.plan_cache.clear()
    yield installed
    nfft.plan_cache.clear()
    set_cache_dir(None)
