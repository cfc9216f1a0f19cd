"""Conjugate gradients on a 2-D Poisson matrix, with one stateful sparse Matmul for every A @ p.

The matrix is planned once; each iteration swaps in the new direction ``p`` with reset_operands
(no new plan) and runs A @ p. With --execution cuda the products run on cuSPARSE (the host arrays
are copied to the GPU and the product back); on the CPU the same code runs with scipy.
"""

import argparse
import sys

import numpy as np
import scipy.sparse

from nvmathx import DeviceUnavailableError
from nvmathx.sparse import Matmul


def poisson2d(m):
    """The 5-point Laplacian on an m x m grid (CSR, float64)."""
    t = scipy.sparse.diags_array([-1.0, 2.0, -1.0], offsets=[-1, 0, 1], shape=(m, m))
    eye = scipy.sparse.eye_array(m)
    return (scipy.sparse.kron(eye, t) + scipy.sparse.kron(t, eye)).tocsr()


def main(execution, m=32, tolerance=1e-10):
    a = poisson2d(m)
    rng = np.random.default_rng(0)
    b = rng.standard_normal(a.shape[0])
    x = np.zeros_like(b)
    r = b.copy()
    p = r.copy()
    rr = r @ r
    with Matmul(a, p, execution=execution) as product:
        product.plan()
        for step in range(1, 10 * a.shape[0]):
            ap = product.execute()  # A @ p
            step_size = rr / (p @ ap)
            x += step_size * p
            r -= step_size * ap
            rr, previous = r @ r, rr
            if np.sqrt(rr) < tolerance * np.linalg.norm(b):
                break
            p = r + (rr / previous) * p
            product.reset_operands(b=p)
    residual = np.linalg.norm(b - a.toarray() @ x) / np.linalg.norm(b)
    print(f"{step} iterations, relative residual {residual:.2e}")
    assert residual < 1e-8
    print(f"conjugate gradients with sparse.Matmul ({execution}) matches numpy")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--execution", choices=("cpu", "cuda"), default="cpu")
    try:
        main(parser.parse_args().execution)
    except DeviceUnavailableError as error:  # --execution cuda on a machine without a GPU
        sys.exit(f"{parser.prog}: {error}")
