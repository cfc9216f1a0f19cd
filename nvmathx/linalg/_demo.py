"""Demos of nvmathx.linalg for ``python -m nvmathx``: a fused-epilog matmul and a batched one."""

import numpy as np

from .._matmulcore.epilogs import gelu
from ._function import matmul


def _gelu_bias(execution):
    """gelu(x @ w + b) in one call (cuBLASLt's GELU_BIAS epilog on the GPU)."""
    rng = np.random.default_rng()
    x, w, bias = (rng.standard_normal(shape).astype(np.float32) for shape in ((512, 256), (256, 384), (384,)))
    result = matmul(x, w, epilog="GELU_BIAS", epilog_inputs={"bias": bias}, execution=execution)
    reference = gelu(x.astype(np.float64) @ w + bias)
    return result, reference, 1e-4


def _batched(execution):
    """alpha * a @ b + beta * c over a batch of 8, b broadcast."""
    rng = np.random.default_rng()
    a, b, c = (rng.standard_normal(shape) for shape in ((8, 96, 64), (64, 80), (8, 96, 80)))
    result = matmul(a, b, c, alpha=0.5, beta=2.0, execution=execution)
    return result, 0.5 * (a @ b) + 2.0 * c, 1e-12


DEMOS = [("matmul gelu(x@w+b) fused epilog", _gelu_bias), ("matmul batched float64 with c", _batched)]
