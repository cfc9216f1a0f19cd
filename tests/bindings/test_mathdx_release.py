"""The libmathdx wheel installed here is a release nvmathx binds (the bindings refuse any other
when the library loads, which would skip every libmathdx test as "not available")."""

import importlib.metadata

import pytest

from nvmathx._bindings.mathdx import SUPPORTED_TEXT, is_supported_release


@pytest.mark.parametrize("distribution", ["nvidia-libmathdx-cu13", "nvidia-libmathdx-cu12"])
def test_an_installed_libmathdx_wheel_is_a_supported_release(distribution):
    try:
        installed = importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        pytest.skip(f"{distribution} is not installed")
    assert is_supported_release(tuple(int(part) for part in installed.split(".")[:3])), (
        f"{distribution} {installed} is installed; nvmathx binds {SUPPORTED_TEXT} "
        f"(pip install -e '.[device]' installs a supported release)"
    )


@pytest.mark.parametrize("release, supported", [
    ((0, 3, 1), True), ((0, 4, 2), True), ((0, 4, 7), True),
    ((0, 3, 0), False), ((0, 3, 2), False), ((0, 4, 0), False), ((0, 4, 1), False), ((0, 5, 0), False),
    ((1, 0, 0), False),
])
def test_the_supported_releases(release, supported):
    assert is_supported_release(release) is supported
