"""Test configuration: the `gpu` marker skips cleanly on machines without an NVIDIA GPU."""

import functools
import os

import pytest

# jax takes 75% of the GPU's memory in the first process that uses it; under pytest-xdist that
# starves every other worker (cuBLAS and cuFFT then fail to create handles and plans).
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")


@functools.lru_cache(maxsize=None)
def _gpu_reason():
    """None when a CUDA device is usable, else why not."""
    try:
        from cuda.bindings import driver
    except ImportError as error:
        return f"cuda.bindings not importable ({error})"
    try:
        (status,) = driver.cuInit(0)
        if status != driver.CUresult.CUDA_SUCCESS:
            return f"cuInit failed ({status.name})"
        status, count = driver.cuDeviceGetCount()
        if status != driver.CUresult.CUDA_SUCCESS or count == 0:
            return "no CUDA device"
    except Exception as error:  # a missing driver library surfaces as various errors
        return f"no CUDA driver ({type(error).__name__}: {error})"
    return None


def pytest_collection_modifyitems(config, items):
    reason = _gpu_reason()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=f"needs a GPU: {reason}")
    for item in items:
        if item.get_closest_marker("gpu") is not None:
            item.add_marker(skip)
