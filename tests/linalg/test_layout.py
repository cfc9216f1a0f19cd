"""numpy.matmul shape rules and cuBLASLt layout traits (pure functions)."""

import numpy as np
import pytest

from nvmathx import OperandError, UnsupportedLayoutError
from nvmathx.linalg._layout import (
    OP_N,
    OP_T,
    broadcasts_to,
    lt_operands,
    matmul_shape,
    matrix_layout,
    pointer_alignment,
    round_up,
)


def _strides(x):
    return tuple(s // x.itemsize for s in x.strides)


@pytest.mark.parametrize(
    "a_shape, b_shape",
    [((3, 4), (4, 5)), ((4,), (4, 5)), ((3, 4), (4,)), ((4,), (4,)), ((2, 3, 4), (4, 5)), ((3, 4), (2, 4, 5)),
     ((2, 1, 3, 4), (5, 4, 6)), ((1, 3, 4), (7, 4, 2)), ((1, 1), (1, 1)),
     ((0, 4), (4, 5)), ((3, 4), (4, 0)), ((3, 0), (0, 5)), ((0,), (0,)), ((0,), (0, 2)), ((0, 3, 4), (4, 5)),
     ((0, 1, 3, 4), (2, 4, 5)), ((1, 3, 0), (6, 0, 2))],
)
def test_matmul_shape_matches_numpy(a_shape, b_shape):
    expected = np.matmul(np.ones(a_shape), np.ones(b_shape)).shape
    shape = matmul_shape(a_shape, b_shape)
    assert shape.result_shape == expected
    assert shape.k == (a_shape[-1])


@pytest.mark.parametrize(
    "a_shape, b_shape, argument",
    [
        ((), (3, 3), "a"),
        ((3, 4), (5, 6), "b"),
        ((2, 3, 4), (3, 4, 5), "b"),
        ((2, 3, 4), (0, 4, 5), "b"),  # 2 and 0 do not broadcast, as in numpy
        ((3, 0), (1, 5), "b"),
    ],
)
def test_matmul_shape_rejects(a_shape, b_shape, argument):
    with pytest.raises(OperandError) as info:
        matmul_shape(a_shape, b_shape)
    assert info.value.argument == argument


def test_layouts_of_views_need_no_copy():
    x = np.empty((6, 10), np.float32)
    c_order = matrix_layout(x.shape, _strides(x), "a", "a")
    assert (c_order.order, c_order.ld) == ("row", 10)
    f = np.asfortranarray(x)
    assert matrix_layout(f.shape, _strides(f), "a", "a")[2:4] == ("col", 6)
    t = x.T  # a transposed view is column-major
    assert matrix_layout(t.shape, _strides(t), "b", "b")[2:4] == ("col", 10)
    sliced = x[:, :7]  # a padded leading dimension
    assert matrix_layout(sliced.shape, _strides(sliced), "a", "a")[2:4] == ("row", 10)


def test_unsupported_layout_names_operand_and_remedy():
    x = np.empty((6, 10), np.float32)[:, ::2]
    with pytest.raises(UnsupportedLayoutError) as info:
        matrix_layout(x.shape, _strides(x), "b", "b")
    assert info.value.argument == "b" and "copy" in info.value.remedy


def test_vectors_take_the_preferred_order():
    assert matrix_layout((5,), (1,), "a", "a", prefer="row").order == "row"
    assert matrix_layout((5,), (1,), "b", "b", prefer="col").order == "col"
    strided = matrix_layout((5,), (3,), "a", "a")  # (1, 5) with column stride 3
    assert strided.order == "col" and strided.ld == 3


def test_broadcasts_to_follows_numpy():
    for shape, batch in [((), (2, 3)), ((3,), (2, 3)), ((1, 3), (2, 3)), ((2, 1), (2, 3)), ((2, 3), (2, 3)),
                         ((4,), (2, 3)), ((1, 2, 3), (2, 3)), ((2,), (2, 3))]:
        try:
            expected = np.broadcast_shapes(shape, batch) == batch
        except ValueError:
            expected = False
        assert broadcasts_to(shape, batch) == expected, (shape, batch)


def test_lt_operands_swap_and_transpose():
    a = matrix_layout((3, 4), (4, 1), "a", "a")  # row-major M x K
    b = matrix_layout((4, 5), (1, 4), "b", "b")  # column-major K x N
    lt_a, lt_b = lt_operands(a, b)
    assert (lt_a.rows, lt_a.cols, lt_a.ld, lt_a.op) == (4, 5, 4, OP_T)  # b stored as K x N
    assert (lt_b.rows, lt_b.cols, lt_b.ld, lt_b.op) == (4, 3, 4, OP_N)  # a^T stored as K x M


def test_lt_operands_reproduce_numpy_product(rng):
    """Interpret the buffers as cuBLASLt would (column-major) and check D^T = op(A) op(B)."""
    for a_order in "CF":
        for b_order in "CF":
            a = np.asarray(rng.standard_normal((3, 4)), order=a_order)
            b = np.asarray(rng.standard_normal((4, 5)), order=b_order)
            lt_a, lt_b = lt_operands(matrix_layout(a.shape, _strides(a), "a", "a"),
                                     matrix_layout(b.shape, _strides(b), "b", "b"))

            def column_major(x, lt):
                flat = np.ravel(x, order="K")
                matrix = np.lib.stride_tricks.as_strided(flat, (lt.rows, lt.cols), (8, 8 * lt.ld))
                return matrix.T if lt.op == OP_T else matrix

            d_t = column_major(b, lt_a) @ column_major(a, lt_b)
            np.testing.assert_allclose(d_t.T, a @ b)


def test_alignment_and_round_up():
    assert pointer_alignment(0x1000) == 256
    assert pointer_alignment(0x1010) == 16
    assert pointer_alignment(0x1002) == 2
    assert round_up(130, 128) == 256 and round_up(128, 128) == 128
