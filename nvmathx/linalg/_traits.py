"""cuBLASLt traits of a checked problem: layouts, leading dimensions, batch strides and alignments
of every operand and epilog buffer, in cuBLASLt's column-major frame (pure functions).

The product is computed as ``D^T = B^T A^T`` (see :mod:`._layout`): cuBLASLt's A is the user's ``b``
and its B is the user's ``a``; D is the row-major result, column-major ``N x M``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._core.dtypes import numpy_dtype
from .._core.errors import OperandError, OptionsError, UnsupportedLayoutError
from .._core.tensor import c_strides, f_strides
from .._matmulcore.epilogs import GELU_AUX_NAME, RELU_AUX_NAME, gelu_aux_ld, relu_aux_width
from ._batching import BatchOperand, BatchPlan, aligned_strides, dense_batch_strides, plan_batches
from ._layout import OP_C, OP_N, OP_T, LtMatrix, MatrixLayout, lt_operands, matrix_layout, pointer_alignment, promote
from ._problem import MatmulProblem, OperandInfo, full_matrix

__all__ = ["LtTraits", "lt_traits", "EXPANDABLE_DTYPES"]


# Inputs that may be copied to the full batch (see :mod:`._batching`): the dtypes the device copy
# nvmathx._codegen.elementwise.copy_nd copies unchanged (a test keeps the two in step).
EXPANDABLE_DTYPES = ("float32", "float64", "complex64", "complex128")
# Copies to the full batch take at most twice the result's bytes, or this much for small results.
EXPANSION_FLOOR_BYTES = 64 << 20


@dataclass(frozen=True)
class LtTraits:
    """Everything the cuBLASLt descriptors need besides pointers."""

    lt_a: LtMatrix  # the user's b
    lt_b: LtMatrix  # the user's a
    lt_c: LtMatrix | None  # the user's c or a folded bias; None: C is not read
    lt_d: LtMatrix
    batch_count: int
    # The calls over the batch: names "a", "b", "c" (the user's c or a folded bias), "d", "bias"
    # (fused), "aux" (input or output) and "bgrad", offsets in elements of each.
    batches: BatchPlan
    bias_batch_stride: int = 0
    aux_ld: int = 0  # elements; bits for the ReLU mask
    aux_batch_stride: int = 0
    aux_shape: tuple | None = None  # shape of the auxiliary output buffer (user frame)
    bgrad_shape: tuple | None = None
    bgrad_batch_stride: int = 0
    alignment_a: int = 256  # minimum alignments of cuBLASLt's A, B and C, in bytes
    alignment_b: int = 256
    alignment_c: int = 256
    expansions: tuple = ()  # (name, OperandInfo as given, OperandInfo of its full-batch copy)


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
        raise OptionsError(
            "epilog",
            f"{problem.epilog.name} with a float8 result is not supported; use result_type bfloat16 or float16",
        )


def _conjugated(matrix: LtMatrix, info: OperandInfo, argument: str) -> LtMatrix:
    """cuBLASLt's matrix of an operand whose values are the conjugates of its memory: CUBLAS_OP_C,
    which conjugates the matrix it transposes (a column-major operand, under D^T = B^T A^T)."""
    if not info.conj:
        return matrix
    if matrix.op != OP_T:
        raise UnsupportedLayoutError(argument, "a lazily conjugated operand must be column-major (a conjugate "
                                     "transpose such as x.mH)", remedy="materialise it first (x.resolve_conj())")
    return matrix._replace(op=OP_C)


def _row_major(info: OperandInfo, problem: MatmulProblem, argument: str) -> MatrixLayout:
    shape, strides = full_matrix(info.shape, info.strides, problem.a_ndim, problem.b_ndim)
    layout = matrix_layout(shape, strides, argument, "c", prefer="row")
    if layout.order != "row":
        raise UnsupportedLayoutError(argument, "must be row-major (its last axis contiguous) like the result",
                                     remedy="pass a C-contiguous copy")
    return layout


def _check_bias(bias: OperandInfo, problem: MatmulProblem) -> None:
    if problem.shape.n > 1 and bias.strides[-1] != 1:
        raise UnsupportedLayoutError("epilog_inputs['bias']", f"must be contiguous along N (stride {bias.strides[-1]})",
                                     remedy="pass a contiguous copy")


def _aux_input(info: OperandInfo, problem: MatmulProblem, kind: str) -> int:
    """The leading dimension of a relu_aux (in bits) or gelu_aux (in elements) input; its batch
    strides must keep every matrix as aligned as the first."""
    argument = f"epilog_inputs[{kind!r}]"
    m, n = problem.shape.m, problem.shape.n
    if info.strides[-1] != 1:
        raise UnsupportedLayoutError(
            argument, "must be contiguous along its last axis", remedy="pass it as returned by the forward pass"
        )
    if kind == RELU_AUX_NAME:
        unit, multiple, row = 8, 128, info.strides[-2] if m > 1 else relu_aux_width(n)
    else:
        unit, multiple, row = 1, 8, info.strides[-2] if m > 1 else gelu_aux_ld(n)
    ld = row * unit
    if ld % multiple or ld < n:
        raise UnsupportedLayoutError(
            argument,
            f"leading dimension {ld} must be a multiple of {multiple} and at least N={n}",
            remedy="pass it as returned by the forward pass",
        )
    strides = aligned_strides(problem.shape.batch_shape, info.shape[:-2], info.strides[:-2])
    if any(stride * unit % multiple for stride in strides) or any(stride < 0 for stride in strides):
        raise UnsupportedLayoutError(argument, f"batch strides must be non-negative multiples of {multiple}",
                                     remedy="pass it as returned by the forward pass")
    return ld


def _itemsize(dtype_name: str) -> int:
    return numpy_dtype(dtype_name).itemsize


def _batch_operands(problem: MatmulProblem, infos: dict, aux_shape, bgrad_shape, expandable_dtypes) -> dict:
    """The :class:`BatchOperand` of every buffer a call touches (see :func:`lt_traits`)."""
    shape = problem.shape
    m, n, k, batch = shape.m, shape.n, shape.k, shape.batch_shape
    operands = {}
    for name, position, elements, dtype in (("a", "a", m * k, problem.a_dtype), ("b", "b", k * n, problem.b_dtype)):
        info = infos[name]
        full, strides = promote(info.shape, info.strides, name, position)
        operands[name] = BatchOperand(full[:-2], strides[:-2], elements, _itemsize(dtype), dtype in expandable_dtypes)
    if infos.get("c") is not None:
        full, strides = full_matrix(infos["c"].shape, infos["c"].strides, problem.a_ndim, problem.b_ndim)
        operands["c"] = BatchOperand(full[:-2], strides[:-2], m * n, _itemsize(problem.lt_c_dtype),
                                     problem.lt_c_dtype in expandable_dtypes)
    result_size = _itemsize(problem.result_dtype)
    operands["d"] = BatchOperand(batch, dense_batch_strides(batch, m * n), m * n, result_size)
    if infos.get("bias") is not None:
        bias = infos["bias"]
        operands["bias"] = BatchOperand(bias.shape[:-2], bias.strides[:-2], n, result_size,
                                        problem.result_dtype in expandable_dtypes)
    if infos.get("aux") is not None:
        aux = infos["aux"]
        operands["aux"] = BatchOperand(aux.shape[:-2], aux.strides[:-2], m * aux.shape[-1], _itemsize(aux.dtype))
    elif aux_shape is not None:
        relu = problem.epilog is not None and problem.epilog.aux_output == RELU_AUX_NAME
        size = 1 if relu else result_size
        operands["aux"] = BatchOperand(batch, dense_batch_strides(batch, m * aux_shape[-1]), m * aux_shape[-1], size)
    if bgrad_shape is not None:
        length = bgrad_shape[-1]
        operands["bgrad"] = BatchOperand(batch, dense_batch_strides(batch, length), length, result_size)
    return operands


def _expanded(info: OperandInfo, matrix_ndim: int, batch: tuple, order: str) -> OperandInfo:
    """``info`` copied to the full batch: matrices dense in ``order``, the batch dense in C order."""
    matrix = tuple(info.shape[len(info.shape) - matrix_ndim:])
    matrix_strides = c_strides(matrix) if order == "row" else f_strides(matrix)
    elements = 1
    for extent in matrix:
        elements *= extent
    return OperandInfo(batch + matrix, dense_batch_strides(batch, elements) + matrix_strides, info.dtype, info.conj)


def _alignment(ptr: int, name: str, batches: BatchPlan, itemsize: int) -> int:
    """The alignment every call sees: of the pointer plus each call's offset and the batch stride."""
    index = batches.names.index(name)
    offsets = {call[index] for call in batches.offsets} | {batches.strides[name]}
    return min(pointer_alignment(ptr + offset * itemsize) for offset in offsets)


