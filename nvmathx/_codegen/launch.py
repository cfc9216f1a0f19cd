"""CUDA C++ kernels compiled with NVRTC once per device (through cuda.core), and launched on the
caller's stream (so CUDA graphs capture them).

A :class:`KernelSet` is one source and the names of the template instances it exports; its module
for a device is compiled on first use (its cubin kept in the on-disk cache of :mod:`.cache`, so a
new process loads it instead of compiling again) and its kernels are kept per ``(device, name)``,
so a later launch does no driver lookup.

:func:`launch` calls cuLaunchKernel itself, with the arguments packed into a buffer kept per
thread and per argument types (one ``struct.pack_into``): a launch of the float8 cast's 19
arguments through ``cuda.core.launch`` converted each argument on every call, which cost more host
time than the driver's launch (the float8 training step makes eight per step).
"""

from __future__ import annotations

import ctypes
import hashlib
import struct
import threading
from typing import Any

import numpy as np

from .._bindings import cuda_driver
from .._core import device
from . import cache, link
from .nvrtc import nvrtc_version

__all__ = ["BLOCK", "Kernel", "KernelSet", "core_stream", "grid", "launch"]

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

    def kernel(self, device_id: int, name: str) -> Kernel:
        """The kernel ``name`` on a device (its module compiled on first use), as :func:`launch` takes it."""
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
            kernel = self._kernels[device_id, name] = Kernel(kernel)
        return kernel


class Kernel:
    """A compiled kernel: cuda.core's ``Kernel`` (``core``) and the handle cuLaunchKernel takes."""

    __slots__ = ("core", "function")

    def __init__(self, core_kernel):
        self.core = core_kernel
        self.function = cuda_driver.kernel_function(core_kernel.handle)


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


def launch(stream, kernel: Kernel, count: int, *args) -> None:
    """Launch ``kernel`` over ``count`` elements on ``stream`` (a StreamHolder), :data:`BLOCK` threads
    a block. Arguments in the kernel's parameter order: Python ints for pointers and 64-bit integers
    (``long long``; ``unsigned long long`` below 2**63), numpy scalars of the parameter's type for
    the others (``np.int32``, ``np.float32``, ...)."""
    packer = _packers().get(tuple(map(type, args)))
    if packer is None:
        packer = _packer(args)
    packer[0](packer[1], 0, *args)
    (_LAUNCH or _launcher())(kernel.function, grid(count), BLOCK, stream.handle, packer[2])


# Each argument takes one 8-byte slot (the driver reads each through its own pointer, as many bytes
# as the parameter has): its struct code by type; a 4-byte value padded to the slot.
_CODES = {int: "q", np.int64: "q", np.uint64: "Q", np.int32: "i4x", np.uint32: "I4x", np.float32: "f4x",
          np.float64: "d"}
_local = threading.local()


def _packers() -> dict:
    packers = getattr(_local, "packers", None)
    if packers is None:
        packers = _local.packers = {}
    return packers


def _packer(args) -> tuple:
    """(struct's pack_into, the buffer, the address of its array of argument pointers) for arguments
    of these types, made once per thread (the driver copies the arguments at the launch: reusing the
    buffer right after is safe)."""
    types = tuple(map(type, args))
    unknown = [t.__name__ for t in types if t not in _CODES]
    if unknown:
        raise TypeError(f"kernel arguments must be ints or numpy scalars of the parameter's type (got {unknown})")
    layout = struct.Struct("<" + "".join(_CODES[t] for t in types))
    count = max(len(types), 1)
    buffer = (ctypes.c_uint64 * count)()
    pointers = (ctypes.c_void_p * count)(*(ctypes.addressof(buffer) + 8 * i for i in range(count)))
    packer = _packers()[types] = (layout.pack_into, buffer, ctypes.addressof(pointers), pointers)
    return packer


def _launcher():
    global _LAUNCH
    if _LAUNCH is None:
        _LAUNCH = cuda_driver.kernel_launcher()
    return _LAUNCH


_LAUNCH = None


def _core():
    """cuda.core, imported on the first launch (importing it costs an import of the driver bindings)."""
    global _CUDA_CORE
    if _CUDA_CORE is None:
        import cuda.core

        _CUDA_CORE = cuda.core
    return _CUDA_CORE


_CUDA_CORE = None
