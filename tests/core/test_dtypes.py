import numpy as np
import pytest

from nvmathx._core.dtypes import dtype_name, numpy_dtype
from nvmathx._core.errors import UnsupportedOperandError


@pytest.mark.parametrize(
    "given, expected",
    [
        ("float32", "float32"),
        (np.float64, "float64"),
        (np.dtype(np.complex64), "complex64"),
        ("bfloat16", "bfloat16"),
        ("bf16", "bfloat16"),
        ("float8_e4m3", "float8_e4m3fn"),
        ("e5m2", "float8_e5m2"),
        ("float16", "float16"),
    ],
)
def test_names_and_dtypes_map_both_ways(given, expected):
    dtype = numpy_dtype(given)
    assert dtype_name(dtype) == expected
    assert numpy_dtype(dtype_name(dtype)) == dtype


def test_torch_dtype_objects_map_by_name():
    torch = pytest.importorskip("torch")
    assert numpy_dtype(torch.bfloat16) == numpy_dtype("bfloat16")
    assert numpy_dtype(torch.complex128) == np.complex128


def test_unknown_dtype_is_typed_error():
    with pytest.raises(UnsupportedOperandError, match="^dtype:"):
        numpy_dtype("float7")
