"""One distributed matmul, resolved from every rank's local view (pure).

Each rank checks and describes its arguments (:func:`describe`, :func:`describe_epilog`: local
checks only); the ranks all-gather the descriptions and each resolves the same global problem from
the same list (:func:`resolve`, :func:`resolve_epilog`), so a mismatch raises the same error on
every rank.
"""

from __future__ import annotations

import numbers
import operator
from dataclasses import dataclass

import numpy as np

from ..._core.errors import OperandError, OptionsError, UnsupportedLayoutError, UnsupportedOperandError
from ..._matmulcore.epilogs import epilog_spec
from ..._matmulcore.scalars import check_scalars
from .._agree import check_same
from ._layout import MatmulLayout, MatrixLayout, infer_global_shape, layout_of, normalize_distribution, plan_layout

__all__ = ["Description", "Problem", "EpilogDescription", "describe", "resolve", "describe_epilog", "resolve_epilog",
           "DTYPES", "EPILOGS", "normalize_distributions", "space_of", "check_global_shape"]

DTYPES = ("float16", "bfloat16", "float32", "float64", "complex64", "complex128")
EPILOGS = ("RELU", "GELU", "BIAS", "RELU_BIAS", "GELU_BIAS")
_WIDE = ("float64", "complex128")


@dataclass(frozen=True)
class Description:
    """What one rank says about its operands and arguments (picklable, compared across ranks)."""

    a_shape: tuple
    b_shape: tuple
    c_shape: tuple | None
    dtype: str
    space: str  # "cpu" or "cuda:N"
    distributions: tuple
    alpha: complex
    beta: complex
    options: tuple


@dataclass(frozen=True)
class Problem:
    """The global product and this rank's part of it."""

    m: int
    k: int
    n: int
    dtype: str
    compute_type: str
    scale_dtype: str
    distributions: tuple
    layout: MatmulLayout  # how it runs (the distributed strategy's layouts)
    result_layout: MatrixLayout  # the result's own distribution
    has_c: bool
    rank: int
    world_size: int

    @property
    def result_shape(self) -> tuple:
        """This rank's piece of the result."""
        return self.result_layout.local_shape(self.rank)

    @property
    def strategy(self) -> str:
        return self.layout.strategy


@dataclass(frozen=True)
class EpilogDescription:
    """One rank's epilog and bias (picklable)."""

    epilog: str | None
    bias_shape: tuple | None
    bias_dtype: str | None


def space_of(operand) -> str:
    return "cpu" if operand.device_id < 0 else f"cuda:{operand.device_id}"


def check_global_shape(global_shape) -> tuple:
    """Two non-negative integers."""
    try:
        values = tuple(operator.index(value) for value in global_shape)
    except TypeError:
        values = ()
    if len(values) != 2 or min(values) < 0:
        raise OptionsError("global_shape", f"expected two non-negative integers (got {global_shape!r})")
    return values


def normalize_distributions(distributions) -> tuple:
    """Three distributions ``(da, db, dd)`` of a, b and the result (c shares the result's)."""
    if isinstance(distributions, (str, bytes)) or not hasattr(distributions, "__len__") or len(distributions) != 3:
        raise OptionsError("distributions", f"expected three distributions (of a, b and the result) (got "
                                            f"{distributions!r})")
    return tuple(normalize_distribution(value) for value in distributions)


def _check_matrix(operand, argument: str, dtype: str | None) -> str:
    if operand.ndim != 2:
        raise OperandError(argument, f"expected this rank's piece of a 2-D matrix (cuBLASMp has no batching) (got "
                                     f"{operand.ndim}-D)")
    name = np.dtype(operand.dtype).name
    if dtype is None and name not in DTYPES:
        raise UnsupportedOperandError(argument, f"dtype {name} is not supported; expected one of {list(DTYPES)}")
    if dtype is not None and name != dtype:
        raise OperandError(argument, f"dtype {name} differs from a's {dtype}")
    if not operand.is_c_contiguous():
        raise UnsupportedLayoutError(argument, "the local piece must be C-contiguous (row-major)",
                                     "pass a C-contiguous copy")
    return name


def _check_together(first, operand, argument: str) -> None:
    if (operand.device_id, operand.package) != (first.device_id, first.package):
        raise OperandError(argument, f"must be a {first.package} array on the same device as a ({space_of(first)}) "
                                     f"(got a {operand.package} array on {space_of(operand)})")


def _scalar(value) -> complex:
    # complex() converts any numbers.Number (Decimal too); its stubs list fewer types
    return complex(value) if isinstance(value, numbers.Number) else value  # type: ignore[call-overload]


def default_compute_type(dtype: str) -> str:
    return "64F" if dtype in _WIDE else "32F"


def _check_compute_type(compute_type: str | None, dtype: str) -> str:
    if compute_type is None:
        return default_compute_type(dtype)
    wide = compute_type.startswith("64F")
    if wide != (dtype in _WIDE) or ("FAST" in compute_type and dtype not in ("float32", "complex64")):
        raise OptionsError("options.compute_type", f"{compute_type} does not compute {dtype} operands")
    return compute_type


