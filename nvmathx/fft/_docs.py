"""Docstrings of the scipy.fft-compatible functions: one numpydoc template, filled in per table row."""

from __future__ import annotations

from .._fftcore.layout import C2C, C2R, R2C

__all__ = ["render"]

_ONE_D = """n : int, optional
    Length of the transformed axis of the {what}. The input is cropped or zero-padded to
    it{n_default}.
axis : int, optional
    The axis to transform (default: the last). Here and in ``n``, numpy integers and 0-d integer
    arrays count as ints; floats and bools are refused."""

_N_D = """s : sequence of int, optional
    Lengths of the transformed axes of the {what}; each axis is cropped or zero-padded
    (-1 keeps an extent){n_default}.
axes : sequence of int, optional
    The axes to transform (default: {axes_default}). Axes must be distinct.
    Here and in ``s``, numpy integers and integer arrays count as ints; floats and bools are
    refused. {no_axis}"""

_NO_AXIS_C2C = """No axis (``axes=[]``, ``s=[]`` without ``axes``, or a 0-d ``x`` without
    either) returns ``x`` itself, as scipy.fft does, after the checks of any call (an ``s`` with
    entries then raises)."""
_NO_AXIS_REAL = """No axis (``axes=[]``, or ``s=[]`` without ``axes``) raises
    OptionsError naming ``axes`` (``x`` for a 0-d ``x``), as scipy.fft refuses it."""

_TEMPLATE = """{summary}

Parameters
----------
x : array_like
    The operand: a numpy array (or list) runs on the CPU through scipy.fft; a cupy, torch,
    jax or other DLPack / CUDA Array Interface array on a GPU runs on cuFFT.
{axis_text}
norm : {{"backward", "ortho", "forward"}}, optional
    Normalisation (default "backward"): {norm_text}
overwrite_x : bool, optional
    Whether the operand may be destroyed. On the GPU this lets a complex-to-real transform skip
    its copy of the operand (cuFFT's C2R overwrites its input); on the CPU scipy.fft may compute
    in the operand's memory (a torch tensor's too). It permits and never requires: read-only
    memory, elements sharing memory and lazy views are left as they are. Otherwise the operand is
    never written.
workers : int, optional
    CPU threads for host operands (scipy.fft's ``workers``: -1 counts back from the number of
    CPUs; numpy integers count as ints). GPU arrays take only None, as scipy.fft requires for
    arrays that are not numpy's.
plan : nvmathx.fft.FFT, optional
    A stateful plan made for this call's problem: the same shape, dtype, axes, lengths, transform
    type ({fft_type} here) and execution space, and on the GPU the same strides and array library.
    It is checked alike on the CPU and the GPU; on the GPU its cuFFT plans are used instead of the
    plan cache.{callbacks_text}
execution : "cuda", "cpu", ExecutionCUDA, ExecutionCPU or dict, optional
    Where the transform runs, as :func:`nvmathx.linalg.matmul` takes it (default: where ``x``
    lives). ``"cuda"`` with a host operand copies it to the GPU, transforms it with cuFFT and
    copies the result back into an array of ``x``'s library; ``"cpu"`` takes host operands only,
    and ``ExecutionCPU(num_threads=)`` gives scipy.fft its ``workers`` when ``workers`` is None.
stream : cuda.core Stream, object with ``__cuda_stream__``, int or None, optional
    The CUDA stream the transform (and a host operand's copies) run on; default: the operand
    library's current stream. CPU execution takes none.

Returns
-------
out : array
    {returns} An array of the operand's own library, on its device.

Raises
------
OptionsError
    For invalid ``n``/``s``, ``axis``/``axes`` (repeated or out of range; none for a real or
    Hermitian transform), ``norm`` or ``workers`` (0, not an int, below ``-os.cpu_count()``, or
    not None with a GPU array), an ``execution`` that names no space, or a ``stream`` with CPU
    execution; naming ``n``/``s`` with the bytes needed, for a result larger than the memory of
    the machine (CPU) or GPU that runs it, or than the machine's free memory.
OperandError
    When ``plan`` was made for another problem (the message names what differs), ``x`` is a
    list numpy cannot convert (ragged), or ``execution`` names the CPU for a GPU array or another
    GPU than the array's.
DeviceUnavailableError
    For ``execution="cuda"`` on a machine without a CUDA driver or GPU.
InvalidStateError
    When ``plan`` has been freed.
UnsupportedOperandError
    For an object that is not an array, a dtype neither bool, integer, floating nor complex of
    at most 64 bits per part (e.g. float128, strings, objects), or a complex operand of a
    real-to-complex transform (rfft*, ihfft*); on the CPU and the GPU alike.

See Also
--------
{see_also}

Notes
-----
GPU plans are cached per device in :data:`nvmathx.fft.plan_cache`, keyed by
:func:`nvmathx.fft.plan_key` (shape, strides, dtype, axes, lengths, device, library), so a
repeated call costs one cuFFT execution. Any axes and strides are accepted; layouts that cuFFT
cannot address directly are run as several cuFFT passes or after a copy. As in scipy.fft,
float16 and bfloat16 operands are computed in single precision (complex64 results) and bool and
integer operands in double precision (complex128/float64 results), converted on the GPU. With ``norm`` other than
the one that leaves this direction unscaled, the scale is folded into a copy the transform makes anyway;
otherwise "ortho" and "forward" are applied in cuFFT's store by a built-in callback (no extra pass,
where cuFFT can link callbacks), and the default inverse scale by one elementwise pass.

Examples
--------
>>> import numpy as np
>>> import nvmathx.fft
{example}
"""

