"""Where a run happened: the device line, package and library versions, the date."""

from __future__ import annotations

import datetime
import importlib
import importlib.metadata
import platform

__all__ = ["describe_device", "collect_versions", "utc_now"]

# Result key -> distributions that provide it (first one installed wins).
_DISTRIBUTIONS = {
    "numpy": ("numpy",),
    "cuda-core": ("cuda-core",),
    "cuda-bindings": ("cuda-bindings",),
    "cuda-pathfinder": ("cuda-pathfinder",),
    "torch": ("torch",),
    "cupy": ("cupy-cuda13x", "cupy-cuda12x", "cupy"),
    "nvmath-python": ("nvmath-python",),
    "libmathdx": ("nvidia-libmathdx-cu13", "nvidia-libmathdx-cu12"),
    "numba-cuda": ("numba-cuda",),
    "numba-cuda-mlir": ("numba-cuda-mlir", "numba_cuda_mlir"),
    "matplotlib": ("matplotlib",),
}

# Result key -> (nvmathx binding module, distributions of the library's wheel).
_LIBRARIES = {
    "cublasLt": ("cublaslt", ("nvidia-cublas", "nvidia-cublas-cu12")),
    "cufft": ("cufft", ("nvidia-cufft", "nvidia-cufft-cu12")),
}


def utc_now() -> str:
    """The current time as ISO 8601 in UTC, to the second."""
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat()


def _distribution_version(names) -> str | None:
    for name in names:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def _library_version(binding: str, distributions) -> str | None:
    """The version the loaded library reports through nvmathx's binding, else its wheel's."""
    try:
        module = importlib.import_module(f"nvmathx._bindings.{binding}")
        get_version = getattr(module, "get_version", None)
        if get_version is not None:
            return str(get_version())
    except Exception:  # the library may be absent; the wheel's metadata is the fallback
        pass
    return _distribution_version(distributions)


def collect_versions() -> dict[str, str]:
    """Versions of nvmathx, Python, and every installed package or library that matters."""
    import nvmathx

    versions = {"nvmathx": nvmathx.__version__, "python": platform.python_version()}
    for key, distributions in _DISTRIBUTIONS.items():
        version = _distribution_version(distributions)
        if version is not None:
            versions[key] = version
    for key, (binding, distributions) in _LIBRARIES.items():
        version = _library_version(binding, distributions)
        if version is not None:
            versions[key] = version
    return versions


def describe_device(device_id: int, has_gpu: bool) -> str:
    """``"NVIDIA H200 (sm_90, driver 13.0, 132 SMs)"``, or ``"cpu"`` without a GPU."""
    if not has_gpu:
        return "cpu"
    from nvmathx._bindings.cuda_driver import driver_version
    from nvmathx._core.device import device_properties

    props = device_properties(device_id)
    major, minor = props["compute_capability"]
    driver = driver_version()
    return (
        f"{props['name']} (sm_{major}{minor}, driver {driver // 1000}.{driver % 1000 // 10}, "
        f"{props['multiprocessor_count']} SMs)"
    )
