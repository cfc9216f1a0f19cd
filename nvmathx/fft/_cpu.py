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
from .._core.tensor import Operand, host_array, wrap_operand
from ._gpu import check_dtype, plan_key

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


def run_on_cpu(name: str, fft_type: str, x, *args, workers=None):
    """``scipy.fft.<name>(x, *args, workers=workers)`` for a host array of any library, after the
    dtype and ``workers`` checks; the result comes back as ``x``'s kind of array.

    scipy's own backend is called directly, so a call that came through the scipy.fft backend
    protocol is dispatched once, never back to nvmathx.
    """
    import scipy.fft

    workers = check_workers(workers)
    operand = wrap_operand(x, "x")
    check_dtype(fft_type, operand.dtype)
    function = getattr(scipy.fft, name)
    with scipy.fft.set_backend("scipy", only=True):
        return operand.adapter.from_host(function(compute_array(operand), *args, workers=workers))
