"""An independent float64 reference for every scipy.fft transform: explicit DFT matrix products.

Written from the definitions, not from scipy or nvmathx: each transformed axis is cropped or
zero-padded to its length and multiplied by ``exp(sign * 2j*pi * j*k / L)``; a complex-to-real
transform first rebuilds the full Hermitian spectrum along its last axis; the scale follows
``norm``. Meant for lengths up to a few hundred (a matrix per axis).
"""

import numpy as np

__all__ = ["FUNCTIONS", "dft_reference", "relative_error", "resolve"]

# family -> (kind, sign of the exponent, which way "norm" scales it)
_FAMILIES = {
    "fft": ("c2c", -1, "forward"), "ifft": ("c2c", +1, "inverse"),
    "rfft": ("r2c", -1, "forward"), "irfft": ("c2r", +1, "inverse"),
    "hfft": ("c2r", -1, "forward"), "ihfft": ("r2c", +1, "inverse"),
}
FUNCTIONS = [family + form for family in _FAMILIES for form in ("", "2", "n")]


def _family_and_form(name):
    if name in _FAMILIES:
        return name, "1"
    return name[:-1], name[-1]


def resolve(name, shape, s=None, axes=None):
    """(lengths, axes) of a call, from the documented defaults: one axis (-1) for the 1-D forms,
    (-2, -1) for the 2-D forms, every axis (or the last ``len(s)``) for the n-D forms; a
    complex-to-real transform without a length makes ``2 * (m - 1)`` points on its last axis."""
    family, form = _family_and_form(name)
    ndim = len(shape)
    if form == "1":
        axes = (-1 if axes is None else axes,)
        s = None if s is None else (s,)
    elif axes is None:
        axes = (-2, -1) if form == "2" else tuple(range(ndim - (len(s) if s is not None else ndim), ndim))
    axes = tuple(axis % ndim for axis in axes)
    if s is None:
        lengths = [shape[axis] for axis in axes]
        if _FAMILIES[family][0] == "c2r":
            lengths[-1] = 2 * (shape[axes[-1]] - 1)
    else:
        lengths = [shape[axis] if length == -1 else length for length, axis in zip(s, axes)]
    return tuple(lengths), axes


def _fit(y, axis, length):
    """Crop or zero-pad ``y`` along ``axis`` to ``length``."""
    extent = y.shape[axis]
    if extent >= length:
        return np.take(y, np.arange(length), axis=axis)
    padding = [(0, 0)] * y.ndim
    padding[axis] = (0, length - extent)
    return np.pad(y, padding)


def _dft(y, axis, sign):
    length = y.shape[axis]
    k = np.arange(length)
    matrix = np.exp(sign * 2j * np.pi * (np.outer(k, k) % length) / length)
    return np.moveaxis(np.moveaxis(y, axis, -1) @ matrix.T, -1, axis)


def _hermitian(half, axis, length):
    """The full spectrum of ``length`` points whose first ``length // 2 + 1`` are ``half``."""
    moved = np.moveaxis(half, axis, -1)
    mirrored = np.conj(moved[..., 1:length - length // 2][..., ::-1])
    return np.moveaxis(np.concatenate([moved, mirrored], axis=-1), -1, axis)


def dft_reference(name, x, s=None, axes=None, norm=None):
    """``scipy.fft.<name>(x, s, axes, norm)`` computed in float64 from the DFT's definition
    (``s``/``axes`` are ``n``/``axis`` for the 1-D forms)."""
    family, _ = _family_and_form(name)
    kind, sign, scaling = _FAMILIES[family]
    x = np.asarray(x)
    lengths, axes = resolve(name, x.shape, s, axes)
    y = x.astype(np.float64 if kind == "r2c" else np.complex128)
    if kind == "c2r":
        for axis, length in zip(axes[:-1], lengths[:-1]):
            y = _dft(_fit(y, axis, length), axis, sign)
        last, length = axes[-1], lengths[-1]
        y = _dft(_hermitian(_fit(y, last, length // 2 + 1), last, length), last, sign).real
    else:
        for axis, length in zip(axes, lengths):
            y = _dft(_fit(y, axis, length), axis, sign)
        if kind == "r2c":
            y = np.take(y, np.arange(lengths[-1] // 2 + 1), axis=axes[-1])
    points = float(np.prod(lengths))
    norm = norm or "backward"
    if norm == "ortho":
        return y / np.sqrt(points)
    if (norm == "forward") == (scaling == "forward"):
        return y / points
    return y


def relative_error(result, expected) -> float:
    """``|result - expected| / |expected|`` in the 2-norm over all elements (1 for an expected 0)."""
    result = np.asarray(result)
    expected = np.asarray(expected)
    assert result.shape == expected.shape, (result.shape, expected.shape)
    wide = np.complex128 if np.iscomplexobj(result) or np.iscomplexobj(expected) else np.float64
    scale = np.linalg.norm(expected.astype(wide).ravel()) or 1.0
    return float(np.linalg.norm((result.astype(wide) - expected.astype(wide)).ravel()) / scale)
