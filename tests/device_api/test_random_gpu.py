"""Random in kernels of each Numba compiler (needs a GPU): values bit for bit equal to cuRAND's
device API for the same seed, subsequence and offset (a curand_kernel.h kernel is the oracle;
log-normals with parameters within a rounding),
states kept between launches, skip-aheads, and the distributions' moments."""

import math
import os
import subprocess
import sys

import numpy as np
import pytest

from helpers import curand_reference
from helpers.requirements import needs_mathdx

from . import _kernels

pytestmark = [pytest.mark.gpu, needs_mathdx]

THREADS, PER_THREAD = 256, 16

# (generator, distribution, dtype, keyword arguments): every combination cuRAND's device API also makes
ORACLE = [
    ("xorwow", "uniform", "float32", {}),
    ("xorwow", "uniform", "float64", {}),
    ("mrg32k3a", "uniform", "float32", {}),
    ("mrg32k3a", "uniform", "float64", {}),
    ("philox4_32_10", "uniform", "float32", {}),
    ("philox4_32_10", "uniform", "float64", {"method": "pair"}),
    ("xorwow", "uniform_bits", "uint32", {}),
    ("mrg32k3a", "uniform_bits", "uint32", {}),
    ("philox4_32_10", "uniform_bits", "uint32", {}),
    ("xorwow", "normal", "float32", {}),
    ("xorwow", "normal", "float64", {}),
    ("mrg32k3a", "normal", "float32", {}),
    ("mrg32k3a", "normal", "float64", {}),
    ("philox4_32_10", "normal", "float32", {}),
    ("philox4_32_10", "normal", "float64", {"method": "pair"}),
    ("xorwow", "log_normal", "float32", {"parameters": (0.5, 0.25)}),
    ("mrg32k3a", "log_normal", "float64", {"parameters": (-1.0, 2.0)}),
    ("philox4_32_10", "log_normal", "float32", {"parameters": (0.5, 0.25)}),
    ("xorwow", "poisson", "uint32", {"parameters": (4.0,)}),
    ("mrg32k3a", "poisson", "uint32", {"parameters": (250.0,)}),
]


def _label(case):
    generator, distribution, dtype, options = case
    return "-".join([generator, distribution, dtype, *(f"{k}={v}" for k, v in options.items())])


def _random(generator, distribution, dtype, **options):
    from nvmathx.device_api._random import Random

    return Random(generator, distribution, np.dtype(dtype), **options)


