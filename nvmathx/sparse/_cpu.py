"""The CPU execution space of sparse @ dense: scipy.sparse computes ``alpha * op(a) @ b + beta * c``.

float16 and bfloat16 operands are multiplied and summed in float32 and the result rounded once, as
cuSPARSE's mixed precision does. ``c`` is not read when ``beta`` is 0.
"""

from __future__ import annotations

import numpy as np

from .._core.dtypes import numpy_dtype
from .._core.tensor import Operand, SparseOperand, host_array
from ._problem import SparseMatmulProblem

__all__ = ["cpu_matmul"]


def cpu_matmul(problem: SparseMatmulProblem, a: SparseOperand, b: Operand, c: Operand | None, alpha, beta):
    """The result as an array of ``a``'s dense library (host memory)."""
    import scipy.sparse  # (on first use: importing nvmathx.sparse imports no array library)

    compute = numpy_dtype(problem.compute_dtype)
    values = host_array(a.values).astype(compute, copy=False)
    matrix = scipy.sparse.csr_array((values, host_array(a.indices), host_array(a.indptr)), shape=a.shape, copy=False)
    if problem.transpose:
        matrix = matrix.T
    dense = host_array(b).astype(compute, copy=False)
    result = np.asarray(matrix @ dense, dtype=compute)
    if result.shape != problem.result_shape:  # scipy returns (m,) products of 1-D operands as they are
        result = result.reshape(problem.result_shape)
    if alpha != 1 and problem.k:
        result *= np.asarray(alpha, dtype=compute)
    if c is not None and beta != 0:
        addend = host_array(c).astype(compute, copy=False)
        result += addend if beta == 1 else addend * np.asarray(beta, dtype=compute)
    result = result.astype(numpy_dtype(problem.dtype), copy=False)
    return a.dense_adapter.from_host(result)
