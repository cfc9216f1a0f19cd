"""Skip marks for tests that need an optional library, each with the reason it is missing.

With only ``pip install -e ".[test]"`` there is no libmathdx and no numba: the tests that need them
are skipped with the reason, never collected as errors.
"""

import functools

import pytest

__all__ = ["mathdx_missing", "needs_mathdx", "nvrtc_missing", "needs_nvrtc"]


@functools.cache
def mathdx_missing() -> str | None:
    """None when libmathdx loads, else why not (a descriptor's traits and code need it; its
    argument checks do not)."""
    from nvmathx._core.errors import LibraryNotFoundError

    try:
        from nvmathx._bindings import mathdx

        mathdx.version()
    except LibraryNotFoundError as error:
        return f"libmathdx not available: pip install {error.pip_package}, or the device extra"
    return None


needs_mathdx = pytest.mark.skipif(mathdx_missing() is not None, reason=str(mathdx_missing()))


@functools.cache
def nvrtc_missing() -> str | None:
    """None when NVRTC loads (the built-in kernels and the norm's scale callback are compiled with
    it; no GPU needed), else why not."""
    from nvmathx._core.errors import LibraryNotFoundError

    try:
        from nvmathx._bindings._loader import load_library

        load_library("nvrtc")
    except LibraryNotFoundError as error:
        return f"NVRTC not available: pip install {error.pip_package}, or the device extra"
    return None


needs_nvrtc = pytest.mark.skipif(nvrtc_missing() is not None, reason=str(nvrtc_missing()))
