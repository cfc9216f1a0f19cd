"""The CPU execution space: numpy implements the documented semantics (the reference for GPU tests),
and :class:`CpuMatmulState` holds a Matmul's operands and values there.

Products are computed in float32 (complex64) for float16, bfloat16, float32 and float8 operands
and in float64 (complex128) for 64-bit ones, whatever the compute type; the epilog runs in that
dtype and the result is rounded once to the result dtype, as cuBLASLt does. float8 results
saturate to the largest finite value.
"""

from __future__ import annotations

import numpy as np

from .._core.dtypes import numpy_dtype
from .._core.errors import InvalidStateError, OptionsError
from .._core.tensor import host_array
from .._matmulcore.epilogs import GELU_AUX_NAME, RELU_AUX_NAME, reference_epilog
from ._problem import MatmulProblem, cpu_compute_dtype

__all__ = ["cpu_matmul", "to_dtype", "FLOAT8_MAX", "CpuMatmulState"]


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


class CpuMatmulState:
    """A Matmul's state in the CPU space (a :class:`~._space.MatmulSpace`): the host operands and
    epilog inputs, the planned problem and the values it runs with; ``execute()`` is
    :func:`cpu_matmul`. There are no algorithms to choose, time or keep, and no stream."""

    def __init__(self, operands: dict, given: dict, *, execution, options, stream):
        if stream is not None:
            raise OptionsError("stream", "CPU execution takes no stream")
        self.host = operands["a"]  # results are made in its library
        self.operands = dict(operands)
        self.inputs: dict = {}
        self.problem: MatmulProblem | None = None
        self.alpha: object = 1
        self.beta: object = 0
        self.scales: dict = {}

    def plan(self, problem, inputs, given, *, preferences, algorithms, alpha, beta, scales, keep) -> list:
        if algorithms is not None:
            raise OptionsError("algorithms", "the CPU execution space runs numpy's matmul and has no cuBLASLt "
                                             "algorithms to choose from; pass algorithms=None")
        self.problem, self.inputs = problem, inputs
        self.alpha, self.beta, self.scales = alpha, beta, dict(scales)
        return []

    def direct(self) -> None:
        return None  # every call checks that it was given no stream and no algorithm

    @property
    def algorithms(self) -> list:
        return []

    def autotune(self, iterations: int, keep: int | None = None) -> list:
        return []

    def execute(self, algorithm, stream, release_workspace: bool):
        if stream is not None or algorithm is not None:
            raise OptionsError("stream" if stream is not None else "algorithm", "CPU execution takes none")
        problem = self.problem
        if problem is None:  # Matmul's state checks make this unreachable
            raise InvalidStateError("call plan() before execute()")
        views = {name: host_array(op) if op is not None else None for name, op in self.operands.items()}
        inputs = {name: host_array(op) for name, op in self.inputs.items()}
        out = cpu_matmul(problem, views["a"], views["b"], views["c"], self.alpha, self.beta, inputs,
                         dict(self.scales))
        from_host = self.host.adapter.from_host
        if isinstance(out, tuple):
            result, aux = out
            return from_host(result), {name: from_host(value) for name, value in aux.items()}
        return from_host(out)

    def check_alignment(self, operand, name: str) -> None:
        """Host operands have no alignment to keep."""

    def reset_held(self, a, b, c, epilog_inputs) -> bool:
        return False  # every new host array is checked in full

    def reset(self, operands: dict, inputs: dict, *, scalars, scales: dict) -> None:
        self.operands.update({name: operand for name, (operand, _) in operands.items()})
        self.inputs.update({name: operand for name, (operand, _) in inputs.items()})
        if scalars is not None:
            self.alpha, self.beta = scalars
        self.scales.update(scales)

    def free(self) -> None:
        self.operands, self.inputs = {}, {}
