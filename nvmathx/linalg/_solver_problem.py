"""What a dense solve is, as pure functions of shapes and dtypes: the problem (batch broadcasting,
1-D or matrix right-hand sides, as scipy.linalg.solve), the layouts the GPU engines use, and the
engine rule."""

from __future__ import annotations

import math
from dataclasses import dataclass

from .._core.errors import OperandError, OptionsError, UnsupportedOperandError

__all__ = ["SolveProblem", "DTYPES", "describe_solve", "choose_solver_engine", "batched_column_major_strides",
           "broadcast_strides", "broadcast_batches", "FUSED_MAX_N", "FUSED_MAX_NRHS", "FUSED_STRUCTURES",
           "BATCHED_MAX_N"]

DTYPES = ("float32", "float64", "complex64", "complex128")


@dataclass(frozen=True)
class SolveProblem:
    """One solve ``op(a) x = b`` over a batch.

    ``a`` is ``a_batch + (n, n)``; ``b`` is ``(n,)`` (``b_vector``: one vector for every matrix) or
    ``b_batch + (n, nrhs)``; the batch is the broadcast of both batches, and ``x`` has
    ``result_shape``. ``structure`` and ``operation`` come from the options.
    """

    a_batch: tuple
    b_batch: tuple
    batch: tuple
    n: int
    nrhs: int
    b_vector: bool
    dtype: str
    structure: str
    operation: str
    lower: bool

    @property
    def batch_count(self) -> int:
        return math.prod(self.batch)

    @property
    def a_count(self) -> int:
        """Matrices in ``a`` itself (fewer than :attr:`batch_count` where ``a`` is broadcast)."""
        return math.prod(self.a_batch)

    @property
    def result_shape(self) -> tuple:
        return self.batch + ((self.n,) if self.b_vector else (self.n, self.nrhs))

    @property
    def empty(self) -> bool:
        """Nothing to compute (an extent of 0): the result is an empty array."""
        return self.batch_count == 0 or self.n == 0 or self.nrhs == 0


def describe_solve(a_shape, a_dtype: str, b_shape, b_dtype: str, *, structure: str, operation: str,
                   lower: bool) -> SolveProblem:
    """The :class:`SolveProblem` of ``a`` and ``b``, or the error that names the argument at fault.

    Shapes follow scipy.linalg.solve (1.17): ``a`` is ``(..., n, n)``; a 1-D ``b`` of length ``n``
    is one right-hand side for every matrix (the result is ``(..., n)``); otherwise ``b`` is
    ``(..., n, k)`` and the batch dimensions of ``a`` and ``b`` broadcast.
    """
    a_shape, b_shape = tuple(a_shape), tuple(b_shape)
    if a_dtype not in DTYPES:
        raise UnsupportedOperandError("a", f"dtype {a_dtype} is not supported; expected one of {list(DTYPES)}")
    if b_dtype != a_dtype:
        raise OperandError("b", f"dtype {b_dtype} differs from a's {a_dtype}; convert one of them")
    if len(a_shape) < 2 or a_shape[-1] != a_shape[-2]:
        raise OperandError("a", f"expected a square matrix or a stack of them, (..., n, n) (got shape {a_shape})")
    n = a_shape[-1]
    if len(b_shape) == 0:
        raise OperandError("b", f"expected a vector (n,) or an array (..., n, k) with n = {n} (got a 0-d array)")
    b_vector = len(b_shape) == 1
    rows = b_shape[0] if b_vector else b_shape[-2]
    if rows != n:
        axis = "its length" if b_vector else "b.shape[-2]"
        raise OperandError("b", f"{axis} is {rows} but a is {n} x {n} (shapes {a_shape} and {b_shape})")
    a_batch, b_batch = a_shape[:-2], () if b_vector else b_shape[:-2]
    batch = broadcast_batches(a_batch, b_batch)
    return SolveProblem(a_batch, b_batch, batch, n, 1 if b_vector else b_shape[-1], b_vector, a_dtype, structure,
                        operation, bool(lower))


def broadcast_batches(a_batch: tuple, b_batch: tuple) -> tuple:
    """numpy's broadcast of two batch shapes (an OperandError naming ``b`` when they do not)."""
    ndim = max(len(a_batch), len(b_batch))
    a_full, b_full = (1,) * (ndim - len(a_batch)) + a_batch, (1,) * (ndim - len(b_batch)) + b_batch
    batch = []
    for x, y in zip(a_full, b_full):
        if x != y and 1 not in (x, y):
            raise OperandError("b", f"batch dimensions {b_batch} do not broadcast with a's {a_batch}")
        batch.append(y if x == 1 else x)
    return tuple(batch)


def batched_column_major_strides(batch: tuple, rows: int, cols: int) -> tuple:
    """Strides (in elements) of a ``batch + (rows, cols)`` array whose matrices are column-major
    and follow each other in C order (what LAPACK-style routines read)."""
    strides = [1, rows]
    step = rows * cols
    for extent in reversed(batch):
        strides.insert(0, step)
        step *= extent
    return tuple(strides)


# Largest n the batched routines take under "auto": they keep a matrix in shared memory or
# registers up to about this order, and past it one cuSOLVER call per matrix is faster.
BATCHED_MAX_N = 128
# Largest n and number of right-hand sides the fused cuSOLVERDx engine takes under "auto".
FUSED_MAX_N = 32
FUSED_MAX_NRHS = 4
FUSED_STRUCTURES = ("general", "positive definite")


def choose_solver_engine(problem: SolveProblem, requested: str = "auto", *, fused: bool = False) -> str:
    """The GPU engine of a problem: ``requested`` unless it is ``"auto"``.

    ``"auto"``: two or more general or positive definite systems of order up to
    :data:`FUSED_MAX_N` with at most :data:`FUSED_MAX_NRHS` right-hand sides go to the fused
    cuSOLVERDx kernel (``"fused"``) where it is ready (``fused``: libmathdx, NVRTC and nvJitLink
    load and the kernel is in the disk cache, so a call never waits on code generation it did not
    ask for; a plan with ``engine="fused"`` builds it); other batches of two or more systems of
    order up to :data:`BATCHED_MAX_N` go to the batched routines (``"batched"``, one call per
    batch); a single system, or larger matrices, to cuSOLVER (``"cusolver"``, one call per
    matrix).

    Raises
    ------
    OptionsError
        For ``requested="fused"`` with a structure the fused engine does not solve.
    """
    if requested == "fused" and problem.structure not in FUSED_STRUCTURES:
        raise OptionsError("options.engine", f"the fused engine solves {' and '.join(FUSED_STRUCTURES)} systems "
                                             f"(got {problem.structure!r})")
    if requested != "auto":
        return requested
    if problem.batch_count >= 2 and problem.n <= FUSED_MAX_N and problem.nrhs <= FUSED_MAX_NRHS and fused \
            and problem.structure in FUSED_STRUCTURES:
        return "fused"
    if problem.batch_count >= 2 and problem.n <= BATCHED_MAX_N:
        return "batched"
    return "cusolver"


def broadcast_strides(shape: tuple, strides: tuple, batch: tuple) -> tuple:
    """Strides that read an array's batch dimensions ``shape`` (with ``strides``) as ``batch``,
    which they broadcast to: 0 where an axis is missing or of extent 1."""
    pad = len(batch) - len(shape)
    out = [0] * pad
    for extent, stride in zip(shape, strides):
        out.append(0 if extent == 1 else stride)
    return tuple(out)
