"""Test configuration: the `gpu` marker skips cleanly on machines without an NVIDIA GPU, and every
random generator is seeded through the `seed` / `rng` fixtures (the seed is printed on failure).

Set NVMATHX_TEST_SEED to replay a run; without it each test's seed is derived from its node id
(stable from run to run, different between tests).
"""

import functools
import os
import zlib

import numpy as np
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


_BASE_SEED = int(os.environ.get("NVMATHX_TEST_SEED", "20261203"))


@pytest.fixture
def seed(request) -> int:
    """This test's seed: the base seed mixed with the test's node id (printed when the test fails)."""
    value = (_BASE_SEED + zlib.crc32(request.node.nodeid.encode())) % (1 << 32)
    request.node.user_properties.append(("seed", value))
    return value


@pytest.fixture
def rng(seed) -> np.random.Generator:
    """A numpy Generator seeded by :func:`seed`: the one source of random data in the tests."""
    return np.random.default_rng(seed)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        seeds = [value for name, value in item.user_properties if name == "seed"]
        if seeds:
            report.sections.append(("seed", f"seed={seeds[0]} (base NVMATHX_TEST_SEED={_BASE_SEED})"))
