"""cuBLASLt traits of a problem (pure planning decisions, checked without a GPU)."""

import numpy as np
import pytest

from nvmathx import OperandError, OptionsError, UnsupportedLayoutError
from nvmathx._matmulcore.epilogs import epilog_spec
from nvmathx.linalg import MatmulOptions
from nvmathx.linalg._layout import OP_N, OP_T
from nvmathx.linalg._problem import OperandInfo, describe_problem
from nvmathx.linalg._traits import lt_traits


def _info(shape, dtype="float32", order="C"):
    x = np.empty(shape, dtype=np.float32 if dtype.startswith("float8") or dtype == "bfloat16" else dtype, order=order)
    return OperandInfo(tuple(shape), tuple(s // x.itemsize for s in x.strides), dtype)


def _transposed(shape, dtype="float32"):  # a transposed view of a C-contiguous (shape[::-1]) array
    base = _info(shape[::-1], dtype)
    return OperandInfo(tuple(shape), base.strides[::-1], dtype)


def _traits(a, b, c=None, epilog=None, inputs=None, pointers=None, **options):
    inputs = inputs or {}
    problem = describe_problem(a, b, c, beta=1 if c else 0, epilog=epilog_spec(epilog), epilog_inputs=inputs,
                               options=MatmulOptions(**options))
    return lt_traits(problem, a, b, c, inputs, pointers or {"a": 256, "b": 256, "c": 256})


def test_row_major_product_swaps_operands():
    t = _traits(_info((2, 6, 5)), _info((5, 7)))
    assert (t.lt_a.rows, t.lt_a.cols, t.lt_a.ld, t.lt_a.batch_stride, t.lt_a.op) == (7, 5, 7, 0, OP_N)
    assert (t.lt_b.rows, t.lt_b.cols, t.lt_b.ld, t.lt_b.batch_stride, t.lt_b.op) == (5, 6, 5, 30, OP_N)
    assert (t.lt_d.rows, t.lt_d.cols, t.lt_d.ld, t.lt_d.batch_stride) == (7, 6, 7, 42)
    assert t.batch_count == 2 and t.lt_c is None


def test_c_and_alignment():
    t = _traits(_info((6, 5)), _info((5, 7)), _info((6, 7)), pointers={"a": 0x1008, "b": 0x1010, "c": 0x1004})
    assert (t.lt_c.rows, t.lt_c.cols, t.lt_c.ld) == (7, 6, 7)
    assert (t.alignment_a, t.alignment_b, t.alignment_c) == (16, 8, 4)  # cuBLASLt's A is the user's b
    with pytest.raises(UnsupportedLayoutError) as info:
        _traits(_info((6, 5)), _info((5, 7)), _info((6, 7), order="F"))
    assert info.value.argument == "c"


def test_fp8_needs_tn_layout_and_sizes():
    t = _traits(_info((32, 64), "float8_e4m3fn"), _transposed((64, 16), "float8_e4m3fn"), result_type="bfloat16")
    assert t.lt_a.op == OP_T and t.lt_b.op == OP_N
    with pytest.raises(UnsupportedLayoutError) as info:
        _traits(_info((32, 64), "float8_e4m3fn"), _info((64, 16), "float8_e4m3fn"))
    assert info.value.argument == "b"
    with pytest.raises(OperandError, match="divisible by 16"):
        _traits(_info((30, 64), "float8_e4m3fn"), _transposed((64, 16), "float8_e4m3fn"))
    with pytest.raises(OperandError, match="16-byte"):
        _traits(
            _info((32, 64), "float8_e4m3fn"), _transposed((64, 16), "float8_e4m3fn"), pointers={"a": 0x1008, "b": 256}
        )
    with pytest.raises(OptionsError):
        _traits(_info((32, 64), "float8_e4m3fn"), _transposed((64, 16), "float8_e4m3fn"), epilog="BIAS",
                inputs={"bias": _info((16,), "float8_e4m3fn")})


def test_epilog_buffers():
    t = _traits(_info((3, 6, 5)), _info((5, 130)), epilog="RELU_AUX_BIAS", inputs={"bias": _info((130,))})
    assert t.aux_ld == 256 and t.aux_shape == (3, 6, 32) and t.aux_batch_stride == 6 * 256 and t.bias_batch_stride == 0
    t = _traits(_info((6, 5)), _info((5, 13)), epilog="GELU_AUX_BIAS", inputs={"bias": _info((13,))})
    assert t.aux_ld == 16 and t.aux_shape == (6, 16)
    t = _traits(_info((2, 6, 5)), _info((5, 13)), epilog="BIAS", inputs={"bias": _info((2, 1, 13))})
    assert t.bias_batch_stride == 13
    gelu_aux = OperandInfo((6, 13), (16, 1), "float32")
    t = _traits(_info((6, 5)), _info((5, 13)), epilog="DGELU_BGRAD", inputs={"gelu_aux": gelu_aux})
    assert (t.aux_ld, t.bgrad_shape) == (16, (13,))
    with pytest.raises(UnsupportedLayoutError):
        _traits(_info((6, 5)), _info((5, 13)), epilog="DGELU", inputs={"gelu_aux": _info((6, 13))})  # ld 13
    t = _traits(_info((6, 5)), _info((5, 13)), epilog="DRELU", inputs={"relu_aux": _info((6, 16), "uint8")})
    assert t.aux_ld == 128


def test_folded_bias_becomes_c():
    t = _traits(_info((6, 5)), _info((5, 7)), epilog="RELU_BIAS", inputs={"bias": _info((6, 7))})
    assert t.lt_c is not None and t.lt_c.ld == 7


def test_bgrad_layout_rules():
    t = _traits(_transposed((6, 10)), _info((10, 3)), epilog="BGRADA")
    assert t.lt_b.op == OP_T and t.bgrad_shape == (6,)
    with pytest.raises(UnsupportedLayoutError) as info:
        _traits(_info((6, 10)), _info((10, 3)), epilog="BGRADA")
    assert info.value.argument == "a"
    assert _traits(_transposed((6, 10)), _info((10, 3)), epilog="BGRADB").bgrad_shape == (3,)
    with pytest.raises(OperandError, match="K > 1"):
        _traits(_info((6, 1)), _info((1, 8)), epilog="DRELU", inputs={"relu_aux": _info((6, 16), "uint8")})