def _fill(compiler, rng, seed, offset, per_thread=PER_THREAD, threads=THREADS):
    """Each thread's first ``per_thread`` values (thread ``t`` on subsequence ``t``) and the states."""
    cuda = compiler.cuda
    states = cuda.device_array((threads, rng.state_words), dtype=rng.state_dtype)
    out = cuda.device_array((threads, per_thread), dtype=rng.value_type)
    kernel = cuda.jit(compiler.bind(_kernels.random_fill(rng)))
    kernel[(threads + 127) // 128, 128](states, out, np.uint64(seed), np.int64(offset))
    return out.copy_to_host(), states


def _draw(rng_fixture, generator):
    """A seed and an offset drawn from the test's seeded generator (Philox: a multiple of 4, the
    offsets it takes)."""
    step = 4 if generator == "philox4_32_10" else 1
    return int(rng_fixture.integers(0, 2**63)), step * int(rng_fixture.integers(0, 10_000 // step))


@pytest.mark.parametrize("case", ORACLE, ids=_label)
def test_values_equal_curands_device_api(compiler, rng, case):
    generator, distribution, dtype, options = case
    random = _random(generator, distribution, dtype, **options)
    assert curand_reference.has_reference(generator, distribution, dtype, random.values_per_call)
    for seed, offset in [(0, 0), _draw(rng, generator)]:
        ours, _ = _fill(compiler, random, seed, offset)
        expected = compiler.cuda.device_array_like(ours)
        curand_reference.generate(generator, distribution, dtype, random.values_per_call, random.parameters,
                                  seed=seed, offset=offset, threads=THREADS, per_thread=PER_THREAD, out=expected)
        message = f"seed {seed}, offset {offset}"
        if "parameters" in options and distribution != "poisson":
            # the same draws; exp(mean + std * z) may round differently where cuRAND gets floats
            rtol = 1e-6 if dtype == "float32" else 1e-14
            np.testing.assert_allclose(ours, expected.copy_to_host(), rtol=rtol, atol=0, err_msg=message)
        else:
            np.testing.assert_array_equal(ours, expected.copy_to_host(), err_msg=message)


# (generator, distribution, dtype, keyword arguments): Sobol against cuRAND's device API
SOBOL_ORACLE = [
    ("sobol32", "uniform", "float32", {}),
    ("sobol32", "uniform", "float64", {}),
    ("sobol32", "uniform_bits", "uint32", {}),
    ("scrambled_sobol32", "normal", "float32", {}),
    ("scrambled_sobol32", "log_normal", "float32", {"parameters": (0.5, 0.25)}),
    ("sobol64", "uniform_bits", "uint64", {}),
    ("sobol64", "normal", "float64", {}),
    ("scrambled_sobol64", "uniform", "float64", {}),
    ("sobol64", "poisson", "uint32", {"parameters": (6.5,)}),
]


@pytest.mark.parametrize("case", SOBOL_ORACLE, ids=_label)
def test_sobol_values_equal_curands_device_api(compiler, rng, case):
    generator, distribution, dtype, options = case
    random = _random(generator, distribution, dtype, **options)
    assert curand_reference.has_sobol_reference(generator, distribution, dtype)
    cuda, dimensions, points = compiler.cuda, 64, 64
    scrambled = generator.startswith("scrambled_")
    vectors = random.direction_vectors(dimensions)
    constants = random.scramble_constants(dimensions) if scrambled else np.zeros(dimensions, vectors.dtype)
    vectors, constants = cuda.to_device(vectors), cuda.to_device(constants)
    kernel = cuda.jit(compiler.bind(_kernels.sobol_fill(random)))
    for offset in (0, int(rng.integers(1, 10_000))):
        ours = cuda.device_array((dimensions, points), dtype=random.value_type)
        kernel[1, dimensions](vectors, constants, ours, np.int64(offset))
        expected = cuda.device_array_like(ours)
        curand_reference.generate_sobol(generator, distribution, dtype, random.parameters, vectors=vectors,
                                        constants=constants, offset=offset, threads=dimensions, per_thread=points,
                                        out=expected)
        message = f"offset {offset}"
        if distribution == "log_normal":
            np.testing.assert_allclose(ours.copy_to_host(), expected.copy_to_host(), rtol=1e-6, atol=0,
                                       err_msg=message)
        else:
            np.testing.assert_array_equal(ours.copy_to_host(), expected.copy_to_host(), err_msg=message)


def test_parameters_scale_the_standard_distributions(compiler, rng):
    seed, offset = _draw(rng, "philox4_32_10")
    standard, _ = _fill(compiler, _random("xorwow", "normal", "float64"), seed, offset)
    shifted, _ = _fill(compiler, _random("xorwow", "normal", "float64", parameters=(3.0, 0.5)), seed, offset)
    np.testing.assert_allclose(shifted, 3.0 + 0.5 * standard, rtol=1e-13, atol=1e-13)
    unit, _ = _fill(compiler, _random("philox4_32_10", "uniform", "float32"), seed, offset)
    interval, _ = _fill(compiler, _random("philox4_32_10", "uniform", "float32", parameters=(-2.0, 6.0)), seed,
                        offset)
    np.testing.assert_allclose(interval, -2.0 + 8.0 * unit.astype(np.float64), rtol=0, atol=4e-6)


@pytest.mark.parametrize("generator", ["xorwow", "mrg32k3a", "philox4_32_10", "pcg"])
def test_a_state_kept_between_launches_continues_its_sequence(compiler, rng, generator):
    random = _random(generator, "uniform", "float32")
    seed, offset = _draw(rng, generator)
    whole, _ = _fill(compiler, random, seed, offset, per_thread=2 * PER_THREAD)
    first, states = _fill(compiler, random, seed, offset)
    second = compiler.cuda.device_array((THREADS, PER_THREAD), dtype=random.value_type)
    kernel = compiler.cuda.jit(compiler.bind(_kernels.random_fill(random, initialise=False)))
    kernel[THREADS // 128, 128](states, second, np.uint64(0), np.int64(0))
    np.testing.assert_array_equal(np.hstack([first, second.copy_to_host()]), whole)
    assert len(np.unique(whole)) > 0.99 * whole.size  # subsequences differ


@pytest.mark.parametrize("generator", ["xorwow", "mrg32k3a", "philox4_32_10", "pcg"])
def test_skip_aheads_equal_initialising_further_on(compiler, rng, generator):
    random = _random(generator, "uniform_bits", "uint32")
    seed, skip = _draw(rng, generator)
    skipped = compiler.cuda.device_array((THREADS, random.values_per_call), dtype=np.uint32)
    kernel = compiler.cuda.jit(compiler.bind(_kernels.random_skips(random)))
    kernel[THREADS // 128, 128](skipped, np.uint64(seed), np.int64(skip))
    initialised, _ = _fill(compiler, random, seed, skip, per_thread=random.values_per_call)
    np.testing.assert_array_equal(skipped.copy_to_host(), initialised)


# (generator, distribution, dtype, keyword arguments, mean, variance) of the distribution
MOMENTS = [
    ("pcg", "uniform", "float64", {"parameters": (-1.0, 3.0)}, 1.0, 16.0 / 12),
    ("pcg", "normal", "float32", {"normal_method": "icdf", "parameters": (2.0, 3.0)}, 2.0, 9.0),
    ("xorwow", "normal", "float64", {"normal_method": "icdf"}, 0.0, 1.0),
    ("mrg32k3a", "log_normal", "float32", {"normal_method": "icdf", "parameters": (0.1, 0.5)},
     math.exp(0.1 + 0.125), (math.exp(0.25) - 1) * math.exp(0.2 + 0.25)),
    ("philox4_32_10", "normal", "float32", {"normal_method": "icdf"}, 0.0, 1.0),
    ("pcg", "normal", "float32", {}, 0.0, 1.0),
    ("pcg", "log_normal", "float64", {"parameters": (0.1, 0.5)},
     math.exp(0.1 + 0.125), (math.exp(0.25) - 1) * math.exp(0.2 + 0.25)),
    ("pcg", "poisson", "uint32", {"parameters": (7.5,)}, 7.5, 7.5),
    ("xorwow", "poisson", "uint32", {"parameters": (1000.0,)}, 1000.0, 1000.0),
]


@pytest.mark.parametrize("case", MOMENTS, ids=lambda case: "-".join([*case[:3], *map(str, case[3].values())]))
def test_moments_of_each_distribution(compiler, rng, case):
    generator, distribution, dtype, options, mean, variance = case
    seed, offset = _draw(rng, generator)
    values, _ = _fill(compiler, _random(generator, distribution, dtype, **options), seed, offset, per_thread=256,
                      threads=1024)
    values = values.astype(np.float64).ravel()
    count = values.size
    # six standard errors: a false alarm about once in 10**8 runs
    assert abs(values.mean() - mean) < 6 * math.sqrt(variance / count)
    assert abs(values.var() / variance - 1) < 6 * math.sqrt(2.0 / count) + 0.01
    if distribution == "uniform":
        low, high = options["parameters"]
        assert low <= values.min() and values.max() <= high
    if distribution == "poisson":
        assert np.all(values == np.round(values)) and values.min() >= 0


_PHILOX_OFFSET_SCRIPT = """
import sys
import numpy as np
sys.path.insert(0, {tests!r})
from helpers import compilers
from device_api import _kernels
from nvmathx.device_api import Random

compiler = compilers.load({name!r})
random = Random("philox4_32_10", "uniform_bits", np.uint32)
states = compiler.cuda.device_array((1, random.state_words), dtype=random.state_dtype)
out = compiler.cuda.device_array((1, 4), dtype=np.uint32)
kernel = compiler.cuda.jit(compiler.bind(_kernels.random_fill(random)))
try:
    kernel[1, 1](states, out, np.uint64(1), np.int64({offset}))
    compiler.cuda.synchronize()
    out.copy_to_host()
except Exception as error:
    print("STOPPED", type(error).__name__)
else:
    print("RAN")
"""


@pytest.mark.parametrize("offset, outcome", [(6, "STOPPED"), (8, "RAN")])
def test_a_philox_offset_between_outputs_stops_the_kernel(compiler, offset, outcome):
    # a trap spoils the process's CUDA context, so the launch runs in a process of its own
    tests = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    script = _PHILOX_OFFSET_SCRIPT.format(tests=tests, name=compiler.name, offset=offset)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert result.stdout.split()[:1] == [outcome], result.stdout + result.stderr
