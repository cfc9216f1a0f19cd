"""Find and load the CUDA shared libraries nvmathx calls through ctypes.

Order of search, per library:

1. the environment variable ``NVMATHX_<NAME>_PATH`` (for example ``NVMATHX_CUBLASLT_PATH``),
   the full path of the shared library;
2. ``cuda.pathfinder.load_nvidia_dynamic_lib`` (NVIDIA wheels, conda, the system loader,
   ``CUDA_PATH``/``CUDA_HOME``);
3. ``nvidia/*/lib`` and ``nvidia/*/*/lib`` under every ``sys.path`` entry, which covers
   ``pip install --target`` layouts that older pathfinder versions do not search.

A library is loaded once per process; a failure raises :class:`LibraryNotFoundError` naming the pip
package to install and the variable that overrides the search.
"""

from __future__ import annotations

import ctypes
import glob
import os
import sys
import threading
from dataclasses import dataclass
from typing import Callable

from .._errors import LibraryNotFoundError

__all__ = ["LIBRARIES", "DISTRIBUTED_LIBRARIES", "LoadedLibrary", "load_library", "library_report", "library_version",
           "FunctionTable"]


@dataclass(frozen=True)
class _LibrarySpec:
    name: str  # cuda.pathfinder's name
    file_stem: str  # lib<stem>.so.*
    pip_package: str  # what to install (CUDA 13 flavour; the cu12 one is named in the message)

    @property
    def env_var(self) -> str:
        return f"NVMATHX_{self.name.upper()}_PATH"


LIBRARIES = {
    spec.name: spec
    for spec in (
        _LibrarySpec("cublasLt", "cublasLt", "nvidia-cublas (or nvmathx[cu13] / nvmathx[cu12])"),
        _LibrarySpec("cublas", "cublas", "nvidia-cublas (or nvmathx[cu13] / nvmathx[cu12])"),
        _LibrarySpec("cusolver", "cusolver", "nvidia-cusolver (or nvmathx[cu13] / nvmathx[cu12])"),
        _LibrarySpec("cufft", "cufft", "nvidia-cufft (or nvmathx[cu13] / nvmathx[cu12])"),
        _LibrarySpec("cusparse", "cusparse", "nvidia-cusparse (or nvmathx[cu13] / nvmathx[cu12])"),
        _LibrarySpec("nvrtc", "nvrtc", "nvidia-cuda-nvrtc"),
        _LibrarySpec("nvJitLink", "nvJitLink", "nvidia-nvjitlink"),
        _LibrarySpec("mathdx", "mathdx", "nvidia-libmathdx-cu13>=0.4.2,<0.5 (or nvidia-libmathdx-cu12==0.3.1.9)"),
        _LibrarySpec("cudart", "cudart", "nvidia-cuda-runtime"),
        _LibrarySpec("curand", "curand", "nvidia-curand (nvidia-curand-cu12 for CUDA 12)"),
        _LibrarySpec("nccl", "nccl", "nvidia-nccl-cu13 (or nvmathx[distributed])"),
        _LibrarySpec("nvshmem_host", "nvshmem_host", "nvidia-nvshmem-cu13 (or nvmathx[distributed])"),
        _LibrarySpec("cublasmp", "cublasmp", "nvidia-cublasmp-cu13==0.7.* (or nvmathx[distributed])"),
        _LibrarySpec("cudss", "cudss", "'nvidia-cudss-cu13>=0.8,<2' (or nvmathx[sparse]; -cu12 for CUDA 12)"),
    )
}


@dataclass(frozen=True)
class LoadedLibrary:
    """A loaded shared library: the ctypes handle, its path, and how it was found."""

    name: str
    cdll: ctypes.CDLL
    path: str
    found_via: str


_loaded: dict[str, LoadedLibrary] = {}
_lock = threading.Lock()


def load_library(name: str) -> LoadedLibrary:
    """Load the CUDA library ``name`` (a key of :data:`LIBRARIES`) once and return it.

    Raises
    ------
    LibraryNotFoundError
        When no search step finds a library that loads.
    """
    loaded = _loaded.get(name)
    if loaded is not None:
        return loaded
    with _lock:
        if name not in _loaded:
            _loaded[name] = _search(LIBRARIES[name])
        return _loaded[name]


