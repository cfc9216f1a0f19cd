"""CUDA C++ kernels compiled with NVRTC once per device, and launched through cuda.core on the
caller's stream (so CUDA graphs capture them).

A :class:`KernelSet` is one source and the names of the template instances it exports; its module
for a device is compiled on first use (its cubin kept in the on-disk cache of :mod:`.cache`, so a
new process loads it instead of compiling again) and its kernels are kept per ``(device, name)``,
so a later launch does no driver lookup.
"""

from __future__ import annotations

import hashlib
import threading
from typing import Any

from .._core import device
from .._core.logs import timed_step
from . import cache, link
from .nvrtc import nvrtc_version

__all__ = ["BLOCK", "KernelSet", "core_stream", "grid", "launch"]

BLOCK = 256  # threads per block of every kernel here: each is a grid-stride loop


class KernelSet:
    """The kernels ``names`` (name expressions, e.g. ``"scale<float2, float>"``) of ``source``."""

    def __init__(self, source: str, names: tuple):
        self.source = source
        self.names = tuple(names)
        self._modules: dict[int, Any] = {}  # cuda.core ObjectCode
        self._kernels: dict[tuple, object] = {}
        self._lock = threading.Lock()

    def compile(self, arch: str, use_cache: bool = True):
        """The kernels as a cuda.core ObjectCode for ``arch`` (e.g. "sm_90"): from the disk cache
        (unless ``use_cache`` is False), or compiled by NVRTC (seconds for a source with many
        instances) and stored there; ``NVMATHX_LINK_CACHE=0`` turns the cache off, as for linked
        kernels."""
        return self._build(arch, use_cache)[0]

    def _build(self, arch: str, use_cache: bool) -> tuple:
        """(the ObjectCode, whether it came from the disk cache)."""
        from cuda.core import ObjectCode, Program, ProgramOptions

        key, caching = self.cache_key(arch), link.enabled()  # NVMATHX_LINK_CACHE=0: compiled every time
        image = cache.load_linked(key) if use_cache and caching else None
        if image is not None and set(image.symbols) == set(self.names):
            symbols = {name: mangled.encode() for name, mangled in image.symbols.items()}
            return ObjectCode.from_cubin(image.cubin, symbol_mapping=symbols), True
        with timed_step(f"NVRTC compile of {len(self.names)} kernel(s) for {arch}"):
            program = Program(self.source, "c++", ProgramOptions(arch=arch, std="c++17"))
            code = program.compile("cubin", name_expressions=self.names)
        symbols = {name: mangled.decode() if isinstance(mangled, bytes) else str(mangled)
                   for name, mangled in code.symbol_mapping.items()}
        if caching:
            cache.store_linked(key, cache.LinkedImage(bytes(code.code), "", symbols))
        return code, False

    def cache_key(self, arch: str) -> dict:
        """What the compiled kernels depend on: the source, the instances, the target, NVRTC."""
        return {"kind": "nvrtc kernel set", "source_sha256": hashlib.sha256(self.source.encode()).hexdigest(),
                "names": list(self.names), "arch": arch, "std": "c++17", "nvrtc": nvrtc_version()}

    def kernel(self, device_id: int, name: str):
        """The cuda.core Kernel ``name`` on a device (its module compiled on first use)."""
        kernel = self._kernels.get((device_id, name))
        if kernel is not None:
            return kernel
        with self._lock:
            module = self._modules.get(device_id)
            from_cache = False
            if module is None:
                major, minor = device.ensure_device(device_id).compute_capability
                arch = f"sm_{major}{minor}"
                module, from_cache = self._build(arch, use_cache=True)
                self._modules[device_id] = module
            try:
                kernel = module.get_kernel(name)  # (the module loads on its first kernel)
            except Exception:
                if not from_cache:
                    raise
                # A cached image the driver refuses costs a compilation, as a miss does; compiled
                # anew (and stored over the entry), any error is the kernel's own.
                module = self._modules[device_id] = self.compile(arch, use_cache=False)
                kernel = module.get_kernel(name)
            self._kernels[device_id, name] = kernel
        return kernel


def grid(count: int) -> int:
    """Blocks for ``count`` elements of grid-stride work (capped: each thread loops over the rest)."""
    return max(1, min((count + BLOCK - 1) // BLOCK, 65535 * 8))


def core_stream(stream):
    """The cuda.core Stream of a StreamHolder; the special handles map to cuda.core's own objects."""
    if stream.handle > 2:
        return stream.core
    core = _core()
    # NULL and cudaStreamLegacy, then cudaStreamPerThread
    return core.LEGACY_DEFAULT_STREAM if stream.handle < 2 else core.PER_THREAD_DEFAULT_STREAM


def launch(stream, kernel, count: int, *args) -> None:
    """Launch ``kernel`` over ``count`` elements on ``stream`` (a StreamHolder). Pointers and 64-bit
    integers (``long long``, ``unsigned long long`` below 2**63) are Python ints, which cuda.core
    passes as ``intptr_t``, 64 bits on every platform CUDA supports (and cheaper to make and to
    pack than numpy scalars); every other argument is a numpy scalar of the parameter's type."""
    core = _core()
    blocks = grid(count)
    config = _configs.get(blocks)
    if config is None:
        config = _config(core, blocks)
    core.launch(core_stream(stream), config, kernel, *args)


_configs: dict[int, Any] = {}  # blocks -> LaunchConfig: launches read a config, never change it


def _config(core, blocks: int):
    if len(_configs) >= 4096:  # (a process launching on ever new sizes)
        _configs.clear()
    config = _configs[blocks] = core.LaunchConfig(grid=blocks, block=BLOCK)
    return config


def _core():
    """cuda.core, imported on the first launch (importing it costs an import of the driver bindings)."""
    global _CUDA_CORE
    if _CUDA_CORE is None:
        import cuda.core

        _CUDA_CORE = cuda.core
    return _CUDA_CORE


_CUDA_CORE = None
