"""Dtype names and conversions shared by every API.

nvmathx names dtypes with numpy names; bfloat16 and the float8 formats come from ml_dtypes (loaded
only when such a dtype is asked for).
"""

from __future__ import annotations

import numpy as np

from .errors import OptionsError, UnsupportedOperandError

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


def dtype_among(argument: str, value, choices, what: str = "expected") -> str:
    """The name of dtype ``value`` if it is one of ``choices`` (names), else ``OptionsError`` naming
    ``argument``; ``what`` begins the message (e.g. ``"normal values are"``)."""
    try:
        name = numpy_dtype(value).name
    except (TypeError, UnsupportedOperandError):
        raise OptionsError(argument, f"expected a numpy dtype (got {value!r})") from None
    if name not in choices:
        raise OptionsError(argument, f"{what} {' or '.join(choices)} (got {name})")
    return name
