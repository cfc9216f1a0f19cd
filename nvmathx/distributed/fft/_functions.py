"""The function forms: ``fft``, ``ifft``, ``rfft``, ``irfft`` of a distributed array, with a plan
cache kept by the distributed context (freed at ``finalize()``)."""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Sequence

from ..._core.errors import OptionsError
from ..._core.options import check_or_create_options
from ..._core.tensor import wrap_operand
from ..._fftcore.normalize import Norm, check_norm
from ...typing import AnyArray, ArrayLike, OptionsLike, StreamLike
from .._agree import check_same
from .._context import current
from .._distributions import Slab
from ._fft import CachedFFT, Distribution, check_space
from ._options import FFTOptions
from ._problem import describe, resolve

__all__ = ["fft", "ifft", "rfft", "irfft", "PLAN_CACHE_SIZE"]

PLAN_CACHE_SIZE = 16  # plans kept per process by the function forms (least recently used dropped)


def _transform(name, fft_type, sign, x, distribution, axes, norm, reshape, options, stream, s=None):
    context = current(name)
    prepared = {}

    def local():  # every check, so that a rank that fails still takes part in the agreement
        checked = check_or_create_options(FFTOptions, options, "options")
        if checked.fft_type not in (None, fft_type):
            raise OptionsError("options.fft_type", f"{name} is a {fft_type} transform (got {checked.fft_type!r})")
        if reshape not in (True, False):
            raise OptionsError("reshape", f"expected True or False (got {reshape!r})")
        checked = dataclasses.replace(checked, fft_type=fft_type, reshape=bool(reshape))
        checked_norm = check_norm(norm)
        operand = wrap_operand(x, "x")
        check_space(operand, context, checked, stream)
        prepared["operand"], prepared["options"] = operand, checked
        return describe(operand, distribution, axes, fft_type, checked, lengths=s), checked_norm

    outcomes = context.agree(local)
    check_same([norm for _, norm in outcomes], "norm", "normalisation", error=OptionsError)
    descriptions = [description for description, _ in outcomes]
    operand, checked, agreed_norm = prepared["operand"], prepared["options"], outcomes[0][1]
    if context.world_size == 1 and not checked.force_distributed:
        problem = resolve(descriptions, 0, last_axis_parity=checked.last_axis_parity)  # the same checks
        return _single_process(name, operand, problem, agreed_norm, stream)
    cache = context.caches.setdefault("fft", OrderedDict())
    key = (name, tuple(descriptions))
    plan = cache.get(key)
    if plan is None:
        plan = CachedFFT(context, operand, descriptions, checked, stream)
        cache[key] = plan
        if len(cache) > PLAN_CACHE_SIZE:  # every rank makes the same calls, so evicts the same plan
            cache.popitem(last=False)[1].free()
    else:
        cache.move_to_end(key)
    return plan.run(operand, sign, agreed_norm, stream)


def _single_process(name, operand, problem, norm, stream):
    """World size 1: the single-process transform of the whole array (no copies)."""
    import nvmathx.fft as single

    if stream is not None:
        raise OptionsError("stream", "the single-process path runs on the operand library's current stream")
    function = getattr(single, name + "n")
    if name == "irfft":
        return function(operand.obj, s=problem.lengths, axes=problem.axes, norm=norm)
    return function(operand.obj, axes=problem.axes, norm=norm)


def fft(x: ArrayLike, distribution: Distribution = Slab.X, *, axes: Sequence[int] | None = None,
        norm: Norm = None, reshape: bool = True, options: OptionsLike = None, stream: StreamLike = None) -> AnyArray:
    """The forward C2C transform of a distributed complex array (collective).

    Parameters
    ----------
    x : array
        This rank's local piece (C order): numpy (CPU) or a GPU array on the context's device.
    distribution : Slab.X, Slab.Y or (Box, Box)
        How the global array is split (see :class:`FFT`).
    axes : sequence of int, optional
        The last 2 or 3 axes of a batched array (default: every axis of a 2-D or 3-D array).
    norm : {"backward", "ortho", "forward"}, optional
        scipy.fft's normalisation (default "backward": the forward transform is unscaled), the
        same on every rank (None and "backward" count as the same).
    reshape : bool
        True: the result comes back in the input's slab; False: in the distribution the algorithm
        ends in (the other slab for C2C), one all-to-all fewer. Boxes always end in the output box.
    options : FFTOptions or dict, optional
    stream : optional
        GPU only.

    Returns
    -------
    array
        This rank's piece of the result, the operand's kind of array.

    Raises
    ------
    OperandError, OptionsError, UnsupportedOperandError
        On every rank, naming the argument, when any rank's arguments are invalid or the ranks'
        arguments do not agree.
    """
    return _transform("fft", "C2C", -1, x, distribution, axes, norm, reshape, options, stream)


def ifft(x: ArrayLike, distribution: Distribution = Slab.X, *, axes: Sequence[int] | None = None,
         norm: Norm = None, reshape: bool = True, options: OptionsLike = None, stream: StreamLike = None) -> AnyArray:
    """The inverse C2C transform of a distributed complex array (collective); arguments as
    :func:`fft` (``norm="backward"`` scales by 1/N)."""
    return _transform("ifft", "C2C", +1, x, distribution, axes, norm, reshape, options, stream)


def rfft(x: ArrayLike, distribution: Distribution = Slab.X, *, axes: Sequence[int] | None = None,
         norm: Norm = None, reshape: bool = True, options: OptionsLike = None, stream: StreamLike = None) -> AnyArray:
    """The R2C transform of a distributed real array (collective): the last transformed axis of the
    result holds ``n // 2 + 1`` points; arguments as :func:`fft`."""
    return _transform("rfft", "R2C", -1, x, distribution, axes, norm, reshape, options, stream)


def irfft(x: ArrayLike, distribution: Distribution = Slab.X, *, s: Sequence[int] | None = None,
          axes: Sequence[int] | None = None,
          norm: Norm = None, reshape: bool = True, options: OptionsLike = None, stream: StreamLike = None) -> AnyArray:
    """The C2R transform of a distributed complex array (collective); arguments as :func:`fft`.

    Parameters
    ----------
    s : sequence of int, optional
        The real result's lengths along the transformed axes; only the last may differ from the
        operand's extents (default ``2 * (m - 1)`` for the last axis's ``m`` points).
    """
    return _transform("irfft", "C2R", +1, x, distribution, axes, norm, reshape, options, stream, s=s)