def _search(spec: _LibrarySpec) -> LoadedLibrary:
    failures = []
    override = os.environ.get(spec.env_var)
    if override:
        try:
            return LoadedLibrary(spec.name, ctypes.CDLL(override), override, spec.env_var)
        except OSError as error:
            # An explicit override that fails is an error, not a reason to look elsewhere.
            raise LibraryNotFoundError(spec.name, spec.pip_package, spec.env_var, str(error)) from None
    try:
        from cuda import pathfinder

        found = pathfinder.load_nvidia_dynamic_lib(spec.name)
        path = found.abs_path or ""
        cdll = ctypes.CDLL(path) if path else ctypes.CDLL(None, handle=found._handle_uint)
        return LoadedLibrary(spec.name, cdll, path, f"cuda.pathfinder ({found.found_via})")
    except Exception as error:  # ImportError, DynamicLibNotFoundError, OSError
        failures.append(f"cuda.pathfinder: {type(error).__name__}: {error}")
    for path in _sys_path_candidates(spec.file_stem):
        try:
            return LoadedLibrary(spec.name, ctypes.CDLL(path), path, "sys.path search")
        except OSError as error:
            failures.append(f"{path}: {error}")
    raise LibraryNotFoundError(spec.name, spec.pip_package, spec.env_var, "; ".join(failures)[:500])


def _sys_path_candidates(file_stem: str) -> list[str]:
    """Shared libraries named lib<stem>.so* in nvidia/*/lib folders under sys.path, newest first."""
    found = []
    for entry in sys.path:
        if not entry or not os.path.isdir(os.path.join(entry, "nvidia")):
            continue
        for pattern in ("nvidia/*/lib", "nvidia/*/*/lib"):
            for folder in glob.glob(os.path.join(entry, pattern)):
                found.extend(glob.glob(os.path.join(folder, f"lib{file_stem}.so*")))
    # Prefer the highest soname (cu13 before cu12) and real files before symlinks of the same name.
    return sorted(set(found), key=lambda p: (_soname_version(p), not os.path.islink(p)), reverse=True)


def _soname_version(path: str) -> tuple[int, ...]:
    suffix = os.path.basename(path).split(".so")[-1].lstrip(".")
    return tuple(int(part) for part in suffix.split(".") if part.isdigit())


DISTRIBUTED_LIBRARIES = ("nccl", "nvshmem_host", "cublasmp")  # reported in python -m nvmathx's distributed section


def library_report(names=None) -> list[tuple[str, str, str]]:
    """(name, path or error, how found) for every known library (or those ``names``), loading each.

    Used by ``python -m nvmathx``; never raises.
    """
    rows = []
    for name in names if names is not None else LIBRARIES:
        try:
            loaded = load_library(name)
            rows.append((name, loaded.path or "(already loaded)", loaded.found_via))
        except LibraryNotFoundError as error:
            rows.append((name, "not found", f"pip install {error.pip_package}"))
    return rows


def _ints(function, count: int, kind=ctypes.c_int) -> tuple[int, ...] | None:
    """Call ``function(kind*, ...)`` with ``count`` outputs; None on a nonzero status."""
    values = [kind(0) for _ in range(count)]
    function.argtypes = [ctypes.POINTER(kind)] * count
    function.restype = ctypes.c_int
    return tuple(int(value.value) for value in values) if function(*map(ctypes.byref, values)) == 0 else None


def _properties(function) -> tuple[int, ...] | None:
    """``xxxGetProperty(MAJOR_VERSION | MINOR_VERSION | PATCH_LEVEL, int*)`` (libraryPropertyType 0, 1, 2)."""
    function.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_int)]
    function.restype = ctypes.c_int
    parts = []
    for kind in (0, 1, 2):
        value = ctypes.c_int(0)
        if function(kind, ctypes.byref(value)) != 0:
            return None
        parts.append(value.value)
    return tuple(parts)


def _split(code: int, base: int = 100) -> tuple[int, int, int]:
    """major * base**2 + minor * base + patch."""
    return code // (base * base), code // base % base, code % base


