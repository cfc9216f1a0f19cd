"""What a sparse @ dense product is, as pure functions of shapes, strides and dtypes (no GPU).

:func:`describe_problem` checks the operands against each other and returns a
:class:`SparseMatmulProblem`; :func:`dense_layout` says how cuSPARSE sees a dense operand.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._core.errors import OperandError, OptionsError, UnsupportedLayoutError
from .._core.tensor import Operand, SparseOperand

__all__ = ["SparseMatmulProblem", "describe_problem", "dense_layout", "compute_dtype", "check_transpose"]

# float16 and bfloat16 are multiplied and summed in float32 (cuSPARSE's mixed precision), as on the CPU.
_COMPUTE_DTYPES = {"float16": "float32", "bfloat16": "float32"}


def compute_dtype(dtype: str) -> str:
    """The dtype products are summed in: float32 for float16 and bfloat16, else the dtype itself."""
    return _COMPUTE_DTYPES.get(dtype, dtype)


def check_transpose(value) -> bool:
    """``transpose_a``: a bool (or numpy bool)."""
    if type(value).__name__ not in ("bool", "bool_"):
        raise OptionsError("transpose_a", f"expected True or False (got {value!r})")
    return bool(value)


@dataclass(frozen=True)
class SparseMatmulProblem:
    """``alpha * op(a) @ b + beta * c`` with ``op(a)`` of shape ``(m, k)``.

    ``n`` is None for a vector ``b`` (SpMV), the number of columns of ``b`` otherwise (SpMM).
    """

    m: int
    k: int
    n: int | None
    nnz: int
    transpose: bool
    dtype: str
    index_dtype: str
    has_c: bool

    @property
    def is_vector(self) -> bool:
        return self.n is None

    @property
    def result_shape(self) -> tuple:
        return (self.m,) if self.n is None else (self.m, self.n)

    @property
    def compute_dtype(self) -> str:
        return compute_dtype(self.dtype)

    @property
    def is_empty(self) -> bool:
        """The result has no element: nothing to compute."""
        return self.m == 0 or self.n == 0

    @property
    def is_zero_product(self) -> bool:
        """``op(a) @ b`` is exactly 0 (no stored entry, or k = 0): the result is ``beta * c``."""
        return self.nnz == 0 or self.k == 0


def describe_problem(a: SparseOperand, b: Operand, c: Operand | None, transpose: bool) -> SparseMatmulProblem:
    """Check ``b`` and ``c`` against ``a`` (shapes and dtypes) and describe the product.

    Raises
    ------
    OperandError
        ``b`` is not 1-D or 2-D, its length (rows) is not op(a)'s number of columns, or ``b`` or
        ``c`` has another dtype than ``a``, or ``c`` another shape than the result.
    """
    rows, cols = a.shape
    m, k = (cols, rows) if transpose else (rows, cols)
    op = "a.T" if transpose else "a"
    if b.ndim not in (1, 2):
        raise OperandError("b", f"expected a vector or a matrix (1-D or 2-D), got shape {tuple(b.shape)}")
    if b.shape[0] != k:
        raise OperandError("b", f"has {b.shape[0]} rows but {op} of shape {(m, k)} has {k} columns")
    dtype = a.dtype.name
    if b.dtype != a.dtype:
        raise OperandError("b", f"has dtype {b.dtype.name} but a has {dtype} (the same dtype is expected)")
    n = None if b.ndim == 1 else int(b.shape[1])
    problem = SparseMatmulProblem(m, k, n, a.nnz, transpose, dtype, a.index_dtype.name, c is not None)
    if c is not None:
        if tuple(c.shape) != problem.result_shape:
            raise OperandError("c", f"has shape {tuple(c.shape)} but the result has shape {problem.result_shape}")
        if c.dtype != a.dtype:
            raise OperandError("c", f"has dtype {c.dtype.name} but a has {dtype} (the same dtype is expected)")
    return problem


def dense_layout(shape: tuple, strides: tuple, argument: str) -> tuple[str, int]:
    """``(order, leading dimension)`` of a dense operand as cuSPARSE takes it.

    A vector must be contiguous (``("vector", 1)``). A matrix is ``"row"`` (row-major: its columns
    contiguous, rows ``ld >= columns`` elements apart) or ``"col"`` (column-major); a matrix of one
    row or column is taken as row-major.

    Raises
    ------
    UnsupportedLayoutError
        For any other layout (a vector with a stride, a matrix with neither axis contiguous).
    """
    remedy = "pass a contiguous copy"
    if len(shape) == 1:
        if shape[0] > 1 and strides[0] != 1:
            raise UnsupportedLayoutError(argument, f"a vector with stride {strides[0]} is not supported", remedy)
        return "vector", 1
    rows, cols = shape
    if rows == 0 or cols == 0:  # nothing to address: libraries give such arrays any strides (cupy: 0)
        return "row", max(cols, 1)
    if (cols <= 1 or strides[1] == 1) and (rows <= 1 or strides[0] >= max(cols, 1)):
        return "row", strides[0] if rows > 1 else max(cols, 1)
    if (rows <= 1 or strides[0] == 1) and (cols <= 1 or strides[1] >= max(rows, 1)):
        return "col", strides[1] if cols > 1 else max(rows, 1)
    raise UnsupportedLayoutError(argument, f"strides {tuple(strides)} of shape {tuple(shape)} are neither row- nor "
                                           f"column-major", remedy)
