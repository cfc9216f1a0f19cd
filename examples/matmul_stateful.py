"""Plan once, run many times: a stateful Matmul with new operands swapped in each step.

With --execution cuda the plan is autotuned first (every candidate algorithm timed on the real
operands); on the CPU there is nothing to tune and the same code runs with numpy.
"""

import argparse
import sys

import numpy as np

from nvmathx import DeviceUnavailableError
from nvmathx.linalg import Matmul


def main(execution):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 128, 96)).astype(np.float32)  # a batch of 4, b shared
    b = rng.standard_normal((96, 64)).astype(np.float32)
    c = rng.standard_normal((128, 64)).astype(np.float32)  # broadcast over the batch
    with Matmul(a, b, c, alpha=0.5, beta=1.0, execution=execution) as mm:
        algorithms = mm.plan(epilog="RELU")
        if algorithms:
            timings = mm.autotune(iterations=3)
            print(f"{len(algorithms)} candidate algorithms; fastest {timings[0][0]:.4f} ms")
        for step in range(3):
            result = mm.execute()
            expected = np.maximum(0.5 * (a.astype(np.float64) @ b) + c, 0)
            error = np.linalg.norm(result - expected) / np.linalg.norm(expected)
            print(f"step {step}: relative error {error:.2e}")
            assert error < 1e-5
            a = rng.standard_normal(a.shape).astype(np.float32)
            mm.reset_operands(a=a)
    print(f"stateful matmul ({execution}) matches numpy")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--execution", choices=("cpu", "cuda"), default="cpu")
    try:
        main(parser.parse_args().execution)
    except DeviceUnavailableError as error:  # --execution cuda on a machine without a GPU
        sys.exit(f"{parser.prog}: {error}")
