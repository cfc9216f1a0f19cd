"""Monte Carlo price of a European call option, with the normal draws made inside the kernel by
cuRANDDx (Philox4_32_10, four normals per call): no array of random numbers ever reaches memory,
each thread writes one partial sum. Checked against the Black-Scholes formula within five standard
errors (numba-cuda-mlir, or numba-cuda where it is not installed).

Run: python examples/device_random_option_pricer.py
"""

import math
import sys

import numpy as np

SKIPPED = 77  # the exit status of an example that could not run its check (automake's convention)


def numba_cuda():
    """The ``cuda`` module of numba-cuda-mlir, the Numba compiler NVIDIA recommends. numba-cuda's
    (``from numba import cuda``, in maintenance mode) takes the same kernel code."""
    try:
        from numba_cuda_mlir import cuda
    except ImportError:
        from numba import cuda
    return cuda


def gpu_available() -> bool:
    try:
        return numba_cuda().is_available()
    except Exception:
        return False


def make_generator():
    from nvmathx.device_api import Random

    return Random("philox4_32_10", "normal", np.float32)


def build_kernel(rng, paths_per_thread, cuda=None):
    """The kernel: thread ``t`` prices ``paths_per_thread`` paths on subsequence ``t`` of ``seed``."""
    cuda = cuda or numba_cuda()

    @cuda.jit
    def price(seed, spot, strike, drift, volatility, partial_sums):
        thread = cuda.grid(1)
        if thread >= partial_sums.shape[0]:
            return
        state = cuda.local.array(rng.state_words, dtype=rng.state_dtype, alignment=rng.state_alignment)
        rng.init(seed, thread, 0, state)
        normals = cuda.local.array(rng.values_per_call, dtype=rng.value_type)
        total = 0.0
        for _ in range(paths_per_thread // rng.values_per_call):
            rng.generate(state, normals)
            for j in range(rng.values_per_call):
                terminal = spot * math.exp(drift + volatility * normals[j])
                total += max(terminal - strike, 0.0)
        partial_sums[thread] = total

    return price


def black_scholes_call(spot, strike, rate, sigma, years):
    d1 = (math.log(spot / strike) + (rate + sigma * sigma / 2) * years) / (sigma * math.sqrt(years))
    d2 = d1 - sigma * math.sqrt(years)
    normal_cdf = lambda x: 0.5 * (1 + math.erf(x / math.sqrt(2)))  # noqa: E731
    return spot * normal_cdf(d1) - strike * math.exp(-rate * years) * normal_cdf(d2)


def main(threads=1 << 18, paths_per_thread=256) -> int:
    if not gpu_available():
        print("SKIPPED: device_random_option_pricer needs an NVIDIA GPU; nothing was checked.")
        return SKIPPED
    cuda = numba_cuda()
    spot, strike, rate, sigma, years = 100.0, 105.0, 0.03, 0.25, 1.5
    rng = make_generator()
    kernel = build_kernel(rng, paths_per_thread)
    partial_sums = cuda.device_array(threads, np.float64)
    drift = (rate - sigma * sigma / 2) * years
    kernel[threads // 256, 256](np.uint64(20261204), spot, strike, drift, sigma * math.sqrt(years), partial_sums)
    payoffs = partial_sums.copy_to_host() / paths_per_thread  # the mean payoff of each thread's paths
    discount = math.exp(-rate * years)
    price = discount * payoffs.mean()
    standard_error = discount * payoffs.std() / math.sqrt(threads)
    exact = black_scholes_call(spot, strike, rate, sigma, years)
    error = abs(price - exact) / exact
    print(f"{rng}\n{threads * paths_per_thread} paths: price {price:.5f}, Black-Scholes {exact:.5f}, "
          f"standard error {standard_error:.1e}: relative error {error:.2e}")
    if not abs(price - exact) < 5 * standard_error:
        print("MISMATCH against Black-Scholes", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
