"""The built-in store callback that applies ``norm``'s scale as cuFFT writes the result.

One callback per element type, compiled with NVRTC (no numba) to LTO-IR and kept in the device code
cache; the factor is read through ``caller_info`` from an 8-byte device buffer that each scaled cuFFT
plan owns, so one compiled callback serves every factor and the plan is made once per factor.
"""

from __future__ import annotations

import hashlib

from .._core.memo import BuildOnce
from .callbacks import FORMAT, CompiledCallback, cufft_symbol

__all__ = ["SCALE_SOURCE", "factor_dtype", "scale_callback"]

# element dtype -> (C element type, C factor type, scaled value)
_TYPES = {
    "complex64": ("float2", "float", "make_float2(value.x * factor, value.y * factor)"),
    "complex128": ("double2", "double", "make_double2(value.x * factor, value.y * factor)"),
    "float32": ("float", "float", "value * factor"),
    "float64": ("double", "double", "value * factor"),
}

SCALE_SOURCE = r"""
extern "C" __device__ void {symbol}(void* data, unsigned long long offset, {element} value, void* info, void*) {{
    const {factor} factor = *static_cast<const {factor}*>(info);
    static_cast<{element}*>(data)[offset] = {scaled};
}}
"""

_compiled = BuildOnce()  # (element, target) -> CompiledCallback


def factor_dtype(element: str) -> str:
    """The numpy dtype of the factor the callback of ``element`` reads."""
    return "float32" if _TYPES[element][1] == "float" else "float64"


def scale_callback(element: str, target: str) -> CompiledCallback:
    """The store callback multiplying ``element`` values by the factor at ``caller_info`` (LTO-IR for
    ``target``, "sm_XY"), compiled once and cached on disk."""
    return _compiled.get_or_build((element, target), lambda: _load_or_compile(element, target))


def _load_or_compile(element: str, target: str) -> CompiledCallback:
    from .._codegen.nvrtc import cached_ltoir, nvrtc_version

    c_element, c_factor, scaled = _TYPES[element]
    key = {"kind": "fft-scale-callback", "format": FORMAT, "element": element, "target": target,
           "nvrtc": nvrtc_version()}
    digest = hashlib.sha256(repr(sorted(key.items())).encode()).hexdigest()
    symbol = cufft_symbol("epilog", element)
    source = SCALE_SOURCE.format(symbol=symbol, element=c_element, factor=c_factor, scaled=scaled)
    entry = cached_ltoir(key, symbol, source, target)
    return CompiledCallback("epilog", element, factor_dtype(element), target, symbol, entry.code, digest)
