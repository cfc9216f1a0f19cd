"""Dtype names and conversions shared by every API.

nvmathx names dtypes with numpy names; bfloat16 and the float8 formats come from ml_dtypes (loaded
only when such a dtype is asked for).
"""

from __future__ import annotations

import numpy as np

from .errors import UnsupportedOperandError

__all__ = ["dtype_name", "numpy_dtype"]

_ML_DTYPES_NAMES = {"bfloat16", "float8_e4m3fn", "float8_e5m2"}
_ALIASES = {"float8_e4m3": "float8_e4m3fn", "e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2", "bf16": "bfloat16"}


def numpy_dtype(name_or_dtype) -> np.dtype:
    """The numpy dtype for a name (``"bfloat16"``), a numpy dtype, or a torch/cupy dtype object."""
    if isinstance(name_or_dtype, np.dtype):
        return name_or_dtype
    if isinstance(name_or_dtype, type):  # numpy scalar types and ml_dtypes types
        try:
            return np.dtype(name_or_dtype)
        except TypeError:
            pass
    # strings, and other libraries' dtype objects such as torch.bfloat16 (named by their last part)
    name = name_or_dtype if isinstance(name_or_dtype, str) else str(name_or_dtype).rpartition(".")[2]
    name = _ALIASES.get(name, name)
    if name in _ML_DTYPES_NAMES:
        try:
            import ml_dtypes
        except ImportError:
            raise UnsupportedOperandError(
                "dtype", f"{name} needs the ml_dtypes package (pip install ml_dtypes)"
            ) from None
        return np.dtype(getattr(ml_dtypes, name))
    try:
        return np.dtype(name)
    except TypeError:
        raise UnsupportedOperandError("dtype", f"unknown dtype {name_or_dtype!r}") from None


def dtype_name(dtype) -> str:
    """The canonical name of a dtype (``"float32"``, ``"bfloat16"``, ``"float8_e4m3fn"``)."""
    return numpy_dtype(dtype).name
