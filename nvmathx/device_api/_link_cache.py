"""Linked kernel images kept on disk, so that a later process skips nvJitLink.

Linking a kernel with libmathdx's LTO-IR (megabytes per function) takes seconds, every process,
and numba-cuda's own ``cache=True`` refuses kernels that link files. For code libraries that link
nvmathx code, numba-cuda's ``CUDACodeLibrary.get_cubin`` is wrapped: the linker is prepared as
numba-cuda prepares it (the kernel's PTX or LTO-IR, then the linking files, in a fixed order), and
the key is a hash of exactly what the linker would be given: every input object's kind, name and
SHA-256 of its bytes, the linker options (architecture, LTO, register limit, ...), and the
linker's identity (backend, nvJitLink version and library file, driver version, cuda.core
version). A change in the kernel's source or argument types changes its PTX, a change in a linked
function changes its LTO-IR, so either gives a new key. On a hit the stored cubin is handed to
numba-cuda instead of linking; on a miss the link runs as before and its result is stored.

Code libraries that link no nvmathx code, and any link whose inputs cannot be hashed, go through
numba-cuda unchanged, as does every link under numba-cuda releases other than 0.30 (whose
``get_cubin`` the wrapper reproduces). ``NVMATHX_LINK_CACHE=0`` turns the cache off (read on every
link). Entries live beside the generated code (``cache_dir()``) and :func:`clear_cache` removes
them too.
"""

from __future__ import annotations

import functools
import hashlib
import os
import warnings

from . import _cache

__all__ = ["ENVIRONMENT_VARIABLE", "enabled", "mark_nvmathx_code", "links_nvmathx_code", "link_key", "install"]

ENVIRONMENT_VARIABLE = "NVMATHX_LINK_CACHE"
_FORMAT = 1  # bump when what a key covers changes

# ids of the LinkableCode objects nvmathx attaches; they live as long as the process (_numba_common)
_nvmathx_code_ids: set[int] = set()


def enabled() -> bool:
    """Whether linked images are cached (``NVMATHX_LINK_CACHE`` unset or not 0/false/no/off)."""
    return os.environ.get(ENVIRONMENT_VARIABLE, "1").strip().lower() not in ("0", "false", "no", "off")


def mark_nvmathx_code(linkable) -> None:
    """Record ``linkable`` (kept alive by the caller) as code that nvmathx attaches to kernels."""
    _nvmathx_code_ids.add(id(linkable))


def links_nvmathx_code(library) -> bool:
    """Whether the numba code library ``library`` links code nvmathx attached."""
    return any(id(linked) in _nvmathx_code_ids for linked in library._linking_files)


def _digest(data) -> str | None:
    if isinstance(data, (bytes, bytearray, memoryview)):
        return hashlib.sha256(data).hexdigest()
    return None  # a path or an unknown form: its bytes are not in hand, so no key


