"""device_api tests share one code cache per session (a temporary folder unless
NVMATHX_CACHE_DIR is set), so each descriptor is generated once per run."""

import os

import pytest


@pytest.fixture(scope="session", autouse=True)
def _session_code_cache(tmp_path_factory):
    from nvmathx.device_api import set_cache_dir

    if os.environ.get("NVMATHX_CACHE_DIR"):
        yield
        return
    set_cache_dir(tmp_path_factory.mktemp("nvmathx-code-cache"))
    yield
    set_cache_dir(None)


@pytest.fixture(params=["numba-cuda-mlir", "numba-cuda"])
def compiler(request):
    """Each Numba compiler in turn (skipped where it is not installed or does not import)."""
    from helpers.compilers import require

    return require(request.param)
