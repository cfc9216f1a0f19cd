"""Demos of the dense solvers for ``python -m nvmathx``: many small general systems and one
positive definite system with several right-hand sides, each checked against numpy."""

import numpy as np

from ._solver_function import solve


def _batched_lu(execution):
    """64 general systems of order 32 (the batched engine on the GPU), one b for all."""
    rng = np.random.default_rng()
    a = rng.standard_normal((64, 32, 32)) + 32 * np.eye(32)
    b = rng.standard_normal(32)
    return solve(a, b, execution=execution), np.linalg.solve(a, np.broadcast_to(b, (64, 32))[..., None])[..., 0], 1e-12


def _cholesky(execution):
    """One positive definite system of order 256 with 8 right-hand sides (cuSOLVER on the GPU)."""
    rng = np.random.default_rng()
    m = rng.standard_normal((256, 256)).astype(np.float32)
    a = m @ m.T / 256 + np.eye(256, dtype=np.float32)
    b = rng.standard_normal((256, 8)).astype(np.float32)
    reference = np.linalg.solve(a.astype(np.float64), b.astype(np.float64))
    return solve(a, b, assume_a="positive definite", execution=execution), reference, 1e-3


DEMOS = [("solve 64 systems of 32 (LU)", _batched_lu), ("solve positive definite 256, 8 rhs", _cholesky)]
