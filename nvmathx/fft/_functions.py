"""The scipy.fft functions: one routine, :func:`transform`, that every public function of the
transform table (``_transforms``) calls with its :class:`Kind`.

Host operands run on the CPU through scipy.fft. Device operands run on cuFFT through a plan taken
from :data:`plan_cache` (per device and thread), keyed by :func:`plan_key`.
"""

from __future__ import annotations

from typing import NamedTuple

from .._core.errors import OperandError, OptionsError
from .._core.execution import ExecutionCPU, normalize_execution
from .._core.logs import get_logger
from .._core.plan_cache import PlanCache
from .._core.streams import resolve_stream
from .._core.tensor import as_array, copy_to_host, key_function, operand_keys, stage_to_device, wrap_operand
from .._fftcore.callbacks import attachment, attachments_key
from .._fftcore.layout import C2C, C2R, R2C
from .._fftcore.normalize import check_norm, scale_factor, swap_direction
from ._arguments import one_axis, shape_and_axes
from ._cpu import check_workers, cpu_plan_key, run_on_cpu
from ._fft import FFT, transform_for_key
from ._gpu import KEY_DEVICE, KEY_FIELDS, GpuTransform, check_dtype, plan_key, real_input_aligned
from ._sizes import check_fits_device

__all__ = ["plan_cache", "plan_key", "Kind", "transform"]

plan_cache = PlanCache("nvmathx.fft", max_size=64, max_memory_bytes=None)
"""The per-device LRU cache of cuFFT plans used by the functions (``info()``, ``clear()``,
``set_limits(max_size=, max_memory_bytes=)``)."""

_RESOLVED_LIMIT = 4096
_resolved: dict = {}  # (ndim-shape, s, axes, form, c2r) -> (lengths, axes): argument parsing is pure
_calls: dict = {}  # the whole pure part of a device call (see _prepare), keyed by the call's arguments


def _types(s, axes) -> tuple:
    """The types in ``s`` and ``axes`` (scalars or tuples), for the memo keys: 1.0, True or numpy's
    bool equal 1, and without their types they would find the entry made for 1 and be taken."""
    return (type(s) if type(s) is not tuple else tuple(map(type, s)),
            type(axes) if type(axes) is not tuple else tuple(map(type, axes)))


def _resolve(shape, s, axes, form, fft_type):
    """(lengths, axes) from scipy's ``n``/``s`` and ``axis``/``axes`` for a 1-D, 2-D or n-D form."""
    try:
        key = (shape, s, axes, form, fft_type, _types(s, axes))
        cached = _resolved.get(key)
    except TypeError:  # lists as s/axes: not hashable, resolve without the memo
        key = cached = None
    if cached is not None:
        return cached
    if form == 1:
        lengths, axes_ = one_axis(shape, s, axes)
    else:
        lengths, axes_ = shape_and_axes(shape, s, axes, allow_empty=True)
        if not axes_ and fft_type != C2C:
            if not shape:
                raise OptionsError("x", "a real-to-complex or complex-to-real transform needs an axis (got 0-d x)")
            raise OptionsError("axes", "a real-to-complex or complex-to-real transform needs at least one axis "
                                       "(got none; only the complex fftn/ifftn/fft2/ifft2 return x for no axis)")
    if not axes_:
        return lengths, axes_  # nothing to transform: the input is the result, as in scipy.fft
    if fft_type == C2R and s is None:
        # A C2R transform without a length reads m complex values and makes 2 * (m - 1) points (an
        # explicit -1 in s keeps the extent m, as scipy.fft does).
        lengths = lengths[:-1] + (2 * (shape[axes_[-1]] - 1),)
        if lengths[-1] < 1:
            raise OptionsError("n" if form == 1 else "s", f"invalid number of data points ({lengths[-1]}) specified")
    if any(length < 1 for length in lengths):
        raise OptionsError("x", f"invalid number of data points ({min(lengths)}) along a transformed axis")
    if key is not None and len(_resolved) < _RESOLVED_LIMIT:
        _resolved[key] = (lengths, axes_)
    return lengths, axes_


