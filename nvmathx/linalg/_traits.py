"""cuBLASLt traits of a checked problem: layouts, leading dimensions, batch strides and alignments
of every operand and epilog buffer, in cuBLASLt's column-major frame (pure functions).

The product is computed as ``D^T = B^T A^T`` (see :mod:`._layout`): cuBLASLt's A is the user's ``b``
and its B is the user's ``a``; D is the row-major result, column-major ``N x M``.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._core.dtypes import numpy_dtype
from .._core.errors import OperandError, OptionsError, UnsupportedLayoutError
from ._epilogs import gelu_aux_ld, relu_aux_width
from ._layout import OP_C, OP_N, OP_T, LtMatrix, batch_stride, lt_operands, matrix_layout, pointer_alignment
from ._problem import MatmulProblem, OperandInfo, full_matrix

__all__ = ["LtTraits", "lt_traits"]


@dataclass(frozen=True)
class LtTraits:
    """Everything the cuBLASLt descriptors need besides pointers."""

    lt_a: LtMatrix  # the user's b
    lt_b: LtMatrix  # the user's a
    lt_c: LtMatrix | None  # the user's c or a folded bias; None: C is not read
    lt_d: LtMatrix
    batch_count: int
    bias_batch_stride: int = 0
    aux_ld: int = 0  # elements; bits for the ReLU mask
    aux_batch_stride: int = 0
    aux_shape: tuple | None = None  # shape of the auxiliary output buffer (user frame)
    bgrad_shape: tuple | None = None
    bgrad_batch_stride: int = 0
    alignment_a: int = 256  # minimum alignments of cuBLASLt's A, B and C, in bytes
    alignment_b: int = 256
    alignment_c: int = 256


def _alignment(ptr: int, lt: LtMatrix, itemsize: int) -> int:
    align = pointer_alignment(ptr)
    if lt.batch_stride:
        align = min(align, pointer_alignment(lt.batch_stride * itemsize))
    return align


def _check_fp8(problem: MatmulProblem, a_layout, b_layout, pointers):
    if a_layout.order != "row":
        raise UnsupportedLayoutError("a", "float8 needs a row-major a (K contiguous)", remedy="pass a C-contiguous a")
    if b_layout.order != "col":
        raise UnsupportedLayoutError(
            "b", "float8 needs a column-major b (K contiguous), as in torch._scaled_mm",
            remedy="pass b as the transpose of a C-contiguous (N, K) array, e.g. w.T",
        )
    shape = problem.shape
    if shape.m % 16 or shape.n % 16 or shape.k % 16:
        raise OperandError("a", f"float8 needs M, N and K divisible by 16 (got M={shape.m}, N={shape.n}, K={shape.k})")
    for name in ("a", "b"):
        if pointers.get(name, 0) % 16:
            raise OperandError(name, "float8 operands must be 16-byte aligned")
    if problem.epilog is not None and problem.epilog.bias and problem.result_dtype.startswith("float8"):
        raise OptionsError("epilog", f"{problem.epilog.name} with a float8 result is not supported; use result_type bfloat16 or float16")


def _conjugated(matrix: LtMatrix, info: OperandInfo, argument: str) -> LtMatrix:
    """cuBLASLt's matrix of an operand whose values are the conjugates of its memory: CUBLAS_OP_C,
    which conjugates the matrix it transposes (a column-major operand, under D^T = B^T A^T)."""
    if not info.conj:
        return matrix
    if matrix.op != OP_T:
        raise UnsupportedLayoutError(argument, "a lazily conjugated operand must be column-major (a conjugate "
                                     "transpose such as x.mH)", remedy="materialise it first (x.resolve_conj())")
    return matrix._replace(op=OP_C)


def _row_major(info: OperandInfo, problem: MatmulProblem, argument: str) -> LtMatrix:
    shape, strides = full_matrix(info.shape, info.strides, problem.a_ndim, problem.b_ndim)
    layout = matrix_layout(shape, strides, problem.shape.batch_shape, argument, "c", prefer="row")
    if layout.order != "row":
        raise UnsupportedLayoutError(argument, "must be row-major (its last axis contiguous) like the result",
                                     remedy="pass a C-contiguous copy")
    return LtMatrix(problem.shape.n, problem.shape.m, layout.ld, layout.batch_stride, OP_N)


def _bias_stride(bias: OperandInfo, problem: MatmulProblem) -> int:
    argument = "epilog_inputs['bias']"
    if problem.shape.n > 1 and bias.strides[-1] != 1:
        raise UnsupportedLayoutError(argument, f"must be contiguous along N (stride {bias.strides[-1]})",
                                     remedy="pass a contiguous copy")
    if len(bias.shape) < 2:
        return 0
    return batch_stride(bias.shape[:-2], bias.strides[:-2], problem.shape.batch_shape, argument)


def _aux_input(info: OperandInfo, problem: MatmulProblem, kind: str) -> tuple[int, int]:
    """(ld, batch stride) of a relu_aux (in bits) or gelu_aux (in elements) input."""
    argument = f"epilog_inputs[{kind!r}]"
    m, n = problem.shape.m, problem.shape.n
    if info.strides[-1] != 1:
        raise UnsupportedLayoutError(argument, "must be contiguous along its last axis", remedy="pass it as returned by the forward pass")
    if kind == "relu_aux":
        unit, multiple, row = 8, 128, info.strides[-2] if m > 1 else relu_aux_width(n)
    else:
        unit, multiple, row = 1, 8, info.strides[-2] if m > 1 else gelu_aux_ld(n)
    ld = row * unit
    if ld % multiple or ld < n:
        raise UnsupportedLayoutError(argument, f"leading dimension {ld} must be a multiple of {multiple} and at least N={n}",
                                     remedy="pass it as returned by the forward pass")
    stride = batch_stride(info.shape[:-2], info.strides[:-2], problem.shape.batch_shape, argument) * unit
    if stride % multiple:
        raise UnsupportedLayoutError(argument, f"batch stride must be a multiple of {multiple}", remedy="pass it as returned by the forward pass")
    return ld, stride


def lt_traits(problem: MatmulProblem, a: OperandInfo, b: OperandInfo, c: OperandInfo | None, inputs: dict,
              pointers: dict) -> LtTraits:
    """The cuBLASLt traits of ``problem`` for operands laid out as described.

    ``pointers`` maps ``"a"``, ``"b"``, ``"c"`` (and ``"bias"``) to addresses (for alignment).

    Raises
    ------
    UnsupportedLayoutError, OperandError, OptionsError
        Naming the operand whose layout, size or alignment cuBLASLt cannot take.
    """
    shape, epilog = problem.shape, problem.epilog
    batch = shape.batch_shape
    a_prefer = "col" if epilog is not None and epilog.bgrad_of == "a" else "row"
    b_prefer = "col" if problem.is_fp8 else "row"
    a_layout = matrix_layout(a.shape, a.strides, batch, "a", "a", prefer=a_prefer)
    b_layout = matrix_layout(b.shape, b.strides, batch, "b", "b", prefer=b_prefer)
    if problem.is_fp8:
        _check_fp8(problem, a_layout, b_layout, pointers)
    lt_a, lt_b = lt_operands(a_layout, b_layout)
    lt_a, lt_b = _conjugated(lt_a, b, "b"), _conjugated(lt_b, a, "a")
    fields = {}
    if epilog is not None:
        if epilog.bgrad_of == "a" and lt_b.op != OP_T:
            raise UnsupportedLayoutError("a", "BGRADA needs a column-major a (cuBLASLt reduces it transposed)",
                                         remedy="pass a as the transpose of a row-major array, e.g. dz.T")
        if epilog.aux_input and shape.k == 1:
            raise OperandError("a", f"{epilog.name} needs K > 1 (cuBLASLt does not support K = 1)")
        if problem.bias_mode == "fused":
            fields["bias_batch_stride"] = _bias_stride(inputs["bias"], problem)
        if epilog.aux_output == "relu_aux":
            ld = relu_aux_width(shape.n) * 8
            fields.update(aux_ld=ld, aux_batch_stride=shape.m * ld if batch else 0,
                          aux_shape=batch + (shape.m, relu_aux_width(shape.n)))
        elif epilog.aux_output == "gelu_aux":
            ld = gelu_aux_ld(shape.n)
            fields.update(aux_ld=ld, aux_batch_stride=shape.m * ld if batch else 0, aux_shape=batch + (shape.m, ld))
        if epilog.aux_input:
            fields["aux_ld"], fields["aux_batch_stride"] = _aux_input(inputs[epilog.aux_input], problem, epilog.aux_input)
        if epilog.bgrad:
            length = shape.m if epilog.bgrad_of == "a" else shape.n
            fields.update(bgrad_shape=batch + (length,), bgrad_batch_stride=length if batch else 0)
    lt_c = None
    c_pointer = 0
    if c is not None:
        lt_c, c_pointer = _row_major(c, problem, "c"), pointers.get("c", 0)
    elif problem.bias_mode == "fold":
        lt_c, c_pointer = _row_major(inputs["bias"], problem, "epilog_inputs['bias']"), pointers.get("bias", 0)
    batch_count = shape.batch_count
    lt_d = LtMatrix(shape.n, shape.m, shape.n, shape.m * shape.n if batch_count > 1 else 0, OP_N)
    itemsize = numpy_dtype(problem.a_dtype).itemsize
    c_itemsize = numpy_dtype(problem.lt_c_dtype).itemsize
    return LtTraits(
        lt_a, lt_b, lt_c, lt_d, batch_count,
        alignment_a=_alignment(pointers.get("b", 0), lt_a, itemsize),
        alignment_b=_alignment(pointers.get("a", 0), lt_b, itemsize),
        alignment_c=_alignment(c_pointer, lt_c, c_itemsize) if lt_c is not None else 256,
        **fields,
    )
