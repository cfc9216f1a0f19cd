"""The scipy.fft backend: ``with scipy.fft.set_backend(nvmathx.fft): scipy.fft.fft(x)``.

One object, :data:`backend`, whose ``__ua_function__`` serves GPU arrays (cupy, torch, jax, ...)
with nvmathx's function of the same name and returns ``NotImplemented`` for everything else (host
arrays, functions nvmathx does not have), so scipy falls back to its own implementation. The
package ``nvmathx.fft`` exposes the same two attributes, so the module itself is a backend too.
"""

from __future__ import annotations

from .._core.tensor import wrap_operand
from ._transforms import TRANSFORMS

__all__ = ["backend", "__ua_domain__", "__ua_function__"]

__ua_domain__ = "numpy.scipy.fft"

_SERVED = dict(TRANSFORMS)  # by scipy.fft's name, as __ua_function__ finds them (a copy: tests patch entries)


def _on_device(x) -> bool:
    """True for an array in GPU memory; never raises (anything unviewable is not ours)."""
    if x is None or isinstance(x, (list, tuple, int, float, complex)):
        return False
    try:
        return wrap_operand(x, "x").device_id >= 0
    except Exception:
        return False


def __ua_function__(method, args, kwargs):
    """Serve ``method`` for device arrays; ``NotImplemented`` otherwise."""
    function = _SERVED.get(getattr(method, "__name__", None))
    if function is None:
        return NotImplemented
    x = args[0] if args else kwargs.get("x")
    if not _on_device(x):
        return NotImplemented
    return function(*args, **kwargs)


class _Backend:
    """The nvmathx backend for ``scipy.fft.set_backend`` / ``set_global_backend``."""

    __ua_domain__ = __ua_domain__
    __ua_function__ = staticmethod(__ua_function__)

    def __repr__(self):
        return "nvmathx.fft.backend"


backend = _Backend()
"""The scipy.fft backend object (the module ``nvmathx.fft`` works as well)."""
