"""Finding an array's adapter (once per type) and viewing arrays through it."""

from __future__ import annotations

import numbers

import numpy as np

from ..device_array import DeviceArray
from ..errors import OperandError, UnsupportedOperandError
from ._adapter import Adapter
from ._cupy import CupyAdapter
from ._numpy import NumpyAdapter
from ._nvmathx import NvmathxAdapter
from ._operand import Operand
from ._torch import TorchAdapter

__all__ = ["adapter_for", "adapter_named", "as_array", "key_function", "operand_keys",
           "resolve_operand", "wrap_operand"]

ADAPTER_CLASSES = {"numpy": NumpyAdapter, "torch": TorchAdapter, "cupy": CupyAdapter, "nvmathx": NvmathxAdapter}
_adapters: dict[str, Adapter] = {}
adapter_by_type: dict[type, Adapter] = {}

operand_keys: dict = {}
"""``type(x) -> key`` for the hot paths: ``(operand_keys.get(type(x)) or key_function(x, name))(x)``
is ``(signature, pointer, device_id)`` of ``x`` (see :meth:`Adapter.key`)."""


def adapter_named(package: str) -> Adapter:
    """The adapter of an array library by name (made once; unknown names get the DLPack adapter)."""
    adapter = _adapters.get(package)
    if adapter is None:
        cls = ADAPTER_CLASSES.get(package)
        if cls is None:
            adapter = Adapter()
            adapter.name = package
        else:
            adapter = cls()
        _adapters[package] = adapter
    return adapter


def adapter_for(obj, argument: str = "operand") -> Adapter:
    """The adapter of ``obj``'s array library (cached on ``type(obj)``).

    Raises
    ------
    UnsupportedOperandError
        When ``obj`` is no array nvmathx can view (the message starts with ``argument``).
    """
    cls = type(obj)
    adapter = adapter_by_type.get(cls)
    if adapter is not None:
        return adapter
    if cls is DeviceArray:
        package = "nvmathx"
    else:
        package = cls.__module__.partition(".")[0]
        if package not in ADAPTER_CLASSES and not any(
            hasattr(cls, protocol) for protocol in ("__dlpack__", "__cuda_array_interface__", "__array_interface__")
        ):
            raise UnsupportedOperandError(
                argument,
                f"expected an array with DLPack, the CUDA Array Interface or the array interface "
                f"(numpy, cupy, torch, jax, ...) (got {cls.__module__}.{cls.__name__})",
            )
    if package == "numpy" and not issubclass(cls, np.ndarray):
        raise UnsupportedOperandError(argument, f"expected an array (got numpy scalar {cls.__name__})")
    adapter = adapter_by_type[cls] = adapter_named(package)
    return adapter


def key_function(obj, argument: str = "operand"):
    """The :meth:`Adapter.key` of ``obj``'s library, remembered in :data:`operand_keys`."""
    function = operand_keys[type(obj)] = adapter_for(obj, argument).key
    return function


def as_array(obj, argument: str):
    """Lists, tuples and Python or numpy scalars as numpy arrays (as numpy and scipy take them);
    anything else as it is.

    Raises
    ------
    OperandError
        For what numpy cannot convert (ragged nesting), the message starting with ``argument``.
    """
    if isinstance(obj, (list, tuple, numbers.Number)) or isinstance(obj, np.generic):
        try:
            return np.asarray(obj)
        except (ValueError, TypeError) as error:
            raise OperandError(argument, f"could not be converted to an array with numpy.asarray ({error})") from None
    return obj


def wrap_operand(obj, argument: str, *, array_like: bool = False, keep_conj: bool = False) -> Operand:
    """View ``obj`` as an :class:`Operand`.

    Parameters
    ----------
    obj : array
        numpy, cupy, torch (CPU or CUDA), jax or any DLPack / CUDA Array Interface / array
        interface producer.
    argument : str
        The argument's name, used in error messages.
    array_like : bool
        Also accept lists, tuples and Python or numpy scalars (converted with ``numpy.asarray``), as
        numpy and scipy functions do.
    keep_conj : bool
        A lazily conjugated device array (torch's ``x.conj()``, ``x.mH``) is viewed as its memory,
        with ``Operand.conj`` set, for a caller that conjugates as it reads. Otherwise, and for
        every other lazy view, ``Operand.obj`` is the materialised array (a copy).

    Raises
    ------
    UnsupportedOperandError
        When ``obj`` is not an array nvmathx can view, or its dtype is not supported.
    OperandError
        When an array-like cannot be converted (ragged nesting).
    """
    if array_like:
        obj = as_array(obj, argument)
    return adapter_for(obj, argument).view(obj, argument, keep_conj=keep_conj)


def resolve_operand(operand: Operand, argument: str) -> Operand:
    """``operand`` with its lazy conjugate view materialised (a copy in the operand's library)."""
    adapter = operand.adapter
    return adapter.view(adapter.resolve(operand.obj), argument)

