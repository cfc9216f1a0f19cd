"""What a matmul call asks for, checked once for every execution space (pure functions).

:func:`describe_problem` turns operand descriptions (shape, strides, dtype name) and the keyword
arguments into a :class:`MatmulProblem`, or raises a typed error naming the offending argument.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from .._core.errors import OperandError, OptionsError, UnsupportedOperandError
from .._matmulcore.epilogs import EPILOGS, RELU_AUX_NAME, WITHOUT_BIAS, EpilogSpec, relu_aux_width
from .._matmulcore.scalars import check_beta
from ._layout import MatmulShape, broadcasts_to, matmul_shape
from ._options import (
    FP8_DTYPES,
    INPUT_DTYPES,
    MatmulOptions,
    default_compute_type,
    default_scale_type,
    resolve_result_dtype,
)

__all__ = ["OperandInfo", "MatmulProblem", "describe_problem", "check_quantization_scales", "cpu_compute_dtype",
           "full_matrix"]


@dataclass(frozen=True)
class OperandInfo:
    """The parts of an operand that the problem depends on."""

    shape: tuple
    strides: tuple
    dtype: str
    conj: bool = False  # the values are the conjugates of the memory (a lazy view cuBLASLt conjugates)


@dataclass(frozen=True)
class MatmulProblem:
    """A checked matmul problem (no pointers: what a plan is built for)."""

    shape: MatmulShape
    a_dtype: str
    b_dtype: str
    c_dtype: str | None  # the user's c, None without one
    result_dtype: str
    compute_type: str
    scale_type: str
    epilog: EpilogSpec | None  # after a folded bias was moved into c
    bias_mode: str | None  # None, "fused" or "fold" (the bias is added through C with beta = 1)
    a_ndim: int
    b_ndim: int
    result_amax: bool

    @property
    def degenerate(self) -> bool:
        """Whether M, N, K or the batch has extent 0: nothing to multiply (see :mod:`._degenerate`)."""
        shape = self.shape
        return not (shape.m and shape.n and shape.k and shape.batch_count)

    @property
    def is_fp8(self) -> bool:
        return self.a_dtype in FP8_DTYPES

    @property
    def lt_c_dtype(self) -> str:
        """dtype of cuBLASLt's C: the user's c (or folded bias), else the result's (float16 for float8 results)."""
        if self.c_dtype is not None:
            return self.c_dtype
        return "float16" if self.result_dtype in FP8_DTYPES else self.result_dtype


def cpu_compute_dtype(dtype_name: str) -> str:
    """The numpy dtype the CPU execution space computes in."""
    if dtype_name in ("float64", "complex128"):
        return dtype_name
    return "complex64" if dtype_name == "complex64" else "float32"


def full_matrix(shape, strides, a_ndim, b_ndim):
    """A result-shaped array's (shape, strides) with the unit axes numpy's 1-D promotion removed."""
    shape, strides = tuple(shape), tuple(strides)
    if b_ndim == 1:
        shape, strides = shape + (1,), strides + (1,)
    if a_ndim == 1:
        shape = shape[:-1] + (1,) + shape[-1:]
        strides = strides[:-1] + (1,) + strides[-1:]
    return shape, strides


def _check_dtypes(a: OperandInfo, b: OperandInfo):
    if a.dtype not in INPUT_DTYPES:
        raise UnsupportedOperandError("a", f"dtype {a.dtype} is not supported; expected one of {list(INPUT_DTYPES)}")
    if b.dtype not in INPUT_DTYPES:
        raise UnsupportedOperandError("b", f"dtype {b.dtype} is not supported; expected one of {list(INPUT_DTYPES)}")
    if a.dtype in FP8_DTYPES or b.dtype in FP8_DTYPES:
        if a.dtype not in FP8_DTYPES or b.dtype not in FP8_DTYPES:
            raise OperandError("b", f"float8 needs both operands in float8 (got a {a.dtype}, b {b.dtype})")
        if a.dtype == b.dtype == "float8_e5m2":
            raise OperandError(
                "b", "float8_e5m2 @ float8_e5m2 is not supported by cuBLASLt; make one operand float8_e4m3fn"
            )
    elif a.dtype != b.dtype:
        raise OperandError("b", f"dtype {b.dtype} differs from a's {a.dtype}; cast one of them")