def describe(a, b, c, distributions, alpha, beta, options) -> Description:
    """Check this rank's operands (wrapped) and arguments locally, and describe them.

    Raises
    ------
    OperandError, UnsupportedOperandError, UnsupportedLayoutError, OptionsError
        Naming the argument.
    """
    dists = normalize_distributions(distributions)
    dtype = _check_matrix(a, "a", None)
    _check_matrix(b, "b", dtype)
    _check_together(a, b, "b")
    if c is not None:
        _check_matrix(c, "c", dtype)
        _check_together(a, c, "c")
    check_scalars(alpha, beta, complex_ok=dtype.startswith("complex"), has_c=c is not None)
    _check_compute_type(options.compute_type, dtype)
    return Description(tuple(a.shape), tuple(b.shape), None if c is None else tuple(c.shape), dtype, space_of(a),
                       dists, _scalar(alpha), _scalar(beta), options.key())


def resolve(descriptions, rank: int, *, forced: bool) -> Problem:
    """The global problem every rank computes from the all-gathered descriptions (same list, same
    result or the same error on every rank)."""
    first = descriptions[0]
    world_size = len(descriptions)
    check_same([d.dtype for d in descriptions], "a", "dtype")
    check_same([d.space for d in descriptions], "a", "execution space (CPU array on some ranks, GPU on others)")
    check_same([d.distributions for d in descriptions], "distributions", "set of distributions")
    check_same([d.options for d in descriptions], "options", "options")
    check_same([d.alpha for d in descriptions], "alpha", "value")
    check_same([d.beta for d in descriptions], "beta", "value")
    check_same([d.c_shape is None for d in descriptions], "c", "presence (given on some ranks only)")
    da, db, dd = first.distributions
    m, k = infer_global_shape(da, [d.a_shape for d in descriptions], "a")
    k_b, n = infer_global_shape(db, [d.b_shape for d in descriptions], "b")
    if k_b != k:
        raise OperandError("b", f"a is {(m, k)} and b {(k_b, n)} globally: the inner extents differ")
    if first.c_shape is not None:
        c_shape = infer_global_shape(dd, [d.c_shape for d in descriptions], "c")
        if c_shape != (m, n):
            raise OperandError("c", f"the global c is {c_shape}, the product {(m, n)}")
    if min(m, k, n) < 1:
        raise OperandError("a", f"the global product (M, K, N) = {(m, k, n)} is empty")
    layout = plan_layout((m, k, n), first.distributions, world_size, forced=forced)
    compute_type = first.options[0] or default_compute_type(first.dtype)
    scale = ("float64" if compute_type.startswith("64F") else "float32") if "complex" not in first.dtype else (
        "complex128" if compute_type.startswith("64F") else "complex64")
    return Problem(m, k, n, first.dtype, compute_type, scale, first.distributions, layout,
                   layout_of(dd, (m, n), world_size), first.c_shape is not None, rank, world_size)


def describe_epilog(epilog, epilog_inputs, a, dtype: str):
    """(EpilogDescription, the wrapped bias or None) of this rank's epilog arguments (local checks)."""
    from ..._core.tensor import wrap_operand

    spec = epilog_spec(epilog)
    if spec is not None and spec.name not in EPILOGS:
        raise OptionsError("epilog", f"the distributed matmul fuses {', '.join(EPILOGS)} (got {spec.name})")
    if epilog_inputs is not None and not isinstance(epilog_inputs, dict):
        raise OptionsError("epilog_inputs", f"expected a dict of arrays or None (got {type(epilog_inputs).__name__})")
    given = dict(epilog_inputs or {})
    wanted = {"bias"} if spec is not None and spec.bias else set()
    if set(given) != wanted:
        raise OptionsError("epilog_inputs", f"{spec.name if spec else 'no epilog'} takes "
                                            f"{sorted(wanted) or 'no inputs'} (got {sorted(given)})")
    if spec is not None and dtype.startswith("complex"):
        raise OptionsError("epilog", f"{spec.name} needs real operands (got {dtype}), as in nvmathx.linalg")
    if spec is None or not wanted:
        return EpilogDescription(None if spec is None else spec.name, None, None), None
    argument = "epilog_inputs['bias']"
    bias = wrap_operand(given["bias"], argument)
    _check_together(a, bias, argument)
    name = np.dtype(bias.dtype).name
    if bias.ndim != 1 or name != dtype or not bias.is_c_contiguous():
        raise OperandError(argument, f"expected the whole bias, a contiguous 1-D {dtype} array of one value per "
                                     f"output column, on every rank (got shape {tuple(bias.shape)}, {name})")
    return EpilogDescription(spec.name, tuple(bias.shape), name), bias


def resolve_epilog(descriptions, problem: Problem) -> str | None:
    """The agreed epilog's name (or None), after checking the bias fits the product."""
    check_same([d.epilog for d in descriptions], "epilog", "epilog")
    check_same([d.bias_shape for d in descriptions], "epilog_inputs['bias']", "shape")
    first = descriptions[0]
    if first.bias_shape is not None and first.bias_shape != (problem.n,):
        raise OperandError("epilog_inputs['bias']", f"expected the whole bias of the N = {problem.n} output columns "
                                                    f"on every rank, shape ({problem.n},) (got {first.bias_shape})")
    return first.epilog