class _Prepared(NamedTuple):
    """The pure part of a device call, worked out once per distinct call (see :func:`_prepare`)."""

    key: tuple  # plan_key()
    axes: tuple
    lengths: tuple
    overwrite: bool
    factor: float
    aligned: bool  # R2C: cuFFT may read the operand where it is
    copies: bool  # a lazy view (torch's conjugate or negative bit), materialised for cuFFT on every call
    fuse: bool  # the scale applied in cuFFT's store, where the layout allows
    cache_key: tuple  # the plan cache's key of a call without callbacks (key, and how it scales)
    direct: bool  # some axis to transform and no lazy view: a call without callbacks or plan runs as it is


def _prepare(operand, *, fft_type, form, direction, s, axes, norm, overwrite_x, conj, copies) -> _Prepared:
    """The plan key, axes, lengths, overwrite flag and scale factor of a device call on ``operand``:
    a pure function of the arguments, memoised by the caller. ``fuse``: "ortho" and "forward" scale
    in cuFFT's store where the layout allows (the default "backward" inverse keeps its elementwise
    pass, so that the most common call never waits for cuFFT to link a callback)."""
    checked_norm = check_norm(norm)
    lengths, resolved_axes = _resolve(operand.shape, s, axes, form, fft_type)
    if resolved_axes:
        check_fits_device(fft_type, operand.shape, operand.dtype, resolved_axes, lengths, operand.device_id,
                          "n" if form == 1 else "s")
    if conj:  # hfft / ihfft scale the opposite direction, as scipy does
        checked_norm = swap_direction(checked_norm)
    overwrite = bool(overwrite_x) and fft_type == C2R and not conj
    aligned = real_input_aligned(fft_type, operand.ptr, operand.dtype.itemsize)
    key = plan_key(fft_type, operand.shape, operand.strides, operand.dtype, resolved_axes, lengths, operand.device_id,
                   operand.package, overwrite, aligned)
    factor = scale_factor(checked_norm, direction, lengths)
    fuse = checked_norm != "backward" and not conj
    # what the engine choice weighs: scaled and conjugated calls plan apart from plain ones
    cache_key = key + ("scaled",) if fuse else key + ("conjugated",) if conj else key
    return _Prepared(key, resolved_axes, lengths, overwrite, factor, aligned, copies, fuse, cache_key,
                     bool(resolved_axes) and not copies)


class Kind(NamedTuple):
    """What a public function computes; its other arguments are scipy.fft's."""

    name: str  # the scipy.fft function the CPU space calls
    fft_type: str  # C2C, R2C or C2R
    form: int  # 1 (``n``/``axis``), 2 or 3 (``s``/``axes``, 2-D or n-D)
    direction: int  # -1 forward, +1 inverse
    conj: bool = False  # the Hermitian variants (hfft*, ihfft*)