def _check_result_dtype(result: str, a_dtype: str, c: OperandInfo | None, explicit: bool):
    if a_dtype in FP8_DTYPES:
        allowed: tuple[str, ...] = ("bfloat16", "float16", "float32") + FP8_DTYPES
    elif a_dtype in ("float16", "bfloat16"):
        allowed = (a_dtype, "float32")
    else:
        allowed = (a_dtype,)
    if result not in allowed and not explicit and c is not None:
        raise OperandError("c", f"dtype {c.dtype} does not fit {a_dtype} operands; expected one of {list(allowed)}")
    if result not in allowed:
        raise OptionsError("options.result_type", f"{a_dtype} operands give one of {list(allowed)} (got {result})")
    if c is None:
        return
    expected = ("float16", "bfloat16") if result in FP8_DTYPES else (result,)
    if c.dtype not in expected:
        raise OperandError(
            "c", f"dtype {c.dtype} does not fit the result dtype {result}; expected {' or '.join(expected)}"
        )


def _batched(shape, matrix_shape, batch) -> bool:
    """Whether ``shape`` is ``matrix_shape`` under batch dimensions that broadcast to ``batch``."""
    shape, matrix_shape = tuple(shape), tuple(matrix_shape)
    lead = len(shape) - len(matrix_shape)
    return lead >= 0 and shape[lead:] == matrix_shape and broadcasts_to(shape[:lead], batch)


def _check_c_shape(c: OperandInfo, shape: MatmulShape):
    matrix_shape = shape.result_shape[len(shape.batch_shape):]
    if not _batched(c.shape, matrix_shape, shape.batch_shape):
        raise OperandError(
            "c",
            f"shape {c.shape} must be the result's {shape.result_shape}, or its matrix shape {matrix_shape} under "
            f"batch dimensions that broadcast to {shape.batch_shape}",
        )


def _check_epilog(spec: EpilogSpec, a: OperandInfo, b: OperandInfo, result_dtype: str):
    if "complex" in a.dtype:
        raise OptionsError("epilog", f"{spec.name} needs real operands (got {a.dtype})")
    if spec.epilog.name not in ("RELU", "GELU") and (len(a.shape) < 2 or len(b.shape) < 2):
        raise OperandError("a" if len(a.shape) < 2 else "b", f"epilog {spec.name} needs 2-D (or batched) operands")
    if a.dtype in FP8_DTYPES and (spec.aux_output or spec.aux_input or spec.bgrad):
        raise OptionsError(
            "epilog", f"{spec.name} is not available for float8 operands; use RELU, GELU or a *_BIAS epilog"
        )


def _bias_mode(bias: OperandInfo, shape: MatmulShape, c_given: bool, result_dtype: str) -> str:
    argument = "epilog_inputs['bias']"
    if bias.dtype != result_dtype:
        raise OperandError(argument, f"dtype {bias.dtype} must be the result dtype {result_dtype}")
    m, n, batch = shape.m, shape.n, shape.batch_shape
    bias_shape = bias.shape
    if _batched(bias_shape, (n,), ()) or _batched(bias_shape, (1, n), batch):
        return "fused"
    if _batched(bias_shape, (m, n), batch):
        if c_given:
            raise OperandError(argument, f"a full-shape bias {bias_shape} is added through C, so it cannot be used "
                               "together with c; pass a bias of shape (N,) or add c to it")
        return "fold"
    raise OperandError(
        argument,
        f"shape {bias_shape} is not supported: expected ({n},) (one bias per output feature), "
        f"(..., 1, {n}) with batch dimensions that broadcast to {batch}, or ({m}, {n}) likewise (added "
        f"through C, so without c)",
    )


def _check_aux_input(spec: EpilogSpec, aux: OperandInfo, shape: MatmulShape, result_dtype: str):
    argument = f"epilog_inputs[{spec.aux_input!r}]"
    if spec.aux_input == RELU_AUX_NAME:
        want_dtype, width = "uint8", relu_aux_width(shape.n)
    else:
        want_dtype, width = result_dtype, shape.n
    if aux.dtype != want_dtype:
        raise OperandError(argument, f"dtype must be {want_dtype} (got {aux.dtype})")
    matrix = (shape.m, width)
    if not _batched(aux.shape, matrix, shape.batch_shape):
        raise OperandError(argument, f"shape must be {shape.batch_shape + matrix} (the forward pass's "
                           f"{spec.aux_input} for a ({shape.m}, {shape.n}) result), or {matrix} under batch "
                           f"dimensions that broadcast to {shape.batch_shape} (got {aux.shape})")


