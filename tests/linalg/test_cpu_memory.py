"""The CPU execution space copies nothing it need not: a product in the compute dtype allocates its
result and little else (numpy reports its allocations to tracemalloc)."""

import tracemalloc

import numpy as np
import pytest

from nvmathx.linalg import Matmul, matmul

from ._reference import random, reference, relative_error


def _peak(function) -> int:
    """Bytes allocated at the peak of ``function()`` beyond what was live before."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        result = function()
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    del result
    return peak


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_product_peak_is_numpys(rng, dtype):
    a, b = random(rng, (1024, 1024), dtype), random(rng, (1024, 1024), dtype)
    c = random(rng, (1024, 1024), dtype)
    matmul(a, b)  # imports and first-call caches out of the measurement
    numpy_peak = _peak(lambda: np.matmul(a, b))
    assert numpy_peak >= a.nbytes  # numpy's result is counted (the measurement works)
    assert _peak(lambda: matmul(a, b)) <= 1.3 * numpy_peak
    assert _peak(lambda: matmul(a, b, c, alpha=2.0, beta=1.0)) <= 1.3 * numpy_peak  # scaled and summed in place
    with Matmul(a, b) as mm:
        mm.plan()
        assert _peak(mm.execute) <= 1.3 * numpy_peak
    assert relative_error(matmul(a, b, c, alpha=2.0, beta=1.0), reference(a, b, c, 2.0, 1.0)) < 1e-5


def test_narrow_inputs_are_widened_once(rng):
    """float16 operands are computed in float32: one widened copy of each, then the product."""
    a, b = random(rng, (512, 512), "float16"), random(rng, (512, 512), "float16")
    matmul(a, b)
    peak = _peak(lambda: matmul(a, b))
    widened = 2 * a.nbytes + 2 * b.nbytes  # float32 copies of a and b
    product = 512 * 512 * 4
    assert peak <= 1.1 * (widened + product + 512 * 512 * 2)