def lt_traits(problem: MatmulProblem, a: OperandInfo, b: OperandInfo, c: OperandInfo | None, inputs: dict,
              pointers: dict, expandable_dtypes=EXPANDABLE_DTYPES) -> LtTraits:
    """The cuBLASLt traits of ``problem`` for operands laid out as described.

    ``pointers`` maps ``"a"``, ``"b"``, ``"c"`` (and ``"bias"``) to addresses (for alignment).
    Inputs of ``expandable_dtypes`` may be planned as copies to the full batch (see
    :mod:`._batching`); ``expansions`` then says which, and their alignment is the copy's.

    Raises
    ------
    UnsupportedLayoutError, OperandError, OptionsError
        Naming the operand whose layout, size or alignment cuBLASLt cannot take.
    """
    shape, epilog = problem.shape, problem.epilog
    batch = shape.batch_shape
    a_prefer = "col" if epilog is not None and epilog.bgrad_of == "a" else "row"
    b_prefer = "col" if problem.is_fp8 else "row"
    layouts = {"a": matrix_layout(a.shape, a.strides, "a", "a", prefer=a_prefer),
               "b": matrix_layout(b.shape, b.strides, "b", "b", prefer=b_prefer)}
    if problem.is_fp8:
        _check_fp8(problem, layouts["a"], layouts["b"], pointers)
    infos = {"a": a, "b": b}
    pointers = dict(pointers)
    addend_argument = None
    if c is not None:
        infos["c"], addend_argument = c, "c"
    elif problem.bias_mode == "fold":
        infos["c"], addend_argument, pointers["c"] = inputs["bias"], "epilog_inputs['bias']", pointers.get("bias", 0)
    if addend_argument is not None:
        layouts["c"] = _row_major(infos["c"], problem, addend_argument)
    fields: dict[str, Any] = {}
    aux_shape: tuple | None = None
    bgrad_shape: tuple | None = None
    if epilog is not None:
        if epilog.bgrad_of == "a" and layouts["a"].order != "col":
            raise UnsupportedLayoutError("a", "BGRADA needs a column-major a (cuBLASLt reduces it transposed)",
                                         remedy="pass a as the transpose of a row-major array, e.g. dz.T")
        if epilog.aux_input and shape.k == 1:
            raise OperandError("a", f"{epilog.name} needs K > 1 (cuBLASLt does not support K = 1)")
        if problem.bias_mode == "fused":
            _check_bias(inputs["bias"], problem)
            infos["bias"] = inputs["bias"]
        if epilog.aux_output == RELU_AUX_NAME:
            aux_shape = batch + (shape.m, relu_aux_width(shape.n))
            fields["aux_ld"] = relu_aux_width(shape.n) * 8
        elif epilog.aux_output == GELU_AUX_NAME:
            aux_shape = batch + (shape.m, gelu_aux_ld(shape.n))
            fields["aux_ld"] = gelu_aux_ld(shape.n)
        if epilog.aux_input:
            fields["aux_ld"] = _aux_input(inputs[epilog.aux_input], problem, epilog.aux_input)
            infos["aux"] = inputs[epilog.aux_input]
        if epilog.bgrad:
            bgrad_shape = batch + (shape.m if epilog.bgrad_of == "a" else shape.n,)
    itemsize = numpy_dtype(problem.result_dtype).itemsize
    operands = _batch_operands(problem, infos, aux_shape, bgrad_shape, expandable_dtypes)
    result_bytes = shape.batch_count * shape.m * shape.n * itemsize
    batches = plan_batches(batch, operands, max_expanded_bytes=max(2 * result_bytes, EXPANSION_FLOOR_BYTES))
    expansions = []
    for name in batches.expand:
        matrix_ndim = len(infos[name].shape) - len(operands[name].shape)
        order = layouts[name].order if name in ("a", "b") else "row"
        expanded = _expanded(infos[name], matrix_ndim, batch, order)
        expansions.append((name, infos[name], expanded))
        infos[name], pointers[name] = expanded, 0  # the copy is allocated aligned
        if name in ("a", "b"):
            layouts[name] = matrix_layout(expanded.shape, expanded.strides, name, name, prefer=order)
    strides = batches.strides
    lt_a, lt_b = lt_operands(layouts["a"]._replace(batch_stride=strides["a"]),
                             layouts["b"]._replace(batch_stride=strides["b"]))
    lt_a, lt_b = _conjugated(lt_a, b, "b"), _conjugated(lt_b, a, "a")
    lt_c = None
    if "c" in layouts:
        lt_c = LtMatrix(shape.n, shape.m, layouts["c"].ld, strides["c"], OP_N)
    lt_d = LtMatrix(shape.n, shape.m, shape.n, strides["d"], OP_N)
    if "bias" in strides:
        fields["bias_batch_stride"] = strides["bias"]
    if "aux" in strides:
        # The ReLU mask's stride counts bits (an aux buffer comes only with an epilog).
        bits = epilog is not None and RELU_AUX_NAME in (epilog.aux_input, epilog.aux_output)
        fields["aux_batch_stride"] = strides["aux"] * (8 if bits else 1)
    if bgrad_shape is not None:
        fields.update(bgrad_shape=bgrad_shape, bgrad_batch_stride=strides["bgrad"])
    size = numpy_dtype(problem.a_dtype).itemsize
    return LtTraits(
        lt_a, lt_b, lt_c, lt_d, batches.batch_count, batches,
        aux_shape=aux_shape,
        alignment_a=_alignment(pointers.get("b", 0), "b", batches, size),
        alignment_b=_alignment(pointers.get("a", 0), "a", batches, size),
        alignment_c=_alignment(pointers.get("c", 0), "c", batches, numpy_dtype(problem.lt_c_dtype).itemsize)
        if lt_c is not None else 256,
        expansions=tuple(expansions),
        **fields,
    )
