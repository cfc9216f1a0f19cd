"""Types for annotating code that calls nvmathx."""

from __future__ import annotations

from typing import Any, Protocol, Union, runtime_checkable

__all__ = ["CudaStreamProtocol", "StreamLike", "ArrayLike", "ExecutionLike", "OptionsLike"]


@runtime_checkable
class CudaStreamProtocol(Protocol):
    """An object that exposes a CUDA stream (torch, cupy and cuda.core streams)."""

    def __cuda_stream__(self) -> tuple[int, int]:
        """The stream as ``(version, handle)``: version 0, the ``CUstream`` handle as an int."""
        ...


StreamLike = Union[CudaStreamProtocol, int, None]
"""What a ``stream=`` argument takes, an object with ``__cuda_stream__``, a raw handle, or None."""

ArrayLike = Any
"""Any array with DLPack, the CUDA Array Interface or the array interface."""

ExecutionLike = Union[str, dict, Any, None]
"""``"cuda"``, ``"cpu"``, a dict, an ExecutionCUDA/ExecutionCPU, or None."""

OptionsLike = Union[dict, Any, None]
"""An options dataclass, a dict of its fields, or None."""