def describe_problem(a: OperandInfo, b: OperandInfo, c: OperandInfo | None, *, beta, epilog: EpilogSpec | None,
                     epilog_inputs: dict, options: MatmulOptions) -> MatmulProblem:
    """Check everything that does not depend on where the problem runs.

    ``epilog_inputs`` maps names to OperandInfo. Raises OperandError, UnsupportedOperandError or
    OptionsError naming the argument.
    """
    _check_dtypes(a, b)
    shape = matmul_shape(a.shape, b.shape)
    check_beta(beta, c is not None)
    if c is not None:
        _check_c_shape(c, shape)
    result_dtype = resolve_result_dtype(options, a.dtype, c.dtype if c is not None else None)
    _check_result_dtype(result_dtype, a.dtype, c, options.result_type is not None)
    if a.dtype not in FP8_DTYPES and (options.fast_accumulation or options.result_amax):
        name = "fast_accumulation" if options.fast_accumulation else "result_amax"
        raise OptionsError(f"options.{name}", "applies to float8 operands only")
    if options.result_amax and result_dtype not in FP8_DTYPES:
        raise OptionsError("options.result_amax", f"needs a float8 result (got {result_dtype})")
    compute_type = options.compute_type or default_compute_type(a.dtype)
    scale_type = options.scale_type or default_scale_type(compute_type, a.dtype)
    if scale_type.startswith("complex") != a.dtype.startswith("complex"):
        kind = "a complex" if a.dtype.startswith("complex") else "a real"
        raise OptionsError("options.scale_type", f"{a.dtype} operands need {kind} scale type (got {scale_type})")

    expected_inputs = set()
    bias_mode = None
    if epilog is not None:
        _check_epilog(epilog, a, b, result_dtype)
        expected_inputs = {name for name in ("bias" if epilog.bias else None, epilog.aux_input) if name}
    unexpected = sorted(set(epilog_inputs) - expected_inputs)
    if unexpected:
        what = epilog.name if epilog is not None else "no epilog"
        raise OptionsError(
            "epilog_inputs", f"unexpected input(s) {unexpected} for {what}; expected {sorted(expected_inputs)}"
        )
    missing = sorted(expected_inputs - set(epilog_inputs))
    if missing:
        assert epilog is not None  # only an epilog expects inputs
        raise OperandError("epilog_inputs", f"epilog {epilog.name} needs epilog_inputs {missing}")
    if epilog is not None and epilog.bias:
        bias_mode = _bias_mode(epilog_inputs["bias"], shape, c is not None, result_dtype)
        if bias_mode == "fold":
            if a.dtype in FP8_DTYPES:
                raise OperandError("epilog_inputs['bias']", "float8 products take a bias of shape (N,) only")
            unbiased = WITHOUT_BIAS[epilog.epilog]
            epilog = EPILOGS[unbiased] if unbiased is not None else None
    if epilog is not None and epilog.aux_input:
        _check_aux_input(epilog, epilog_inputs[epilog.aux_input], shape, result_dtype)
    return MatmulProblem(
        shape, a.dtype, b.dtype, c.dtype if c is not None else None, result_dtype, compute_type, scale_type,
        epilog, bias_mode, len(a.shape), len(b.shape), options.result_amax,
    )


def check_quantization_scales(scales, problem: MatmulProblem) -> dict:
    """``{"a": ..., "b": ..., "d": ...}`` (floats or one-element float32 arrays) for float8 problems."""
    if scales is None:
        return {}
    if not problem.is_fp8:
        raise OptionsError("quantization_scales", "applies to float8 operands only")
    if not isinstance(scales, dict):
        raise OptionsError(
            "quantization_scales", f"expected a dict with keys among 'a', 'b', 'd' (got {type(scales).__name__})"
        )
    unknown = sorted(set(scales) - {"a", "b", "d"})
    if unknown:
        raise OptionsError("quantization_scales", f"unknown key(s) {unknown}; valid: 'a', 'b', 'd'")
    if "d" in scales and problem.result_dtype not in FP8_DTYPES:
        raise OptionsError("quantization_scales", f"a 'd' scale needs a float8 result (got {problem.result_dtype})")
    checked = {}
    for key, value in scales.items():
        argument = f"quantization_scales[{key!r}]"
        if isinstance(value, (np.ndarray, np.generic)):  # host memory: its value, read now, as a number's
            if value.size != 1 or value.dtype.kind not in "iuf":
                raise OptionsError(argument, f"expected one real element (got dtype {value.dtype}, shape "
                                             f"{value.shape})")
            value = float(value.reshape(-1)[0])
        if isinstance(value, (bool, np.bool_)) or not (isinstance(value, numbers.Real) or hasattr(value, "shape")):
            raise OptionsError(argument,
                               f"expected a float or a one-element float32 array (got {type(value).__name__})")
        checked[key] = value
    return checked
