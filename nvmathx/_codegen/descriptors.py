"""libmathdx descriptors (cuFFTDx, cuBLASDx) as plain data, and their generated code through the
on-disk cache.

A descriptor is ``(library, operators)`` where ``library`` is ``"cufftdx"``, ``"cublasdx"``,
``"curanddx"`` or ``"cusolverdx"`` and ``operators`` is a tuple of ``(operator name, int or tuple of ints)`` (a tuple of
floats for cuRANDDx's ``DISTRIBUTION_PARAMETERS``). Being plain data, it keys the cache, builds a
libmathdx descriptor on demand, and names the generated symbol (cuRANDDx keeps its own names: the
entry's symbol is then the one its ``SYMBOL_GENERATE_NAME`` trait gives).
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import threading

from .._bindings import mathdx
from .._core.logs import timed_step
from . import cache
from .target import Target

__all__ = [
    "Descriptor",
    "open_descriptor",
    "library_versions",
    "cache_key",
    "get_code",
    "cached_query",
    "generate_into",
    "prefetch",
]

Descriptor = tuple  # (library: str, operators: tuple[tuple[str, int | tuple[int, ...]], ...])

_OPERATORS = {"cufftdx": mathdx.FftOperator, "cublasdx": mathdx.BlasOperator, "curanddx": mathdx.RandOperator,
              "cusolverdx": mathdx.SolverOperator}
_CREATE = {"cufftdx": mathdx.fft_descriptor, "cublasdx": mathdx.blas_descriptor, "curanddx": mathdx.rand_descriptor,
           "cusolverdx": mathdx.solver_descriptor}
_SYMBOL_TRAIT = {"cufftdx": mathdx.FftTrait.SYMBOL_NAME, "cublasdx": mathdx.BlasTrait.SYMBOL_NAME,
                 "curanddx": mathdx.RandTrait.SYMBOL_GENERATE_NAME, "cusolverdx": mathdx.SolverTrait.SYMBOL_NAME}
_FORMAT = 1  # bump when the entry layout or the generated function ABI changes

_generation_lock = threading.Lock()


def open_descriptor(descriptor: Descriptor):
    """A libmathdx descriptor with ``descriptor``'s operators set (a context manager)."""
    library, operators = descriptor
    handle = _CREATE[library]()
    try:
        for name, value in operators:
            if isinstance(value, tuple) and any(isinstance(item, float) for item in value):
                handle.set_doubles(_OPERATORS[library][name], value)
            else:
                handle.set(_OPERATORS[library][name], value)
    except BaseException:
        handle.close()
        raise
    return handle


@functools.lru_cache(maxsize=1)
def library_versions() -> dict:
    """libmathdx's version and commit and its NVRTC's version: part of every cache key."""
    return {
        "libmathdx": ".".join(map(str, mathdx.version())),
        "libmathdx_commit": mathdx.commit(),
        "nvrtc": ".".join(map(str, mathdx.nvrtc_version())),
    }


def cache_key(descriptor: Descriptor, target: Target) -> dict:
    library, operators = descriptor
    return {
        "format": _FORMAT,
        "library": library,
        "operators": [[name, list(value) if isinstance(value, tuple) else value] for name, value in operators],
        "target": target.name,
        **library_versions(),
    }


def _symbol_name(key: dict) -> str:
    return cache.symbol_for(f"nvmathx_{key['library']}", key)


def code_symbol(descriptor: Descriptor, target: Target) -> str:
    """The symbol :func:`get_code` gives ``descriptor``'s code on ``target``, without generating it."""
    return _symbol_name(cache_key(descriptor, target))


def get_code(descriptor: Descriptor, target: Target) -> cache.CodeEntry:
    """The LTO-IR and symbol for ``descriptor`` on ``target``: from the disk cache or libmathdx.

    Callers keep what they get (a descriptor object holds its code), so there is no in-memory
    layer here. Generation is serialised in-process (libmathdx serialises it anyway: two threads
    take as long as one after the other); a generation that :func:`prefetch` started in another
    process is waited for, and redone here if it failed.
    """
    key = cache_key(descriptor, target)
    entry = cache.load(key)
    if entry is not None:
        return entry
    if _wait_for_prefetch(key):
        entry = cache.load(key)
        if entry is not None:
            return entry
    with _generation_lock, timed_step(f"libmathdx code generation ({type(descriptor).__name__})"):
        entry = _generate(descriptor, target, _symbol_name(key))
        cache.store(key, entry)
    return entry


