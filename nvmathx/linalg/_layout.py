"""Pure layout rules of matmul: numpy.matmul shapes and broadcasting, and cuBLASLt matrix layouts.

Everything here is a function of shapes, strides (in elements) and pointers, so it is tested on a
machine with no GPU. Row-major results are computed through the identity ``D^T = B^T A^T``: a
row-major ``(M, N)`` array is a column-major ``N x M`` matrix, so cuBLASLt multiplies the user's
``b`` (its "A") by the user's ``a`` (its "B") and every layout handed to it is column-major.
"""

from __future__ import annotations

from typing import NamedTuple

from .._core.alignment import pointer_alignment
from .._core.errors import OperandError, UnsupportedLayoutError

__all__ = [
    "MatmulShape",
    "MatrixLayout",
    "LtMatrix",
    "matmul_shape",
    "matrix_layout",
    "broadcasts_to",
    "promote",
    "lt_operands",
    "pointer_alignment",
    "round_up",
]

OP_N, OP_T, OP_C = 0, 1, 2  # cublasOperation_t: as stored, transposed, conjugate-transposed


class MatmulShape(NamedTuple):
    """The problem ``(..., M, K) @ (..., K, N)`` after numpy's 1-D promotion and batch broadcasting."""

    m: int
    n: int
    k: int
    batch_shape: tuple
    result_shape: tuple
    a_shape: tuple  # a as a (batch..., M, K) stack (1-D promoted)
    b_shape: tuple  # b as a (batch..., K, N) stack

    @property
    def batch_count(self) -> int:
        count = 1
        for extent in self.batch_shape:
            count *= extent
        return count


class MatrixLayout(NamedTuple):
    """How one operand's matrices sit in memory (user frame: ``rows x cols`` per matrix)."""

    rows: int
    cols: int
    order: str  # "row" (stride of the last axis is 1) or "col"
    ld: int
    batch_stride: int  # 0: one matrix broadcast over the batch


class LtMatrix(NamedTuple):
    """A column-major cuBLASLt matrix layout and the operation applied to it."""

    rows: int
    cols: int
    ld: int
    batch_stride: int
    op: int


def round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def promote(shape, strides, argument, position):
    """numpy.matmul's 1-D promotion: (K,) is (1, K) as ``a`` and (K, 1) as ``b``."""
    if len(shape) == 0:
        raise OperandError(argument, "matmul needs arrays with at least one dimension (got a 0-d array); "
                           "use multiplication for scalars")
    if len(shape) > 1:
        return tuple(shape), tuple(strides)
    (extent,), (stride,) = shape, strides
    if position == "a":
        return (1, extent), (extent * stride, stride)
    return (extent, 1), (stride, extent * stride)


def matmul_shape(a_shape, b_shape) -> MatmulShape:
    """Apply numpy.matmul's shape rules.

    Raises
    ------
    OperandError
        For 0-d operands, mismatched inner extents or batch shapes that do not broadcast (the
        message names ``a`` or ``b``). Extents of 0 are numpy's: any of M, N, K and the batch.
    """
    a2, _ = promote(a_shape, (1,) * len(a_shape), "a", "a")
    b2, _ = promote(b_shape, (1,) * len(b_shape), "b", "b")
    m, k = a2[-2:]
    kb, n = b2[-2:]
    if k != kb:
        raise OperandError("b", f"inner dimensions do not match: a has K={k} (shape {tuple(a_shape)}) but b "
                           f"has K={kb} (shape {tuple(b_shape)})")
    batch = broadcast_batch(a2[:-2], b2[:-2])
    result = batch + ((m,) if len(a_shape) > 1 else ()) + ((n,) if len(b_shape) > 1 else ())
    return MatmulShape(m, n, k, batch, result, a2, b2)


def broadcast_batch(a_batch, b_batch) -> tuple:
    """numpy broadcasting of the two batch shapes (OperandError naming ``b`` when they clash)."""
    ndim = max(len(a_batch), len(b_batch))
    a_full = (1,) * (ndim - len(a_batch)) + tuple(a_batch)
    b_full = (1,) * (ndim - len(b_batch)) + tuple(b_batch)
    batch = []
    for x, y in zip(a_full, b_full):
        if x != y and 1 not in (x, y):
            raise OperandError("b", f"batch dimensions {tuple(b_batch)} do not broadcast with a's {tuple(a_batch)}")
        batch.append(y if x == 1 else x)  # (an extent of 0 broadcasts with 1 to 0, as in numpy)
    return tuple(batch)


def matrix_layout(shape, strides, argument, position, prefer="row") -> MatrixLayout:
    """The layout of one matrix of operand ``argument`` (``position`` "a", "b" or "c" decides
    1-D promotion); its ``batch_stride`` is 0 here: the batch is planned as a whole (see
    :mod:`._batching`).

    ``prefer`` picks the order when both fit (a vector or a single row/column).

    Raises
    ------
    UnsupportedLayoutError
        When the matrices are neither row- nor column-major with a positive leading dimension.
    """
    shape, strides = promote(tuple(shape), tuple(strides), argument, position)
    rows, cols = shape[-2:]
    row_stride, col_stride = strides[-2:]
    candidates = {}
    if col_stride == 1 or cols == 1:
        ld = row_stride if rows > 1 else cols
        if ld >= max(cols, 1):
            candidates["row"] = ld
    if row_stride == 1 or rows == 1:
        ld = col_stride if cols > 1 else rows
        if ld >= max(rows, 1):
            candidates["col"] = ld
    if not candidates:
        raise UnsupportedLayoutError(
            argument,
            f"its matrices (shape {shape[-2:]}, strides {strides[-2:]} in elements) are neither row- nor "
            "column-major with a positive leading dimension, which cuBLASLt needs",
            remedy="pass a C- or Fortran-contiguous copy",
        )
    order = prefer if prefer in candidates else next(iter(candidates))
    return MatrixLayout(rows, cols, order, candidates[order], 0)


def broadcasts_to(shape, batch_shape) -> bool:
    """Whether a batch shape broadcasts to ``batch_shape`` (numpy's rules, right-aligned)."""
    shape, batch_shape = tuple(shape), tuple(batch_shape)
    if len(shape) > len(batch_shape):
        return False
    return all(own in (1, extent) for own, extent in zip(shape, batch_shape[len(batch_shape) - len(shape):]))


def lt_operands(a: MatrixLayout, b: MatrixLayout) -> tuple[LtMatrix, LtMatrix]:
    """cuBLASLt's (A, B) for the row-major product ``a @ b``: A is ``b`` (``N x K`` after its op),
    B is ``a`` (``K x M`` after its op); every layout is column-major."""
    if b.order == "row":  # memory is b^T, column-major N x K
        lt_a = LtMatrix(b.cols, b.rows, b.ld, b.batch_stride, OP_N)
    else:  # memory is b, column-major K x N
        lt_a = LtMatrix(b.rows, b.cols, b.ld, b.batch_stride, OP_T)
    if a.order == "row":  # memory is a^T, column-major K x M
        lt_b = LtMatrix(a.cols, a.rows, a.ld, a.batch_stride, OP_N)
    else:  # memory is a, column-major M x K
        lt_b = LtMatrix(a.rows, a.cols, a.ld, a.batch_stride, OP_T)
    return lt_a, lt_b