_CALLBACKS = """
prolog, epilog : nvmathx.fft.CompiledCallback or (CompiledCallback, array), optional
    GPU only: a load callback (:func:`nvmathx.fft.compile_prolog`) cuFFT calls on every element it
    reads from the operand, and a store callback (:func:`nvmathx.fft.compile_epilog`) on every
    element it writes to the result, each alone or with a user-data array on the operand's GPU. A
    plan with callbacks is a plan-cache entry of its own (keyed by the callbacks and the user
    data's pointer); the layout must let cuFFT read the operand (prolog) or write the result
    (epilog) directly, else OptionsError names the argument."""

_NORM_FORWARD = 'the forward transform is unscaled, "ortho" scales by 1/sqrt(N), "forward" by 1/N.'
_NORM_INVERSE = 'the inverse is scaled by 1/N, "ortho" by 1/sqrt(N), "forward" leaves it unscaled.'


def render(kind, *, callbacks: bool, summary: str, returns: str, see_also: str, example: str) -> str:
    """The docstring of the public transform ``kind`` (a row of ``_transforms``), from the template.

    ``kind`` gives the name, type, form, direction and Hermitian flag; the rest is the row's own
    text (``see_also`` comma-separated, ``example`` doctest lines after the two imports).
    """
    name, fft_type, form, direction, conj = kind
    if fft_type == C2R:  # the length of a real result defaults from the m complex terms read
        what = "output (default ``2 * (m - 1)`` for ``m`` input terms)" if form == 1 else \
            "output (last default ``2 * (m - 1)``)"
    else:
        what = "input" if fft_type == R2C else "output"
    n_default = "" if "default" in what else " (default: the operand's extent)"
    if form == 1:
        axis_text = _ONE_D.format(what=what, n_default=n_default)
    else:
        axes_default = "the last two" if form == 2 else "all, or the last ``len(s)``"
        no_axis = _NO_AXIS_C2C if fft_type == C2C else _NO_AXIS_REAL
        axis_text = _N_D.format(what=what, n_default=n_default, axes_default=axes_default, no_axis=no_axis)
    # hfft* is the inverse transform run as a forward one (conjugated), so it scales as a forward one.
    forward = (direction < 0) != conj
    return _TEMPLATE.format(
        summary=summary, axis_text=axis_text, norm_text=_NORM_FORWARD if forward else _NORM_INVERSE,
        returns=returns, fft_type=fft_type, callbacks_text=_CALLBACKS if callbacks else "",
        see_also="\n".join(part.strip() for part in see_also.split(",")), example=example,
    )