def transform(kind: Kind, x, s, axes, norm, overwrite_x, workers, plan, prolog, epilog, execution, stream):
    """Every public function: ``kind`` says which, the rest are its arguments in scipy's order, then
    the keyword-only ones (``prolog``/``epilog`` None for the Hermitian transforms, which take none)."""
    if execution is not None:
        return _in_space(kind, x, s, axes, norm, overwrite_x, workers, plan, prolog, epilog, execution, stream)
    name, fft_type, form, direction, conj = kind
    key_of = operand_keys.get(type(x))
    if key_of is None:  # an array-like (scipy takes lists and scalars), or an array type not seen yet
        x = as_array(x, "x")
        key_of = key_function(x, "x")
    signature, pointer, device_id = key_of(x)
    if device_id < 0:
        if prolog is not None or epilog is not None:
            raise OptionsError("prolog" if prolog is not None else "epilog", "callbacks run on cuFFT: pass a GPU array")
        if stream is not None:
            raise OptionsError("stream", "CPU execution takes no stream")
        return _on_cpu(kind, x, s, axes, norm, overwrite_x, workers, plan)
    if workers is not None:  # scipy.fft's rule for arrays that are not numpy's
        check_workers(workers, on_device=True)
    try:
        # The signature holds the library: the cached plan allocates results in the operand's library.
        # cuFFT reads a real operand only from an address aligned to the complex element: the low bits count.
        low_bits = pointer & 15 if fft_type == R2C else 0
        types = ((type(s), type(axes)) if type(s) is not tuple and type(axes) is not tuple  # (_types, inline)
                 else _types(s, axes))
        call: tuple | None = (kind, signature, s, axes, norm, overwrite_x, low_bits, types)
        prepared = _calls.get(call)
    except TypeError:  # lists as s/axes: not hashable
        call = prepared = None
    looked_up = False  # (a miss counts once in plan_cache.info())
    if prepared is not None and prepared.direct and prolog is None and epilog is None and plan is None:
        # a repeated plain call: its cached plan runs (the loop of a script calling fft() on one shape)
        transform = plan_cache.get(device_id, prepared.cache_key)
        if transform is not None:
            return transform.execute(pointer, x, transform.streams(stream), direction, prepared.factor, conj,
                                     prepared.fuse)
        looked_up = True
    if prepared is None:
        operand = wrap_operand(x, "x")
        prepared = _prepare(operand, fft_type=fft_type, form=form, direction=direction, s=s, axes=axes, norm=norm,
                            overwrite_x=overwrite_x, conj=conj, copies=operand.obj is not x)
        if call is not None and len(_calls) < _RESOLVED_LIMIT:
            _calls[call] = prepared
    key, resolved_axes, lengths, overwrite, factor, aligned, copies, fuse, cache_key, _ = prepared
    if not resolved_axes:
        return _untransformed(kind, x, key, plan, prolog, epilog)
    if copies:
        x = wrap_operand(x, "x").obj
        pointer = key_of(x)[1]
    attached = {}
    if prolog is not None or epilog is not None:  # callbacks: a plan of their own, keyed by them
        attached = {"prolog": attachment(prolog, "prolog", device_id),
                    "epilog": attachment(epilog, "epilog", device_id)}
        key = key + (attachments_key(attached["prolog"], attached["epilog"]),)
    if plan is not None:
        transform = _check_plan(plan, key, name)
    else:
        if not attached:
            key = cache_key
        elif fuse or conj:  # (as cache_key is made)
            key = key + (("scaled" if fuse else "conjugated"),)
        transform = None if looked_up else plan_cache.get(device_id, key)
        if transform is None:
            transform = GpuTransform(
                wrap_operand(x, "x"),
                fft_type,
                resolved_axes,
                lengths,
                overwrite=overwrite,
                input_aligned=aligned,
                scaled=fuse,
                conjugated=conj,
                **attached,
            )
            plan_cache.put(device_id, key, transform)
            # the engine is chosen when the plan is made (a cache miss): report it as FFT.plan() does
            get_logger().info("%s planned: %s over axes %s, lengths %s, engine %s (%s)", name, fft_type,
                              resolved_axes, lengths, transform.engine, transform.engine_reason)
    return transform.execute(pointer, x, transform.streams(stream), direction, factor, conj, fuse)


