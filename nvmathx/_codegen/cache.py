"""The on-disk cache of generated device code and of linked kernel images.

libmathdx keeps no cache and spends seconds of CPU per descriptor, so generated LTO-IR is kept on
disk, one file per entry, named by a SHA-256 of the entry's key (descriptor, target, libmathdx and
NVRTC versions). Linking a kernel with that LTO-IR (nvJitLink, seconds per kernel) is cached the
same way, as a second kind of entry holding the linked cubin (see :mod:`.link`); so are the cubins
NVRTC makes of nvmathx's own CUDA C++ kernels (:class:`.launch.KernelSet`). A file holds a
small header (magic, a JSON record with the key, the payload's size and SHA-256, and the kind's own
fields) and then the payload. Writers write a temporary file in the same folder and
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
from dataclasses import dataclass, field

__all__ = [
    "CacheInfo",
    "CodeEntry",
    "LinkedImage",
    "cache_dir",
    "set_cache_dir",
    "cache_info",
    "clear_cache",
    "load",
    "store",
    "load_linked",
    "store_linked",
]

# kind -> (magic, file suffix)
_KINDS = {
    "code": (b"NVMATHX-DEVICE-CODE-1\n", ".ltoir-entry"),
    "linked": (b"NVMATHX-LINKED-IMAGE-1\n", ".cubin-entry"),
}
_SUFFIXES = tuple(suffix for _, suffix in _KINDS.values())
_COUNTER_PREFIX = {"code": "", "linked": "link_"}

_override: str | None = None
_counters = {f"{prefix}{name}": 0 for prefix in _COUNTER_PREFIX.values() for name in ("hits", "misses", "corrupted")}
_counter_lock = threading.Lock()


@dataclass(frozen=True)
class CodeEntry:
    """Generated code and the symbol it defines."""

    symbol: str
    code: bytes


@dataclass(frozen=True)
class LinkedImage:
    """A kernel's linked cubin and the linker's info log; ``symbols``: the mangled name of each
    name expression it was compiled for (an NVRTC kernel set's, see :mod:`.launch`)."""

    cubin: bytes
    info_log: str
    symbols: dict = field(default_factory=dict)


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
        Look-ups of generated code in this process that found a valid entry, found none, or found
        a damaged one (which then counts as a miss as well).
    link_hits, link_misses, link_corrupted : int
        The same for linked kernel images (and the cubins of nvmathx's own NVRTC kernels).
    """

    directory: str
    entries: int
    size_bytes: int
    hits: int
    misses: int
    corrupted: int
    link_hits: int = 0
    link_misses: int = 0
    link_corrupted: int = 0


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


def symbol_for(prefix: str, key: dict) -> str:
    """A symbol name for the generated code that ``key`` describes: ``prefix`` and a digest of the
    key, so that different code never shares a name when a kernel links several."""
    return f"{prefix}_{hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:20]}"


def entry_name(key: dict, kind: str = "code") -> str:
    """The file name of the ``kind`` entry for ``key`` (a JSON-serialisable dict)."""
    return hashlib.sha256(_canonical(key)).hexdigest() + _KINDS[kind][1]


def _canonical(key: dict) -> bytes:
    return json.dumps(key, sort_keys=True, separators=(",", ":")).encode()


def _count(kind: str, name: str) -> None:
    with _counter_lock:
        _counters[_COUNTER_PREFIX[kind] + name] += 1


def _read(key: dict, kind: str) -> tuple[dict, bytes] | None:
    """The header and payload of the ``kind`` entry for ``key``; None when absent or damaged."""
    path = os.path.join(cache_dir(), entry_name(key, kind))
    try:
        with open(path, "rb") as file:
            blob = file.read()
    except OSError:
        _count(kind, "misses")
        return None
    decoded = _decode(blob, key, _KINDS[kind][0])
    if decoded is None:
        _count(kind, "corrupted")
        _count(kind, "misses")
        return None
    _count(kind, "hits")
    return decoded


def _decode(blob: bytes, key: dict, magic: bytes) -> tuple[dict, bytes] | None:
    if not blob.startswith(magic):
        return None
    header_end = blob.find(b"\n", len(magic))
    if header_end < 0:
        return None
    try:
        header = json.loads(blob[len(magic) : header_end])
    except ValueError:
        return None
    payload = blob[header_end + 1 :]
    if not isinstance(header, dict) or header.get("key") != json.loads(_canonical(key)):
        return None
    if header.get("size") != len(payload) or header.get("sha256") != hashlib.sha256(payload).hexdigest():
        return None
    return header, payload


def _write(key: dict, kind: str, fields: dict, payload: bytes) -> str | None:
    """Write an entry atomically; returns the path, or None if the folder is not writable.

    A cache that cannot be written costs time, not correctness, so write failures are not raised.
    """
    magic, suffix = _KINDS[kind]
    folder = cache_dir()
    header = {
        **fields,
        "key": json.loads(_canonical(key)),
        "size": len(payload),
        "sha256": hashlib.sha256(payload).hexdigest(),
    }
    blob = magic + json.dumps(header, sort_keys=True).encode() + b"\n" + payload
    path = os.path.join(folder, entry_name(key, kind))
    try:
        os.makedirs(folder, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=suffix)
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


def load(key: dict) -> CodeEntry | None:
    """The generated code stored for ``key``, or None when absent, unreadable or damaged."""
    decoded = _read(key, "code")
    if decoded is None:
        return None
    header, payload = decoded
    symbol = header.get("symbol")
    return CodeEntry(symbol, payload) if isinstance(symbol, str) else None


def store(key: dict, entry: CodeEntry) -> str | None:
    """Write generated code for ``key``; returns the path, or None if the folder is not writable."""
    return _write(key, "code", {"symbol": entry.symbol}, entry.code)


def load_linked(key: dict) -> LinkedImage | None:
    """The linked image stored for ``key``, or None when absent, unreadable or damaged."""
    decoded = _read(key, "linked")
    if decoded is None:
        return None
    header, payload = decoded
    info_log, symbols = header.get("info_log"), header.get("symbols", {})
    if not (isinstance(info_log, str) and payload and isinstance(symbols, dict)):
        return None
    return LinkedImage(payload, info_log, symbols)


def has_linked(key: dict) -> bool:
    """Whether a linked image for ``key`` is on disk (not read: a damaged one is found at load)."""
    return os.path.exists(os.path.join(cache_dir(), entry_name(key, "linked")))


def store_linked(key: dict, image: LinkedImage) -> str | None:
    """Write a linked image for ``key``; returns the path, or None if the folder is not writable."""
    fields = {"info_log": image.info_log, **({"symbols": image.symbols} if image.symbols else {})}
    return _write(key, "linked", fields, image.cubin)


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
    return [os.path.join(folder, name) for name in names if name.endswith(_SUFFIXES) and not name.startswith(".")]


def cache_info() -> CacheInfo:
    """The cache's folder, its entries (code and linked images) and their size, and this process's
    hit/miss counts."""
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
    return CacheInfo(folder, len(files), size, **counts)


def clear_cache() -> int:
    """Delete every entry (generated code and linked images) in the cache folder; returns how many
    were removed.

    Descriptors and kernels already built in this process keep the code they hold.
    """
    removed = 0
    for path in _entry_files(cache_dir()):
        try:
            os.remove(path)
            removed += 1
        except OSError:
            pass
    return removed
