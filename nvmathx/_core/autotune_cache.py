"""Autotuning results that outlive the process: the store behind :mod:`nvmathx.autotune_cache`.

An entry is the outcome of one autotuning (the algorithms, fastest first, with their times) under
a key that holds everything the outcome depends on: the GPU model and SM count, the driver, the
library's version, the problem, the epilog, the options, the workspace limit and the operands'
alignment. The caller (``Matmul.autotune``) builds the key; this module stores, finds and ships
entries, and never decides whether a stored algorithm is still good (the caller re-checks it with
the library before use, and tunes again when it is not).

Off until :meth:`AutotuneCache.enable`. Enabled, entries live in a folder (default:
``autotune/`` beside the device-code cache, :func:`nvmathx.cache_dir`), one JSON file per entry
named by a SHA-256 of its key, written to a temporary file and renamed into place: two processes
writing at once both succeed and a reader sees a whole entry or none. A file that does not parse,
or whose key differs from the one asked for, is a miss. :meth:`~AutotuneCache.save` and
:meth:`~AutotuneCache.load` move all entries in one file, so a job can ship its tuning with its code.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from typing import NamedTuple

from .errors import OptionsError

__all__ = ["AutotuneCache", "AutotuneCacheInfo", "entry_digest", "store"]

_FORMAT = 1


class AutotuneCacheInfo(NamedTuple):
    """What :meth:`AutotuneCache.info` reports."""

    enabled: bool
    path: str | None
    entries: int
    hits: int
    misses: int
    rejected: int


def entry_digest(key: dict) -> str:
    """The SHA-256 of a key's canonical JSON: its file name, and its identity in a saved bundle."""
    return hashlib.sha256(json.dumps(key, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _default_folder() -> str:
    from .._codegen.cache import cache_dir

    return os.path.join(os.path.dirname(cache_dir()), "autotune")


def _write_atomically(path: str, text: str) -> None:
    folder = os.path.dirname(path) or "."
    os.makedirs(folder, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".json")
    try:
        with os.fdopen(handle, "w") as file:
            file.write(text)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def _valid_entry(entry) -> bool:
    return (isinstance(entry, dict) and entry.get("format") == _FORMAT and isinstance(entry.get("key"), dict)
            and isinstance(entry.get("algorithms"), list) and bool(entry["algorithms"])
            and all(isinstance(item, dict) for item in entry["algorithms"]))


class AutotuneCache:
    """The process's store of autotuning results (one instance, :data:`store`, served by the
    functions of :mod:`nvmathx.autotune_cache`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._folder: str | None = None
        self._entries: dict[str, dict] = {}
        self._hits = self._misses = self._rejected = 0

    @property
    def enabled(self) -> bool:
        """Whether autotuning consults and records entries."""
        return self._folder is not None

    def enable(self, path: str | os.PathLike | None = None) -> None:
        """Consult and record autotuning results, kept in the folder ``path`` (default: ``autotune/``
        beside the device-code cache). Entries already there are used by later autotuning; new
        ones are written there as they are made, for this and later processes."""
        if path is not None and not isinstance(path, (str, os.PathLike)):
            raise OptionsError("path", f"expected a folder path or None (got {type(path).__name__})")
        folder = os.fspath(path) if path is not None else _default_folder()
        if os.path.exists(folder) and not os.path.isdir(folder):
            raise OptionsError("path", f"{folder!r} is a file; autotune_cache.enable takes a folder")
        os.makedirs(folder, exist_ok=True)
        with self._lock:
            self._folder = folder

    def disable(self) -> None:
        """Stop consulting and recording (entries in memory and on disk stay)."""
        with self._lock:
            self._folder = None

    def clear(self) -> None:
        """Forget every entry: in memory, and in the enabled folder; the counts restart at 0."""
        with self._lock:
            self._entries.clear()
            self._hits = self._misses = self._rejected = 0
            folder = self._folder
        if folder is not None:
            for name in os.listdir(folder):
                if name.endswith(".json") and not name.startswith("."):
                    try:
                        os.unlink(os.path.join(folder, name))
                    except FileNotFoundError:
                        pass

    def info(self) -> AutotuneCacheInfo:
        """Whether it is enabled, its folder, the entries it knows (in memory and in the folder),
        and the hits, misses and rejected entries since the last :meth:`clear`."""
        with self._lock:
            digests = set(self._entries)
            folder = self._folder
            counts = self._hits, self._misses, self._rejected
        if folder is not None:
            digests |= {name[:-5] for name in os.listdir(folder) if name.endswith(".json") and not name.startswith(".")}
        return AutotuneCacheInfo(folder is not None, folder, len(digests), *counts)

    def save(self, path: str | os.PathLike) -> int:
        """Write every entry known (in memory and in the enabled folder) to the file ``path``, for
        :meth:`load` in another process or machine. Returns the number of entries written."""
        if not isinstance(path, (str, os.PathLike)):
            raise OptionsError("path", f"expected a file path (got {type(path).__name__})")
        entries = dict(self._folder_entries())
        with self._lock:
            entries.update(self._entries)
        _write_atomically(os.fspath(path), json.dumps({"format": _FORMAT, "entries": list(entries.values())}))
        return len(entries)

    def load(self, path: str | os.PathLike) -> int:
        """Read the entries of a file :meth:`save` wrote; they answer later autotuning (enabled or
        not: loading is asking for them) and are copied into the enabled folder. Returns their number.

        Raises
        ------
        OptionsError
            Naming ``path``, for a file that cannot be read or is no saved autotune cache.
        """
        if not isinstance(path, (str, os.PathLike)):
            raise OptionsError("path", f"expected a file path (got {type(path).__name__})")
        try:
            with open(path) as file:
                bundle = json.load(file)
        except (OSError, ValueError) as error:
            raise OptionsError("path", f"cannot read an autotune cache from {os.fspath(path)!r}: {error}") from None
        bundled = isinstance(bundle, dict) and bundle.get("format") == _FORMAT
        if not bundled or not isinstance(bundle.get("entries"), list):
            raise OptionsError("path", f"{os.fspath(path)!r} is not an nvmathx autotune cache (format {_FORMAT})")
        entries = [entry for entry in bundle["entries"] if _valid_entry(entry)]
        with self._lock:
            for entry in entries:
                self._entries[entry_digest(entry["key"])] = entry
            folder = self._folder
        if folder is not None:
            for entry in entries:
                _write_atomically(os.path.join(folder, entry_digest(entry["key"]) + ".json"), json.dumps(entry))
        return len(entries)

    # -- what autotuning calls -----------------------------------------------------------------

    @property
    def active(self) -> bool:
        """Whether a lookup can find anything (enabled, or entries loaded)."""
        return self._folder is not None or bool(self._entries)

    def lookup(self, key: dict) -> list[dict] | None:
        """The algorithms stored for ``key`` (fastest first), or None (counted as a miss)."""
        digest = entry_digest(key)
        with self._lock:
            entry = self._entries.get(digest)
            folder = self._folder
        if entry is None and folder is not None:
            entry = self._read(os.path.join(folder, digest + ".json"))
        if entry is None or entry["key"] != key:
            with self._lock:
                self._misses += 1
            return None
        with self._lock:
            self._entries[digest] = entry
            self._hits += 1
        return list(entry["algorithms"])

    def record(self, key: dict, algorithms: list[dict]) -> None:
        """Keep ``algorithms`` (fastest first) for ``key``; written to the folder when enabled."""
        if not self.enabled or not algorithms:
            return
        entry = {"format": _FORMAT, "key": key, "algorithms": list(algorithms)}
        digest = entry_digest(key)
        with self._lock:
            self._entries[digest] = entry
            folder = self._folder
        if folder is not None:
            try:
                _write_atomically(os.path.join(folder, digest + ".json"), json.dumps(entry))
            except OSError:
                pass  # a read-only or full disk costs the next process a tuning, not this call

    def reject(self, key: dict) -> None:
        """Drop the entry of ``key``: a stored algorithm the library no longer accepts."""
        digest = entry_digest(key)
        with self._lock:
            self._entries.pop(digest, None)
            self._rejected += 1
            folder = self._folder
        if folder is not None:
            try:
                os.unlink(os.path.join(folder, digest + ".json"))
            except FileNotFoundError:
                pass

    def _read(self, path: str) -> dict | None:
        try:
            with open(path) as file:
                entry = json.load(file)
        except (OSError, ValueError):
            return None
        return entry if _valid_entry(entry) else None

    def _folder_entries(self):
        folder = self._folder
        if folder is None:
            return
        for name in sorted(os.listdir(folder)):
            if name.endswith(".json") and not name.startswith("."):
                entry = self._read(os.path.join(folder, name))
                if entry is not None:
                    yield entry_digest(entry["key"]), entry


store = AutotuneCache()
"""The process's autotune cache, behind :mod:`nvmathx.autotune_cache` (off until enabled)."""