def link_key(linker) -> dict | None:
    """The cache key of what numba-cuda's ``_Linker`` ``linker`` would link, or None if unknown."""
    identity = linker_identity()
    if identity is None:
        return None
    objects = []
    for code in linker._object_codes:
        digest = _digest(code.code)
        if digest is None:
            return None
        objects.append([str(code.code_type), code.name, digest])
    return {
        "format": _FORMAT,
        "purpose": "linked-cubin",
        "arch": linker.arch,
        "options": repr(linker._get_linker_options(ptx=False)),
        "objects": objects,
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
        identity["nvjitlink_file"] = _library_file("nvJitLink")
    except Exception:
        identity["nvjitlink"] = None
    try:
        from cuda.bindings import driver

        status, version = driver.cuDriverGetVersion()
        identity["driver"] = int(version) if int(status) == 0 else None
    except Exception:
        identity["driver"] = None
    return identity


def _library_file(name: str) -> list | None:
    """Path, size and modification time of the loaded shared library ``name`` (patch releases keep
    the version numbers nvJitLink reports)."""
    try:
        from cuda.pathfinder import load_nvidia_dynamic_lib

        path = load_nvidia_dynamic_lib(name).abs_path
        stat = os.stat(path)
    except Exception:
        return None
    return [path, stat.st_size, stat.st_mtime_ns]


def _linking_order(linked) -> tuple:
    """A sort key that is the same in every process (numba-cuda keeps linking files in a set)."""
    if isinstance(linked, str):
        return (0, linked, "")
    return (1, str(getattr(linked, "name", "")), str(getattr(linked, "kind", "")))


def _add_inputs(library, linker, cc) -> None:
    """What ``CUDACodeLibrary._link_all`` adds, with the linking files in a fixed order."""
    from numba.cuda.cudadrv.libs import get_cudalib

    if linker.lto:
        linker.add_ltoir(library.get_ltoir(cc=cc))
    else:
        for ptx in library.get_asm_strs(cc=cc):
            linker.add_ptx(ptx.encode())
    for linked in sorted(library._linking_files, key=_linking_order):
        linker.add_file_guess_ext(linked, False)
    if library.needs_cudadevrt:
        linker.add_file_guess_ext(get_cudalib("cudadevrt", static=True), False)


def _cached_cubin(library, cc, link_uncached):
    from cuda.core import ObjectCode
    from numba.cuda.core import config
    from numba.cuda.cudadrv import driver

    cc = library._ensure_cc(cc)
    cubin = library._cubin_cache.get(cc)
    if cubin:
        return cubin
    if library._lto and config.DUMP_ASSEMBLY:
        return link_uncached(library, cc)
    linker = driver._Linker(max_registers=library._max_registers, cc=cc, lto=library._lto)
    _add_inputs(library, linker, cc)
    key = link_key(linker)
    image = _cache.load_linked(key) if key is not None else None
    if image is not None:
        cubin = ObjectCode.from_cubin(image.cubin, name=f"{library.name}.cubin")
        info_log = image.info_log
    else:
        cubin = linker.complete()
        info_log = linker.info_log
        code = cubin.code
        if key is not None and isinstance(code, (bytes, bytearray)) and code:
            _cache.store_linked(key, _cache.LinkedImage(bytes(code), str(info_log or "")))
    library._cubin_cache[cc] = cubin
    library._linkerinfo_cache[cc] = info_log
    return cubin


_REQUIRED = ("get_cubin", "_ensure_cc", "get_asm_strs", "get_ltoir", "name")
# numba-cuda releases whose get_cubin the wrapper reproduces (read from their source)
_SUPPORTED_NUMBA_CUDA = ((0, 30),)


def _numba_cuda_release() -> tuple[int, int] | None:
    try:
        import numba_cuda

        major, minor = numba_cuda.__version__.split(".")[:2]
        return int(major), int(minor)
    except Exception:
        return None


def install() -> bool:
    """Wrap ``CUDACodeLibrary.get_cubin`` (once); returns whether the wrapper is in place.

    Not installed (links stay uncached) for numba-cuda releases other than those whose
    ``get_cubin`` it reproduces, or when the code library or linker lacks what it relies on.
    """
    from numba.cuda.codegen import CUDACodeLibrary
    from numba.cuda.cudadrv import driver

    original = CUDACodeLibrary.get_cubin
    if getattr(original, "_nvmathx_link_cache", False):
        return True
    if _numba_cuda_release() not in _SUPPORTED_NUMBA_CUDA:
        return False
    if not all(hasattr(CUDACodeLibrary, name) for name in _REQUIRED) or not hasattr(driver, "_Linker"):
        return False
    if not all(hasattr(driver._Linker, name) for name in ("_get_linker_options", "add_file_guess_ext", "complete")):
        return False

    @functools.wraps(original)
    def get_cubin(self, cc=None):
        if not enabled() or not links_nvmathx_code(self):
            return original(self, cc)
        return _cached_cubin(self, cc, original)

    get_cubin._nvmathx_link_cache = True  # type: ignore[attr-defined]  # a marker on the wrapper
    CUDACodeLibrary.get_cubin = get_cubin
    return True