# -- generation in other processes ----------------------------------------------------------------
# libmathdx generates one descriptor at a time per process (about 4 s of CPU for a cuFFTDx FFT), so
# a kernel with two FFTs waits 8 s the first time. When a compiler types a kernel, each descriptor
# it uses that is not on disk starts generating in a process of its own (``prefetch``); lowering
# then waits for it (``get_code``). NVMATHX_PARALLEL_CODEGEN=0 turns this off.

_pending: dict[str, subprocess.Popen] = {}
_MAX_PENDING = max(1, min(4, os.cpu_count() or 1))  # the waiting process itself sits idle
_PREFETCH_TIMEOUT_S = 600

_CHILD = """
import json, sys
from nvmathx._codegen import cache, descriptors
from nvmathx._codegen.target import Target
request = json.loads(sys.argv[1])
library, operators = request["descriptor"]
operators = tuple((name, tuple(value) if isinstance(value, list) else value) for name, value in operators)
cache.set_cache_dir(request["root"])
descriptors.get_code((library, operators), Target(*request["target"]))
"""


def prefetch(descriptor: Descriptor, target: Target) -> bool:
    """Start generating ``descriptor``'s code for ``target`` in another process unless it is on
    disk, already on its way, or too many are; True when one was started."""
    if os.environ.get("NVMATHX_PARALLEL_CODEGEN", "1") == "0" or not sys.executable:
        return False
    key = cache_key(descriptor, target)
    name = cache.entry_name(key)
    if name in _pending or os.path.exists(os.path.join(cache.cache_dir(), name)):
        return False
    if sum(process.poll() is None for process in _pending.values()) >= _MAX_PENDING:
        return False
    request = {"descriptor": [descriptor[0], [[n, list(v) if isinstance(v, tuple) else v] for n, v in descriptor[1]]],
               "target": [target.major, target.minor], "root": os.path.dirname(cache.cache_dir())}
    try:
        _pending[name] = subprocess.Popen([sys.executable, "-c", _CHILD, json.dumps(request)],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except OSError:  # no interpreter to start: generate in this process when asked
        return False
    return True


def _wait_for_prefetch(key: dict) -> bool:
    """Wait for a generation :func:`prefetch` started for ``key``; whether it succeeded."""
    process = _pending.pop(cache.entry_name(key), None)
    if process is None:
        return False
    try:
        return process.wait(timeout=_PREFETCH_TIMEOUT_S) == 0
    except subprocess.TimeoutExpired:
        process.kill()
        return False


def _generate(descriptor: Descriptor, target: Target, symbol: str) -> cache.CodeEntry:
    with open_descriptor(descriptor) as handle:
        if descriptor[0] != "curanddx":  # which keeps its own names (and its first trait query freezes it)
            handle.set_symbol_name(symbol)
        code = mathdx.generate_ltoir(handle, target.sm, target.arch_specific)
        return cache.CodeEntry(handle.trait_str(_SYMBOL_TRAIT[descriptor[0]]), code)


def cached_query(descriptor: Descriptor, target: Target, query) -> dict:
    """``query(handle)`` (a JSON-serialisable dict) for ``descriptor``, kept in the disk cache.

    For libraries whose trait queries compile code (cuBLASDx: seconds per descriptor). A
    MathdxError becomes ``{"error": status name}`` so that refusals are cached too.
    """
    # the query's name is in the key: another query of the same descriptor reads other traits
    key = dict(cache_key(descriptor, target), purpose="traits", query=f"{query.__module__}.{query.__qualname__}")
    entry = cache.load(key)
    if entry is not None:
        return json.loads(entry.code)
    try:
        with open_descriptor(descriptor) as handle:
            result = query(handle)
    except mathdx.MathdxError as error:
        result = {"error": error.status_name}
    cache.store(key, cache.CodeEntry("", json.dumps(result).encode()))
    return result


def generate_into(cache_root: str, descriptor: Descriptor, target: Target) -> str:
    """Fill the cache under ``cache_root`` with ``descriptor``'s code; returns the symbol.

    A module-level function so that worker processes can generate many descriptors in parallel.
    """
    cache.set_cache_dir(cache_root)
    return get_code(descriptor, target).symbol
