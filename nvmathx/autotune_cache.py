"""Autotuning that survives a restart: cuBLASLt's chosen algorithms kept on disk.

``Matmul.autotune()`` and ``matmul(..., preferences={"autotune": True})`` time cuBLASLt's
candidates and keep the fastest. With the cache enabled they first look for an earlier result of
the same problem on the same kind of machine, re-check the stored algorithm with cuBLASLt
(``cublasLtMatmulAlgoCheck``) and use it without timing anything; an entry that does not match, or
an algorithm the library no longer accepts, is dropped and the problem is tuned again (never a
wrong or failing plan). The key holds the GPU model and SM count, the driver and cuBLASLt versions,
the problem (shapes, strides, dtypes, compute and scale types), the epilog, the options, the
workspace limit and the operands' alignment; cuBLASLt documents its algorithm structure as
serialisable for the same library version.

Off by default. :func:`enable` keeps entries in a folder (default: ``autotune/`` beside the
device-code cache, :func:`nvmathx.cache_dir`'s parent), one file per entry, safe for concurrent
processes. :func:`save` and :func:`load` move them in one file, so a cluster job can ship its tuning
with its code, as FFTW users ship wisdom.

Examples
--------
>>> import os, tempfile
>>> import nvmathx.autotune_cache as autotune_cache
>>> folder = tempfile.mkdtemp()
>>> autotune_cache.enable(folder)
>>> autotune_cache.info().enabled, autotune_cache.info().entries
(True, 0)
>>> autotune_cache.save(os.path.join(folder, "tuning.json"))    # entries written
0
>>> autotune_cache.disable()
"""

from __future__ import annotations

import os

from ._core.autotune_cache import AutotuneCacheInfo, store

__all__ = ["enable", "disable", "save", "load", "clear", "info", "AutotuneCacheInfo"]


def enable(path: str | os.PathLike | None = None) -> None:
    """Consult and record autotuning results in the folder ``path`` (default: ``autotune/`` beside
    the device-code cache); entries already there answer later autotuning at once.

    Raises
    ------
    OptionsError
        Naming ``path``, when it is not a path or names a file.
    """
    store.enable(path)


def disable() -> None:
    """Stop consulting and recording; entries on disk stay."""
    store.disable()


def save(path: str | os.PathLike) -> int:
    """Write every known entry to the file ``path``; returns how many."""
    return store.save(path)


def load(path: str | os.PathLike) -> int:
    """Read the entries of a file :func:`save` wrote (they answer later autotuning, and are copied
    into the enabled folder); returns how many.

    Raises
    ------
    OptionsError
        Naming ``path``, for a file that cannot be read or is no saved autotune cache.
    """
    return store.load(path)


def clear() -> None:
    """Forget every entry, in memory and in the enabled folder."""
    store.clear()


def info() -> AutotuneCacheInfo:
    """``(enabled, path, entries, hits, misses, rejected)``."""
    return store.info()
