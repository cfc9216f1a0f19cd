"""The key of a link step, and the libraries that identify the linker, for the on-disk image cache.

Linking a kernel with generated LTO-IR (megabytes per function) takes seconds, every process. A
compiler's registration (``nvmathx.device_api._link_cache`` for numba-cuda) hands the linker's
inputs here and gets a key: every input object's kind, name and SHA-256 of its bytes, the linker
options (architecture, LTO, register limit, ...), and the linker's identity (backend, nvJitLink
version and library file, driver version, cuda.core version). A change in a kernel's source or
argument types changes its PTX, a change in a linked function changes its LTO-IR, so either gives
a new key; the image itself is kept by :mod:`.cache` (``load_linked`` / ``store_linked``).

``NVMATHX_LINK_CACHE=0`` turns the cache off (read on every link). Nothing here imports a compiler.
"""

from __future__ import annotations

import functools
import hashlib
import os
import warnings

__all__ = ["ENVIRONMENT_VARIABLE", "enabled", "link_key", "linker_identity", "library_file"]

ENVIRONMENT_VARIABLE = "NVMATHX_LINK_CACHE"
_FORMAT = 1  # bump when what a key covers changes


def enabled() -> bool:
    """Whether linked images are cached (``NVMATHX_LINK_CACHE`` unset or not 0/false/no/off)."""
    return os.environ.get(ENVIRONMENT_VARIABLE, "1").strip().lower() not in ("0", "false", "no", "off")


def _digest(data) -> str | None:
    if isinstance(data, (bytes, bytearray, memoryview)):
        return hashlib.sha256(data).hexdigest()
    return None  # a path or an unknown form: its bytes are not in hand, so no key


def link_key(objects, arch: str, options: str) -> dict | None:
    """The cache key of linking ``objects`` (``(kind, name, data)`` in link order) for ``arch`` with
    the linker ``options`` (their repr); None when an input's bytes are not in hand or the linker
    cannot be identified."""
    identity = linker_identity()
    if identity is None:
        return None
    listed = []
    for kind, name, data in objects:
        digest = _digest(data)
        if digest is None:
            return None
        listed.append([str(kind), name, digest])
    return {
        "format": _FORMAT,
        "purpose": "linked-cubin",
        "arch": arch,
        "options": options,
        "objects": listed,
        "linker": identity,
    }


@functools.lru_cache(maxsize=1)
def linker_identity() -> dict | None:
    """What identifies the linker cuda.core will use, or None when it cannot be told."""
    try:
        import cuda.core
        from cuda.core import Linker
    except Exception:
        return None
    # cuda.core picks the backend from what is installed, which the versions below record, so a
    # cuda.core without which_backend still gets a key that changes with the installation.
    backend = "undetermined"
    if hasattr(Linker, "which_backend"):
        try:
            with warnings.catch_warnings():  # the link itself warns about a missing nvJitLink
                warnings.simplefilter("ignore")
                backend = str(Linker.which_backend())
        except Exception:
            pass
    identity = {"backend": backend, "cuda_core": getattr(cuda.core, "__version__", "?")}
    try:
        from cuda.bindings import nvjitlink

        identity["nvjitlink"] = list(nvjitlink.version())
        identity["nvjitlink_file"] = library_file("nvJitLink")
    except Exception:
        identity["nvjitlink"] = None
    try:
        from cuda.bindings import driver

        status, version = driver.cuDriverGetVersion()
        identity["driver"] = int(version) if int(status) == 0 else None
    except Exception:
        identity["driver"] = None
    return identity


def library_file(name: str) -> list | None:
    """Path, size and modification time of the loaded shared library ``name`` (patch releases keep
    the version numbers nvJitLink and NVVM report), or None when it cannot be found."""
    try:
        from cuda.pathfinder import load_nvidia_dynamic_lib

        path = load_nvidia_dynamic_lib(name).abs_path
        stat = os.stat(path)
    except Exception:
        return None
    return [path, stat.st_size, stat.st_mtime_ns]
