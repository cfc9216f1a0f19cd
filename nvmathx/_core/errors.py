"""The nvmathx exception hierarchy, as ``_core`` and the areas import it (defined in
:mod:`nvmathx._errors`, which the C bindings import without importing ``_core``)."""

from __future__ import annotations

from .._errors import (
    CommunicationError,
    CudaLibraryError,
    DeviceUnavailableError,
    InvalidStateError,
    LibraryNotFoundError,
    NvmathxError,
    OperandError,
    OptionsError,
    SingularMatrixError,
    UnsupportedLayoutError,
    UnsupportedOperandError,
)

__all__ = [
    "NvmathxError",
    "LibraryNotFoundError",
    "CudaLibraryError",
    "OperandError",
    "UnsupportedOperandError",
    "UnsupportedLayoutError",
    "OptionsError",
    "InvalidStateError",
    "DeviceUnavailableError",
    "SingularMatrixError",
    "CommunicationError",
]
