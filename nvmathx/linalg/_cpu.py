"""The CPU execution space: numpy implements the documented semantics (the reference for GPU tests).

Products are computed in float32 (complex64) for float16, bfloat16, float32 and float8 operands
and in float64 (complex128) for 64-bit ones, whatever the compute type; the epilog runs in that
dtype and the result is rounded once to the result dtype, as cuBLASLt does. float8 results
saturate to the largest finite value.
"""

from __future__ import annotations

import numpy as np

from .._core.dtypes import numpy_dtype
from .._matmulcore.epilogs import GELU_AUX_NAME, RELU_AUX_NAME, reference_epilog
from ._problem import MatmulProblem, cpu_compute_dtype

__all__ = ["cpu_matmul", "to_dtype", "FLOAT8_MAX"]


# Largest finite float8 values. Not np.finfo: numpy 2.3 rejects ml_dtypes types there ("not inexact").
FLOAT8_MAX = {"float8_e4m3fn": 448.0, "float8_e5m2": 57344.0}


def to_dtype(values, dtype_name: str) -> np.ndarray:
    """Round ``values`` (a float32/float64 array) to ``dtype_name`` (float8 saturates instead of
    overflowing to NaN); ``values`` itself when it already has that dtype."""
    dtype = numpy_dtype(dtype_name)
    limit = FLOAT8_MAX.get(dtype_name)
    if limit is not None:
        values = np.clip(values, -limit, limit)
    return np.asarray(values).astype(dtype, copy=False)


def _scale(scales, key) -> float:
    value = scales.get(key, 1.0)
    return float(np.asarray(value, dtype=np.float64).reshape(-1)[0])


def cpu_matmul(problem: MatmulProblem, a, b, c, alpha, beta, epilog_inputs: dict, scales: dict):
    """``alpha * a @ b + beta * c`` then the epilog, on host numpy arrays.

    Operands already in the compute dtype are used as they are, and the product is scaled and
    summed in place: a plain product allocates its result and nothing else. With ``beta == 0``,
    ``c`` is not read (BLAS semantics: NaN or Inf in it cannot reach the result).

    Returns the result, or ``(result, aux)`` when the epilog or ``result_amax`` produces outputs.
    """
    compute = numpy_dtype(cpu_compute_dtype(problem.a_dtype))
    a2 = _in_compute(a, compute)
    b2 = _in_compute(b, compute)
    if problem.a_ndim == 1:
        a2 = a2[np.newaxis, :]
    if problem.b_ndim == 1:
        b2 = b2[:, np.newaxis]
    d = np.matmul(a2, b2)
    if problem.is_fp8:
        alpha = alpha * _scale(scales, "a") * _scale(scales, "b")
    if alpha != 1 and problem.shape.k:  # with K = 0 the product is exactly 0, whatever alpha (as in BLAS)
        d *= np.asarray(alpha, dtype=compute)
    addend = None
    if c is not None and beta != 0:
        addend = _in_compute(c, compute)
        if beta != 1:
            addend = addend * np.asarray(beta, dtype=compute)
    elif c is None and problem.bias_mode == "fold":
        addend = _in_compute(epilog_inputs["bias"], compute)
    if addend is not None:
        d += _as_matrix(addend, problem)  # c broadcasts over the batch as numpy does
    epilog = problem.epilog
    bias = _in_compute(epilog_inputs["bias"], compute) if problem.bias_mode == "fused" else None
    aux_input = None
    if epilog is not None and epilog.aux_input:
        aux_input = np.asarray(epilog_inputs[epilog.aux_input])
        aux_input = aux_input if epilog.aux_input == RELU_AUX_NAME else aux_input.astype(compute, copy=False)
    d, outputs = reference_epilog(epilog, d, bias=bias, aux_input=aux_input, a=a2, b=b2)
    if problem.is_fp8 and problem.result_dtype.startswith("float8"):
        if problem.result_amax:
            outputs["result_amax"] = np.array(np.abs(d).max(initial=0.0), dtype=np.float32)  # 0 when empty
        d = d * _scale(scales, "d")
    result = to_dtype(_drop_promoted(d, problem), problem.result_dtype)
    for name in (GELU_AUX_NAME, "drelu_bgrad", "dgelu_bgrad", "bgrada", "bgradb"):
        if name in outputs:
            outputs[name] = to_dtype(outputs[name], problem.result_dtype)
    return (result, outputs) if outputs else result


def _in_compute(values, compute) -> np.ndarray:
    """``values`` in the compute dtype, without a copy when it already has it."""
    return np.asarray(values).astype(compute, copy=False)


def _as_matrix(values, problem: MatmulProblem):
    """A result-shaped addend with the axes numpy's 1-D promotion removed put back."""
    if problem.b_ndim == 1:
        values = values[..., np.newaxis]
    if problem.a_ndim == 1:
        values = values[..., np.newaxis, :]
    return values


def _drop_promoted(d, problem: MatmulProblem):
    if problem.b_ndim == 1:
        d = d[..., 0]
    if problem.a_ndim == 1:
        d = d[..., 0, :] if problem.b_ndim > 1 else d[..., 0]
    return d
