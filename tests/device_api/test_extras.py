"""The extras that install a Numba compiler resolve as documented (read from pyproject.toml)."""

import pathlib
import sys

import pytest

tomllib = pytest.importorskip("tomllib" if sys.version_info >= (3, 11) else "tomli")
requirements = pytest.importorskip("packaging.requirements")

PYPROJECT = pathlib.Path(__file__).resolve().parents[2] / "pyproject.toml"


def _extra(name):
    extras = tomllib.loads(PYPROJECT.read_text())["project"]["optional-dependencies"]
    return [requirements.Requirement(line) for line in extras[name]]


def _installed_on(extra, python_version):
    environment = {"python_version": python_version, "python_full_version": f"{python_version}.0"}
    return {r.name for r in _extra(extra) if r.marker is None or r.marker.evaluate(environment)}


@pytest.mark.parametrize(
    "extra, python_version, expected, absent",
    [
        ("device", "3.12", {"numba-cuda-mlir", "numba-cuda", "nvidia-libmathdx-cu13", "nvidia-nvjitlink", "cffi"},
         set()),
        ("device", "3.11", {"numba-cuda-mlir", "numba-cuda"}, set()),
        ("device", "3.10", {"numba-cuda", "nvidia-libmathdx-cu13", "cffi"}, {"numba-cuda-mlir"}),  # needs 3.11
        ("device-numba-cuda", "3.12", {"numba-cuda", "nvidia-libmathdx-cu13", "nvidia-nvjitlink"}, {"numba-cuda-mlir"}),
        ("device-cu12", "3.12", {"numba-cuda", "nvidia-libmathdx-cu12", "nvidia-nvjitlink-cu12"}, {"numba-cuda-mlir"}),
    ],
)
def test_device_extras(extra, python_version, expected, absent):
    installed = _installed_on(extra, python_version)
    assert expected <= installed and not (absent & installed)


def test_the_mlir_compiler_is_at_least_the_release_tested():
    (mlir,) = [r for r in _extra("device") if r.name == "numba-cuda-mlir"]
    assert mlir.specifier.contains("0.6.0") and not mlir.specifier.contains("0.5.4")


# Wheel versions (four parts) each extra must admit, and some it must not.
ADMITTED = {"device": ("0.3.1.9", "0.4.2.37"), "device-numba-cuda": ("0.3.1.9", "0.4.2.37"),
            "device-cu12": ("0.3.1.9",)}
REFUSED = ("0.3.0.13", "0.3.2.6", "0.4.0.9", "0.4.1.15", "0.5.0.1")


@pytest.mark.parametrize("extra", ["device", "device-numba-cuda", "device-cu12"])
def test_every_device_extra_admits_only_releases_the_binding_binds(extra):
    from nvmathx._bindings.mathdx import is_supported_release

    (mathdx,) = [r for r in _extra(extra) if r.name.startswith("nvidia-libmathdx")]
    for release in ADMITTED[extra]:
        assert mathdx.specifier.contains(release), (extra, release)
    for release in REFUSED:
        assert not mathdx.specifier.contains(release), (extra, release)
    # what the extra admits, the binding loads (it refuses any other release when the library loads)
    for release in ADMITTED[extra] + REFUSED:
        numbers = tuple(int(part) for part in release.split(".")[:3])
        assert mathdx.specifier.contains(release) == is_supported_release(numbers), release
