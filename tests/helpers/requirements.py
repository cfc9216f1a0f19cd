"""Skip marks for tests that need an optional library, each with the reason it is missing.

With only ``pip install -e ".[test]"`` there is no libmathdx and no numba: the tests that need them
are skipped with the reason, never collected as errors.
"""

import functools

import pytest

__all__ = ["mathdx_missing", "needs_mathdx"]


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
