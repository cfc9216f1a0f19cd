"""Device functions compiled from CUDA C++ by NVRTC to LTO-IR, kept in the on-disk code cache."""

from __future__ import annotations

from .._core.logs import timed_step
from . import cache

__all__ = ["nvrtc_version", "cached_ltoir"]


def nvrtc_version() -> list[int]:
    """[major, minor] of the NVRTC that cuda.core compiles with ([] where it cannot be asked): part
    of the cache key of what it compiles."""
    from cuda.bindings import nvrtc

    status, major, minor = nvrtc.nvrtcVersion()
    return [int(major), int(minor)] if int(status) == 0 else []


def cached_ltoir(key: dict, symbol: str, source: str, arch: str) -> cache.CodeEntry:
    """The LTO-IR of ``source`` (defining ``symbol``) for ``arch`` ("sm_90a"), stored under ``key``:
    read from the cache, compiled where absent or stored under another symbol."""
    entry = cache.load(key)
    if entry is not None and entry.symbol == symbol:
        return entry
    from cuda.core import Program, ProgramOptions

    options = ProgramOptions(arch=arch, relocatable_device_code=True, link_time_optimization=True)
    with timed_step(f"NVRTC compile of {symbol} for {arch}"):
        entry = cache.CodeEntry(symbol, bytes(Program(source, "c++", options).compile("ltoir").code))
    cache.store(key, entry)
    return entry
