"""Types for annotating code that calls nvmathx.

Operands are typed as what nvmathx takes (:data:`ArrayLike`): arrays that export themselves through
DLPack, the CUDA Array Interface or the array interface, and what ``numpy.asarray`` turns into a host
array (:data:`HostArrayLike`). The function forms' results follow the "same kind out" rule in their
overloads: numpy arrays and host array-likes give ``numpy.ndarray``, any other array type
(:data:`ArrayT`) gives that type, and a :func:`nvmathx.linalg.matmul` epilog with auxiliary outputs,
named literally (``epilog="RELU_AUX"`` or ``MatmulEpilog.RELU_AUX``), gives ``(array, dict)``; an
epilog known only at run time gives either. The stateful objects' ``execute()`` results are
:data:`AnyArray`: the operands given at construction decide their type.

A function that forwards its operands to nvmathx keeps their type with :data:`ArrayT`:

>>> from nvmathx.typing import ArrayT
>>> import nvmathx.fft
>>> def spectrum(x: ArrayT) -> ArrayT:
...     return nvmathx.fft.fft(x)

Operands of the ``ArrayLike`` union itself are more than a type checker splits over the overloads of
a function of two operands; an operand of type ``Any`` (a library without types) gives ``Any``. Mixing
a numpy array with a list in one call runs, but no overload takes it: convert the list with
``numpy.asarray``.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeVar, Union, runtime_checkable

import numpy

__all__ = ["CudaStreamProtocol", "StreamLike", "SupportsDLPack", "SupportsCudaArrayInterface", "SupportsArrayInterface",
           "HostArrayLike", "ArrayLike", "ArrayT", "NumpyArrayT", "SparseArrayLike", "AnyArray", "ExecutionLike",
           "OptionsLike"]


@runtime_checkable
class CudaStreamProtocol(Protocol):
    """An object that exposes a CUDA stream (torch, cupy and cuda.core streams)."""

    def __cuda_stream__(self) -> tuple[int, int]:
        """The stream as ``(version, handle)``: version 0, the ``CUstream`` handle as an int."""
        ...


StreamLike = Union[CudaStreamProtocol, int, None]
"""What a ``stream=`` argument takes, an object with ``__cuda_stream__``, a raw handle, or None."""


class SupportsDLPack(Protocol):
    """An array that exports itself through DLPack (torch, cupy, jax, numpy, ...)."""

    def __dlpack__(self, *, stream: Any = None) -> Any:
        """A DLPack capsule of the array, ordered on ``stream``."""
        ...


class SupportsCudaArrayInterface(Protocol):
    """An array that describes its device memory through the CUDA Array Interface (cupy, numba, ...)."""

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        """The interface's dict: shape, typestr, data pointer, strides, stream."""
        ...


class SupportsArrayInterface(Protocol):
    """An array that describes its host memory through numpy's array interface."""

    @property
    def __array_interface__(self) -> dict[str, Any]:
        """The interface's dict: shape, typestr, data pointer, strides."""
        ...


HostArrayLike = Union[list, tuple, complex, numpy.generic]
"""What nvmathx converts with ``numpy.asarray``, as numpy and scipy functions do: (nested) lists and
tuples of numbers, Python and numpy scalars. The result is a ``numpy.ndarray``."""

ArrayLike = Union[SupportsDLPack, SupportsCudaArrayInterface, SupportsArrayInterface, numpy.ndarray, HostArrayLike]
"""An operand: any array with DLPack, the CUDA Array Interface or the array interface (numpy, cupy,
torch, jax, ...), or a :data:`HostArrayLike`."""

ArrayT = TypeVar("ArrayT", bound=Union[SupportsDLPack, SupportsCudaArrayInterface, SupportsArrayInterface])
"""An array type that a function form gives back as it was given (a ``torch.Tensor`` in, a
``torch.Tensor`` out). Type the operands of a function that forwards them to nvmathx with it."""

NumpyArrayT = TypeVar("NumpyArrayT", bound=numpy.ndarray)
"""A numpy array type, in the function forms' overloads whose result is ``numpy.ndarray`` (its dtype
may differ from the operand's: ``rfft`` of float64 is complex128)."""

SparseArrayLike = Any
"""A sparse operand: a scipy.sparse array or matrix, a cupyx.scipy.sparse matrix or a torch sparse
tensor (CSR, CSC or COO). These libraries share no protocol, so it is typed ``Any``; the sparse
function forms type their result by the dense operand ``b``, whose library is the sparse one's."""

AnyArray = Any
"""A result whose array type the signature cannot name: that of a stateful object's ``execute()``,
of the operands given at construction. Typed ``Any``, so that it is usable as the array it is."""

ExecutionLike = Union[str, dict, Any, None]
"""``"cuda"``, ``"cpu"``, a dict, an ExecutionCUDA/ExecutionCPU, or None."""

OptionsLike = Union[dict, Any, None]
"""An options dataclass, a dict of its fields, or None."""