def _cublaslt_version(function) -> tuple[int, ...]:
    function.argtypes, function.restype = [], ctypes.c_size_t
    return _split(int(function()))


def _nccl_code(code: int) -> tuple[int, ...]:
    return _split(code) if code >= 10000 else (code // 1000, code // 100 % 10, code % 100)  # NCCL < 2.9: * 1000


# How each library reports its own version: (symbol, reader of the ctypes function -> (major, minor[, patch])).
_VERSION_READERS = {
    "cublasLt": ("cublasLtGetVersion", _cublaslt_version),
    "cublas": ("cublasGetProperty", _properties),
    "cufft": ("cufftGetProperty", _properties),
    "curand": ("curandGetProperty", _properties),
    "nvrtc": ("nvrtcVersion", lambda f: _ints(f, 2)),
    "nvJitLink": ("nvJitLinkVersion", lambda f: _ints(f, 2, ctypes.c_uint)),
    "cudart": ("cudaRuntimeGetVersion", lambda f: (lambda v: v and (v[0] // 1000, v[0] % 1000 // 10))(_ints(f, 1))),
    "mathdx": ("mathdxGetVersionEx", lambda f: _ints(f, 3)),
    "nccl": ("ncclGetVersion", lambda f: (lambda v: v and _nccl_code(v[0]))(_ints(f, 1))),
    "nvshmem_host": ("nvshmemx_vendor_get_version_info", lambda f: _ints(f, 3)),
    # cuBLASMp 0.7 encodes major * 1000 + minor * 100 + patch, 0.8 on major * 10000 + ...: the same while major is 0
    "cublasmp": ("cublasMpGetVersion", lambda f: (lambda v: v and _split(v[0]))(_ints(f, 1))),
}


def library_version(name: str) -> tuple[int, ...] | None:
    """The loaded library ``name``'s own report of its version, or None (not loaded, or it cannot say).

    Reads through a fresh ctypes function object, so a binding module's signatures are untouched;
    never raises.
    """
    loaded = _loaded.get(name)
    if loaded is None or name not in _VERSION_READERS:
        return None
    symbol, read = _VERSION_READERS[name]
    try:
        return read(loaded.cdll[symbol]) or None  # cdll[symbol]: a new function object, not the cached attribute
    except Exception:  # noqa: BLE001  (a report: an absent symbol or odd build says nothing)
        return None


class FunctionTable:
    """A binding module's signature table, bound to its library on first use.

    ``signatures`` maps each C symbol to ``(restype, argtypes)``, or ``(restype, argtypes,
    required)`` where ``required=False`` marks a symbol only some releases export (it is left out
    of the table where missing). Calling the table runs ``before_load`` (if given), loads the library
    once (thread-safe) and returns ``{symbol: ctypes function}`` with those types set.
    ``after_load(functions)`` (if given) sees that table first and may refuse the library by
    raising; the table then stays unbound and every later call raises again.
    """

    def __init__(self, library: str, signatures: dict, before_load: Callable[[], object] | None = None,
                 after_load: Callable[[dict], object] | None = None) -> None:
        self.library = library
        self.signatures = signatures
        self.before_load = before_load
        self.after_load = after_load
        self._functions: dict | None = None
        self._lock = threading.Lock()

    def __call__(self) -> dict:
        functions = self._functions
        if functions is None:
            with self._lock:
                if self._functions is None:
                    if self.before_load is not None:
                        self.before_load()
                    cdll = load_library(self.library).cdll
                    bound = {}
                    for name, (restype, argtypes, *required) in self.signatures.items():
                        function = getattr(cdll, name) if required in ([], [True]) else getattr(cdll, name, None)
                        if function is None:
                            continue
                        function.restype = restype
                        function.argtypes = argtypes
                        bound[name] = function
                    if self.after_load is not None:
                        self.after_load(bound)
                    self._functions = bound
                functions = bound
        return functions


def address(pointer: ctypes.c_void_p) -> int:
    """The handle a create call wrote into ``pointer`` (0 for NULL, which a successful call never writes)."""
    return pointer.value or 0
