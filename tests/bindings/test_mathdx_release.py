"""The libmathdx wheel installed here is the release nvmathx binds (the bindings refuse any other
when the library loads, which would skip every libmathdx test as "not available")."""

import importlib.metadata

import pytest

from nvmathx._bindings.mathdx import BOUND_VERSION


@pytest.mark.parametrize("distribution", ["nvidia-libmathdx-cu13", "nvidia-libmathdx-cu12"])
def test_an_installed_libmathdx_wheel_is_the_bound_release(distribution):
    try:
        installed = importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        pytest.skip(f"{distribution} is not installed")
    assert tuple(int(part) for part in installed.split(".")[:3]) == BOUND_VERSION, (
        f"{distribution} {installed} is installed; nvmathx binds {'.'.join(map(str, BOUND_VERSION))} "
        f"(pip install -e '.[device]' installs the pinned release)"
    )