def _in_space(kind: Kind, x, s, axes, norm, overwrite_x, workers, plan, prolog, epilog, execution, stream):
    """A call with ``execution=``: checked against the operand as :class:`FFT` checks it, then run
    where it says. A host operand on CUDA is copied to the GPU, transformed there on ``stream``, and
    its result copied back into an array of its own library; ``ExecutionCPU(num_threads=)`` gives
    scipy.fft its ``workers`` where the call gives none."""
    operand = wrap_operand(x, "x", array_like=True)
    space = normalize_execution(execution, operand.device_id)
    if isinstance(space, ExecutionCPU):
        if workers is None:
            workers = space.num_threads
        return transform(kind, operand.obj, s, axes, norm, overwrite_x, workers, plan, prolog, epilog, None, stream)
    if operand.device_id >= 0:  # already on the device the space names (normalize_execution checks it)
        return transform(kind, x, s, axes, norm, overwrite_x, workers, plan, prolog, epilog, None, stream)
    if workers is not None:  # scipy.fft's rule for arrays that are not numpy's, as the GPU array gets it
        check_workers(workers, on_device=True)
    holder = resolve_stream(stream, space.device_id, operand.adapter.current_stream)
    device = stage_to_device(operand, space.device_id, holder)
    result = transform(kind, device.obj, s, axes, norm, overwrite_x, None, plan, prolog, epilog, None, holder.handle)
    return copy_to_host(wrap_operand(result, "result"), operand, holder)


def _on_cpu(kind: Kind, x, s, axes, norm, overwrite_x, workers, plan):
    """A host operand: checked as on the GPU (``plan`` included), run by scipy.fft on the resolved
    lengths and axes (a lazy view materialised first)."""
    name, fft_type, form = kind.name, kind.fft_type, kind.form
    operand = wrap_operand(x, "x")
    check_norm(norm)
    lengths, resolved_axes = _resolve(operand.shape, s, axes, form, fft_type)
    key = cpu_plan_key(fft_type, operand.shape, operand.dtype, resolved_axes, lengths)
    if not resolved_axes:
        check_workers(workers)
        return _untransformed(kind, x, key, plan)
    if plan is not None:
        _check_plan(plan, key, name)
    s, axes = (lengths[0], resolved_axes[0]) if form == 1 else (lengths, resolved_axes)
    return run_on_cpu(name, fft_type, operand.obj, s, axes, norm, overwrite_x, workers=workers)


def _untransformed(kind: Kind, x, key, plan, prolog=None, epilog=None):
    """``fftn(x, axes=[])`` and the like: ``x`` itself, as scipy.fft returns it, after the checks of
    any call (the dtype; a ``plan``, which is made for some axes, never serves no axis)."""
    check_dtype(kind.fft_type, wrap_operand(x, "x").dtype)
    for role, value in (("prolog", prolog), ("epilog", epilog)):
        if attachment(value, role, key[KEY_DEVICE]) is not None:
            raise OptionsError(role, "no axis is transformed, so no cuFFT pass would run this callback")
    if plan is not None:
        _check_plan(plan, key, kind.name)
    return x


def _check_plan(plan, key, name):
    """The transform of ``plan`` (an FFT) for a call whose problem has ``key``, on either space.

    Raises
    ------
    OptionsError
        When ``plan`` is no FFT.
    InvalidStateError
        When it has been freed.
    OperandError
        When it was made for another problem (the message says what differs).
    """
    if not isinstance(plan, FFT):
        raise OptionsError("plan", f"expected an nvmathx.fft.FFT or None (got {type(plan).__name__})")
    transform = transform_for_key(plan, key)
    if transform is None:
        raise OperandError("plan", _difference(plan.key, key, name))
    return transform


def _difference(made, needed, name) -> str:
    """What differs between the problem a plan was made for and the one a call of ``name`` needs."""
    if made[KEY_DEVICE] != needed[KEY_DEVICE]:
        return (f"was made for {_space(made[KEY_DEVICE])}, but {name} of this operand runs on "
                f"{_space(needed[KEY_DEVICE])}")
    padding = len(KEY_FIELDS)
    for field, was, wanted in zip(KEY_FIELDS, made + ((),) * padding, needed + ((),) * padding):
        if was != wanted:
            return f"was made for {field} {was}, but this {name} call needs {field} {wanted}"
    return f"was made for another problem ({made}); this {name} call needs {needed}"


def _space(device_id: int) -> str:
    return "the CPU" if device_id < 0 else f"GPU {device_id}"
