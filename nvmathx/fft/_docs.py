"""Docstrings of the scipy.fft-compatible functions, filled in from one numpydoc template."""

from __future__ import annotations

__all__ = ["document"]

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

_NO_AXIS_C2C = """No axis (``axes=[]``, or ``s=[]`` without ``axes``) returns ``x``
    itself, as scipy.fft does, after the checks of any call (an ``s`` with entries then raises)."""
_NO_AXIS_REAL = """No axis (``axes=[]``, or ``s=[]`` without ``axes``) raises
    OptionsError naming ``axes``, as scipy.fft refuses it."""

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
    its copy of the operand (cuFFT's C2R overwrites its input); otherwise it is never written.
workers : int, optional
    CPU threads for host operands (scipy.fft's ``workers``: -1 counts back from the number of
    CPUs; numpy integers count as ints). GPU arrays take only None, as scipy.fft requires for
    arrays that are not numpy's.
plan : nvmathx.fft.FFT, optional
    A stateful plan made for this call's problem: the same shape, dtype, axes, lengths, transform
    type ({fft_type} here) and execution space, and on the GPU the same strides and array library.
    It is checked alike on the CPU and the GPU; on the GPU its cuFFT plans are used instead of the
    plan cache.{callbacks_text}

Returns
-------
out : array
    {returns} An array of the operand's own library, on its device.

Raises
------
OptionsError
    For invalid ``n``/``s``, ``axis``/``axes`` (repeated or out of range; none for a real or
    Hermitian transform), ``norm`` or ``workers`` (0, not an int, below ``-os.cpu_count()``, or
    not None with a GPU array).
OperandError
    When ``plan`` was made for another problem (the message names what differs).
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

_SPECS = {
    "fft": ("Compute the 1-D discrete Fourier transform.", 1, "output", _NORM_FORWARD,
            "The complex transform along ``axis``.", "ifft, fftn, rfft",
            ">>> x = np.exp(2j * np.pi * np.arange(8) / 8)\n>>> np.allclose(nvmathx.fft.fft(x), np.fft.fft(x))\nTrue"),
    "ifft": ("Compute the 1-D inverse discrete Fourier transform.", 1, "output", _NORM_INVERSE,
             "The complex inverse transform along ``axis``.", "fft, ifftn, irfft",
             ">>> x = np.arange(8.0) + 1j\n>>> np.allclose(nvmathx.fft.ifft(nvmathx.fft.fft(x)), x)\nTrue"),
    "fft2": ("Compute the 2-D discrete Fourier transform.", 2, "output", _NORM_FORWARD,
             "The complex transform over ``axes``.", "ifft2, fftn",
             ">>> x = np.arange(12.0).reshape(3, 4)\n>>> np.allclose(nvmathx.fft.fft2(x), np.fft.fft2(x))\nTrue"),
    "ifft2": ("Compute the 2-D inverse discrete Fourier transform.", 2, "output", _NORM_INVERSE,
              "The complex inverse transform over ``axes``.", "fft2, ifftn",
              ">>> x = np.arange(12.0).reshape(3, 4)\n>>> np.allclose(nvmathx.fft.ifft2(x), np.fft.ifft2(x))\nTrue"),
    "fftn": ("Compute the N-D discrete Fourier transform.", 3, "output", _NORM_FORWARD,
             "The complex transform over ``axes``.", "ifftn, fft2, rfftn",
             ">>> x = np.arange(24.0).reshape(2, 3, 4)\n>>> np.allclose(nvmathx.fft.fftn(x), np.fft.fftn(x))\nTrue"),
    "ifftn": ("Compute the N-D inverse discrete Fourier transform.", 3, "output", _NORM_INVERSE,
              "The complex inverse transform over ``axes``.", "fftn, ifft2, irfftn",
              ">>> x = np.arange(24.0).reshape(2, 3, 4)\n>>> np.allclose(nvmathx.fft.ifftn(x), np.fft.ifftn(x))\nTrue"),
    "rfft": ("Compute the 1-D discrete Fourier transform of a real operand.", 1, "input", _NORM_FORWARD,
             "The ``n // 2 + 1`` non-negative frequency terms along ``axis``.", "irfft, fft, rfftn",
             ">>> x = np.arange(8.0)\n>>> np.allclose(nvmathx.fft.rfft(x), np.fft.rfft(x))\nTrue"),
    "rfft2": ("Compute the 2-D discrete Fourier transform of a real operand.", 2, "input", _NORM_FORWARD,
              "The transform over ``axes``; the last holds ``s[-1] // 2 + 1`` terms.", "irfft2, rfftn",
              ">>> x = np.arange(12.0).reshape(3, 4)\n>>> np.allclose(nvmathx.fft.rfft2(x), np.fft.rfft2(x))\nTrue"),
    "rfftn": ("Compute the N-D discrete Fourier transform of a real operand.", 3, "input", _NORM_FORWARD,
              "The transform over ``axes``; the last holds ``s[-1] // 2 + 1`` terms.", "irfftn, fftn, rfft",
              ">>> x = np.arange(24.0).reshape(2, 3, 4)\n>>> np.allclose(nvmathx.fft.rfftn(x), np.fft.rfftn(x))\nTrue"),
    "irfft": ("Compute the inverse of :func:`rfft`: a real result from non-negative frequency terms.", 1,
              "output (default ``2 * (m - 1)`` for ``m`` input terms)", _NORM_INVERSE,
              "The real inverse transform along ``axis``.", "rfft, ifft, irfftn",
              ">>> x = np.arange(8.0)\n>>> np.allclose(nvmathx.fft.irfft(nvmathx.fft.rfft(x)), x)\nTrue"),
    "irfft2": ("Compute the inverse of :func:`rfft2`.", 2, "output (last default ``2 * (m - 1)``)",
               _NORM_INVERSE, "The real inverse transform over ``axes``.", "rfft2, irfftn",
               ">>> x = np.arange(12.0).reshape(3, 4)\n"
               ">>> np.allclose(nvmathx.fft.irfft2(nvmathx.fft.rfft2(x)), x)\nTrue"),
    "irfftn": ("Compute the inverse of :func:`rfftn`.", 3, "output (last default ``2 * (m - 1)``)",
               _NORM_INVERSE, "The real inverse transform over ``axes``.", "rfftn, ifftn, irfft",
               ">>> x = np.arange(24.0).reshape(2, 3, 4)\n"
               ">>> np.allclose(nvmathx.fft.irfftn(nvmathx.fft.rfftn(x), x.shape), x)\nTrue"),
    "hfft": ("Compute the FFT of a signal with Hermitian symmetry: a real spectrum.", 1,
             "output (default ``2 * (m - 1)`` for ``m`` input terms)", _NORM_FORWARD,
             "The real transform along ``axis``.", "ihfft, irfft",
             ">>> x = np.array([1.0, 2 - 1j, 3 + 0j])\n>>> np.allclose(nvmathx.fft.hfft(x), np.fft.hfft(x))\nTrue"),
    "ihfft": ("Compute the inverse FFT of a real signal with a Hermitian spectrum.", 1, "input", _NORM_INVERSE,
              "The ``n // 2 + 1`` non-negative frequency terms along ``axis``.", "hfft, rfft",
              ">>> x = np.arange(6.0)\n>>> np.allclose(nvmathx.fft.ihfft(x), np.fft.ihfft(x))\nTrue"),
    "hfft2": ("Compute the 2-D FFT of a Hermitian-symmetric signal: a real spectrum.", 2,
              "output (last default ``2 * (m - 1)``)", _NORM_FORWARD, "The real transform over ``axes``.",
              "ihfft2, hfftn, irfft2",
              ">>> import scipy.fft\n>>> x = np.arange(12.0).reshape(3, 4) + 1j\n"
              ">>> np.allclose(nvmathx.fft.hfft2(x), scipy.fft.hfft2(x))\nTrue"),
    "ihfft2": ("Compute the 2-D inverse FFT of a real signal with a Hermitian spectrum.", 2, "input", _NORM_INVERSE,
               "The transform over ``axes``; the last holds ``s[-1] // 2 + 1`` terms.", "hfft2, ihfftn, rfft2",
               ">>> import scipy.fft\n>>> x = np.arange(12.0).reshape(3, 4)\n"
               ">>> np.allclose(nvmathx.fft.ihfft2(x), scipy.fft.ihfft2(x))\nTrue"),
    "hfftn": ("Compute the N-D FFT of a Hermitian-symmetric signal: a real spectrum.", 3,
              "output (last default ``2 * (m - 1)``)", _NORM_FORWARD, "The real transform over ``axes``.",
              "ihfftn, hfft2, irfftn",
              ">>> import scipy.fft\n>>> x = np.arange(24.0).reshape(2, 3, 4) + 1j\n"
              ">>> np.allclose(nvmathx.fft.hfftn(x), scipy.fft.hfftn(x))\nTrue"),
    "ihfftn": ("Compute the N-D inverse FFT of a real signal with a Hermitian spectrum.", 3, "input", _NORM_INVERSE,
               "The transform over ``axes``; the last holds ``s[-1] // 2 + 1`` terms.", "hfftn, ihfft2, rfftn",
               ">>> import scipy.fft\n>>> x = np.arange(24.0).reshape(2, 3, 4)\n"
               ">>> np.allclose(nvmathx.fft.ihfftn(x), scipy.fft.ihfftn(x))\nTrue"),
}


def document(namespace: dict) -> None:
    """Set the docstring of every public transform in ``namespace``."""
    for name, (summary, form, what, norm_text, returns, see_also, example) in _SPECS.items():
        complex_to_complex = name.lstrip("i").startswith("fft")
        n_default = "" if "default" in what else " (default: the operand's extent)"
        if form == 1:
            axis_text = _ONE_D.format(what=what, n_default=n_default)
        else:
            axes_default = "the last two" if form == 2 else "all, or the last ``len(s)``"
            no_axis = _NO_AXIS_C2C if complex_to_complex else _NO_AXIS_REAL
            axis_text = _N_D.format(what=what, n_default=n_default, axes_default=axes_default, no_axis=no_axis)
        namespace[name].__doc__ = _TEMPLATE.format(
            summary=summary, axis_text=axis_text, norm_text=norm_text, returns=returns,
            fft_type=_fft_type(name),
            callbacks_text="" if name.lstrip("i").startswith("h") else _CALLBACKS,
            see_also="\n".join(name.strip() for name in see_also.split(",")), example=example,
        )


def _fft_type(name: str) -> str:
    """The transform type of a public function, for its ``plan`` text."""
    family = name.rstrip("2n")
    return {"fft": "C2C", "ifft": "C2C", "rfft": "R2C", "ihfft": "R2C", "irfft": "C2R", "hfft": "C2R"}[family]
