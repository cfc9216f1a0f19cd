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
