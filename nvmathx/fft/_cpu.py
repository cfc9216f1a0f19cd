"""CPU execution: host operands run through scipy.fft (with its ``workers`` threads).

The dtype rules are the GPU path's (:func:`~nvmathx.fft._gpu.check_dtype`): float16 and bfloat16
compute in single precision, bool and integers in double precision, and anything else (objects,
strings, long double) is refused before scipy sees it.
"""

from __future__ import annotations

import os

import numpy as np

from .._core.errors import OptionsError
from .._core.options import as_index
from .._core.tensor import Operand, host_array, is_read_only, may_overlap, wrap_operand
from ._gpu import check_dtype, plan_key
from ._sizes import check_result_fits, host_memory_bytes, result_bytes

__all__ = ["check_workers", "compute_array", "cpu_plan_key", "run_on_cpu"]

_SINGLE_PRECISION = ("float16", "bfloat16")  # no half-precision transforms: computed in float32


def check_workers(workers, on_device: bool = False):
    """``workers`` as scipy.fft takes it: None, a positive int, or -1 down to ``-os.cpu_count()``
    (counting back from the number of CPUs); numpy integers and 0-d integer arrays count as ints,
    bools do not. GPU arrays take only None, as scipy.fft requires for arrays that are not numpy's.

    Raises
    ------
    OptionsError
        Naming ``workers``, for any other value.
    """
    if workers is None:
        return None
    if on_device:
        raise OptionsError("workers", f"is for host arrays; GPU arrays take workers=None (got {workers!r})")
    number = as_index(workers)
    if number is None:
        raise OptionsError("workers", f"expected an int or None (got {type(workers).__name__})")
    count = os.cpu_count() or 1
    if number == 0 or number < -count:
        raise OptionsError(
            "workers", f"expected an int >= 1, or -1 down to -{count} (this machine's CPUs) (got {number})"
        )
    return number


def cpu_plan_key(fft_type, shape, dtype, axes, lengths) -> tuple:
    """The key of a transform on the CPU, laid out as :func:`~nvmathx.fft.plan_key`'s with device -1:
    scipy.fft takes any strides and array library, so neither is part of it."""
    return plan_key(fft_type, shape, (), dtype, axes, lengths, -1)


def compute_array(operand: Operand, *, writeable: bool = False) -> np.ndarray:
    """A host operand as the numpy array scipy.fft computes on: float16 and bfloat16 converted to
    float32 (complex64 results, as on the GPU), every other supported dtype as it is."""
    host = host_array(operand, writeable=writeable)
    return host.astype(np.float32) if host.dtype.name in _SINGLE_PRECISION else host


def run_on_cpu(name: str, fft_type: str, x, s, axes, norm, overwrite_x, *, workers=None):
    """``scipy.fft.<name>(x, s, axes, norm, overwrite_x, workers=workers)`` for a host array of any
    library, after the dtype, size and ``workers`` checks; the result comes back as ``x``'s kind of
    array. ``s`` and ``axes`` are resolved: an int each for the 1-D forms (``n``, ``axis``), tuples
    for the others.

    ``overwrite_x`` lets scipy compute in ``x``'s memory (a torch tensor's too) where that memory
    may be written: not read-only, no two elements sharing memory. Elsewhere it is ignored, as the
    GPU ignores it, since it permits and never requires writing. scipy's own backend is called
    directly, so a call that came through the scipy.fft backend protocol is dispatched once, never
    back to nvmathx.
    """
    import scipy.fft

    workers = check_workers(workers)
    operand = wrap_operand(x, "x")
    check_dtype(fft_type, operand.dtype)
    one_axis = not isinstance(axes, tuple)
    argument = "n" if one_axis else "s"
    nbytes = result_bytes(fft_type, operand.shape, operand.dtype, (axes,) if one_axis else axes,
                          (s,) if one_axis else s)
    memory = host_memory_bytes()
    check_result_fits(nbytes, memory, argument)
    overwrite = bool(overwrite_x) and not is_read_only(operand) and not may_overlap(operand.shape, operand.strides)
    function = getattr(scipy.fft, name)
    host = compute_array(operand, writeable=overwrite)
    try:
        with scipy.fft.set_backend("scipy", only=True):
            result = function(host, s, axes, norm, overwrite, workers=workers)
    except MemoryError:
        raise OptionsError(argument, f"asks for more memory than is free: the result alone needs {nbytes} bytes"
                                     + (f" (this machine has {memory})" if memory is not None else "")) from None
    in_memory_of_x = host is not operand.obj and host.dtype == operand.dtype  # (not a float32 copy of float16)
    if in_memory_of_x and np.may_share_memory(result, host):
        # computed in another library's memory: a numpy view of it would not keep that memory alive
        if _same_view(result, host):
            return operand.obj  # the operand holds the result, as a numpy operand would
        result = result.copy()
    return operand.adapter.from_host(result)


def _same_view(a: np.ndarray, b: np.ndarray) -> bool:
    return (a.__array_interface__["data"][0] == b.__array_interface__["data"][0] and a.shape == b.shape
            and a.strides == b.strides and a.dtype == b.dtype)
