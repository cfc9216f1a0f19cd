"""Both compilers' link steps through the on-disk image cache of :mod:`nvmathx._codegen.link`.

numba-cuda's own ``cache=True`` refuses kernels that link files. For code libraries that link
nvmathx code, numba-cuda's ``CUDACodeLibrary.get_cubin`` is wrapped: the linker is prepared as
numba-cuda prepares it (the kernel's PTX or LTO-IR, then the linking files, in a fixed order), its
inputs and options are keyed by :func:`nvmathx._codegen.link.link_key`, and on a hit the stored
cubin is handed to numba-cuda instead of linking; on a miss the link runs as before and its result
is stored.

numba-cuda-mlir links with its own copy of numba-cuda's ``_Linker``, whose ``complete`` is wrapped
in the same way (:func:`install_numba_cuda_mlir`): a link whose inputs include nvmathx code (LTO-IR
whose digest :func:`mark_nvmathx_bytes` recorded; the linker's objects carry no names) is keyed,
and a hit returns the stored cubin.

Code libraries that link no nvmathx code, and any link whose inputs cannot be hashed, go through
the compiler unchanged, as does every link under numba-cuda releases other than 0.30 (whose
``get_cubin`` the wrapper reproduces). Entries live beside the generated code (``cache_dir()``)
and :func:`clear_cache` removes them too.
"""

from __future__ import annotations

import functools
import hashlib

from .._codegen import cache as _cache
from .._codegen import link
from .._core.logs import timed_step

__all__ = [
    "mark_nvmathx_code", "mark_nvmathx_bytes", "links_nvmathx_code", "link_key", "install", "install_numba_cuda_mlir",
]

# ids of the LinkableCode objects nvmathx attaches; they live as long as the process (_numba_cuda)
_nvmathx_code_ids: set[int] = set()
# SHA-256 digests of the LTO-IR nvmathx attaches to numba-cuda-mlir kernels, by size in bytes (a
# link's other objects are hashed only where their size matches)
_nvmathx_digests: dict[int, set[str]] = {}


def mark_nvmathx_code(linkable) -> None:
    """Record ``linkable`` (kept alive by the caller) as code that nvmathx attaches to kernels."""
    _nvmathx_code_ids.add(id(linkable))


def mark_nvmathx_bytes(code: bytes) -> None:
    """Record ``code`` (LTO-IR) as code that nvmathx attaches to numba-cuda-mlir kernels."""
    _nvmathx_digests.setdefault(len(code), set()).add(hashlib.sha256(code).hexdigest())


def links_nvmathx_code(library) -> bool:
    """Whether the numba code library ``library`` links code nvmathx attached."""
    return any(id(linked) in _nvmathx_code_ids for linked in library._linking_files)


def link_key(linker) -> dict | None:
    """The cache key of what numba-cuda's ``_Linker`` ``linker`` would link, or None if unknown."""
    objects = [(code.code_type, code.name, code.code) for code in linker._object_codes]
    return link.link_key(objects, linker.arch, repr(linker._get_linker_options(ptx=False)))


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
        with timed_step(f"nvJitLink link of {library.name}"):
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
        if not links_nvmathx_code(self):
            return original(self, cc)
        self._lto = True  # a kernel that reaches nvmathx code through a device function (see _numba_cuda._link)
        if not link.enabled():
            return original(self, cc)
        return _cached_cubin(self, cc, original)

    get_cubin._nvmathx_link_cache = True  # type: ignore[attr-defined]  # a marker on the wrapper
    CUDACodeLibrary.get_cubin = get_cubin
    return True


class _CachedLink:
    """Stands for the cuda.core linker of a link answered from the cache (nothing to close)."""

    def close(self) -> None:
        pass


def _is_nvmathx_object(code) -> bool:
    data = getattr(code, "code", None)
    if not isinstance(data, (bytes, bytearray)) or len(data) not in _nvmathx_digests:
        return False
    return hashlib.sha256(data).hexdigest() in _nvmathx_digests[len(data)]


def install_numba_cuda_mlir() -> bool:
    """Wrap numba-cuda-mlir's ``_Linker.complete`` (once); returns whether the wrapper is in place."""
    from numba_cuda_mlir.numba_cuda.cudadrv import driver

    original = driver._Linker.complete
    if getattr(original, "_nvmathx_link_cache", False):
        return True
    if not all(hasattr(driver._Linker, name) for name in ("_materialize_pending_cu", "_get_linker_options")):
        return False

    @functools.wraps(original)
    def complete(self):
        if not link.enabled():
            return original(self)
        self._materialize_pending_cu()  # .cu inputs become objects first; the original finds none left
        if not any(_is_nvmathx_object(code) for code in self._object_codes):
            return original(self)
        key = link_key(self)
        image = _cache.load_linked(key) if key is not None else None
        if image is not None:
            from cuda.core import ObjectCode

            self.linker, self._complete, self._info_log, self._error_log = _CachedLink(), True, image.info_log, ""
            return ObjectCode.from_cubin(image.cubin, name="nvmathx-linked.cubin")
        with timed_step("nvJitLink link of a numba-cuda-mlir kernel"):
            result = original(self)
        code = result.code
        if key is not None and isinstance(code, (bytes, bytearray)) and code:
            _cache.store_linked(key, _cache.LinkedImage(bytes(code), str(self._info_log or "")))
        return result

    complete._nvmathx_link_cache = True  # type: ignore[attr-defined]  # a marker on the wrapper
    driver._Linker.complete = complete
    return True
