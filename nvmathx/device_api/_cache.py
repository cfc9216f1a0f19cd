"""The on-disk cache of generated device code.

libmathdx keeps no cache and spends seconds of CPU per descriptor, so generated LTO-IR is kept on
disk, one file per entry, named by a SHA-256 of the entry's key (descriptor, target, libmathdx and
NVRTC versions). A file holds a small header (magic, a JSON record with the key, the symbol name and
the payload's SHA-256) and then the payload. Writers write a temporary file in the same folder and
``os.replace`` it into place, so a reader sees a whole entry or none, and two processes writing the
same entry at once both succeed. An entry whose checksum or key does not match is treated as a miss
and rewritten.

The folder is, in order: what :func:`set_cache_dir` set; ``$NVMATHX_CACHE_DIR``;
``$XDG_CACHE_HOME/nvmathx``; ``~/.cache/nvmathx``. Generated code goes under ``device/`` in it.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from dataclasses import dataclass

__all__ = ["CacheInfo", "CodeEntry", "cache_dir", "set_cache_dir", "cache_info", "clear_cache", "load", "store"]

_MAGIC = b"NVMATHX-DEVICE-CODE-1\n"
_SUFFIX = ".ltoir-entry"

_override: str | None = None
_counters = {"hits": 0, "misses": 0, "corrupted": 0}
_counter_lock = threading.Lock()


@dataclass(frozen=True)
class CodeEntry:
    """Generated code and the symbol it defines."""

    symbol: str
    code: bytes


@dataclass(frozen=True)
class CacheInfo:
    """What :func:`cache_info` reports.

    Attributes
    ----------
    directory : str
        The folder entries are read from and written to.
    entries : int
        Entry files now in the folder.
    size_bytes : int
        Their total size.
    hits, misses, corrupted : int
        Look-ups in this process that found a valid entry, found none, or found a damaged one
        (which then counts as a miss as well).
    """

    directory: str
    entries: int
    size_bytes: int
    hits: int
    misses: int
    corrupted: int


def set_cache_dir(path: str | os.PathLike | None) -> None:
    """Use ``path`` for the code cache in this process (``None`` restores the default search).

    The folder is created on first write.
    """
    global _override
    _override = None if path is None else os.fspath(path)


def cache_dir() -> str:
    """The folder that holds generated device code."""
    root = _override or os.environ.get("NVMATHX_CACHE_DIR")
    if not root:
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = xdg if xdg else os.path.join(os.path.expanduser("~"), ".cache")
        root = os.path.join(base, "nvmathx")
    return os.path.join(root, "device")


def entry_name(key: dict) -> str:
    """The file name of the entry for ``key`` (a JSON-serialisable dict)."""
    return hashlib.sha256(_canonical(key)).hexdigest() + _SUFFIX


def _canonical(key: dict) -> bytes:
    return json.dumps(key, sort_keys=True, separators=(",", ":")).encode()


def _count(name: str) -> None:
    with _counter_lock:
        _counters[name] += 1


def load(key: dict) -> CodeEntry | None:
    """The entry stored for ``key``, or None when absent, unreadable or damaged."""
    path = os.path.join(cache_dir(), entry_name(key))
    try:
        with open(path, "rb") as file:
            blob = file.read()
    except OSError:
        _count("misses")
        return None
    entry = _decode(blob, key)
    if entry is None:
        _count("corrupted")
        _count("misses")
        return None
    _count("hits")
    return entry


def _decode(blob: bytes, key: dict) -> CodeEntry | None:
    if not blob.startswith(_MAGIC):
        return None
    header_end = blob.find(b"\n", len(_MAGIC))
    if header_end < 0:
        return None
    try:
        header = json.loads(blob[len(_MAGIC) : header_end])
    except ValueError:
        return None
    payload = blob[header_end + 1 :]
    if not isinstance(header, dict) or header.get("key") != json.loads(_canonical(key)):
        return None
    if header.get("size") != len(payload) or header.get("sha256") != hashlib.sha256(payload).hexdigest():
        return None
    symbol = header.get("symbol")
    return CodeEntry(symbol, payload) if isinstance(symbol, str) else None


def store(key: dict, entry: CodeEntry) -> str | None:
    """Write ``entry`` for ``key`` atomically; returns the path, or None if the folder is not writable.

    A cache that cannot be written costs time, not correctness, so write failures are not raised.
    """
    folder = cache_dir()
    header = {
        "key": json.loads(_canonical(key)),
        "symbol": entry.symbol,
        "size": len(entry.code),
        "sha256": hashlib.sha256(entry.code).hexdigest(),
    }
    blob = _MAGIC + json.dumps(header, sort_keys=True).encode() + b"\n" + entry.code
    path = os.path.join(folder, entry_name(key))
    try:
        os.makedirs(folder, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=_SUFFIX)
        try:
            with os.fdopen(descriptor, "wb") as file:
                file.write(blob)
            os.replace(temporary, path)
        except BaseException:
            _remove_quietly(temporary)
            raise
    except OSError:
        return None
    return path


def _remove_quietly(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass


def _entry_files(folder: str) -> list[str]:
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    return [os.path.join(folder, name) for name in names if name.endswith(_SUFFIX) and not name.startswith(".")]


def cache_info() -> CacheInfo:
    """The code cache's folder, its entries and their size, and this process's hit/miss counts."""
    folder = cache_dir()
    files = _entry_files(folder)
    size = 0
    for path in files:
        try:
            size += os.path.getsize(path)
        except OSError:
            pass
    with _counter_lock:
        counts = dict(_counters)
    return CacheInfo(folder, len(files), size, counts["hits"], counts["misses"], counts["corrupted"])


def clear_cache() -> int:
    """Delete every entry in the code cache folder; returns how many were removed.

    Descriptors already built in this process keep the code they hold.
    """
    removed = 0
    for path in _entry_files(cache_dir()):
        try:
            os.remove(path)
            removed += 1
        except OSError:
            pass
    return removed
