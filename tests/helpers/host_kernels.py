"""NVRTC kernel sources compiled as host C++, so that tests run the very source a GPU runs: a
launch is one thread walking the kernel's whole grid-stride loop over host memory (pointers are
host addresses; warp-wide steps see a warp of one thread).

Each launch is checked against the kernel's signature as the C++ compiler sees it: as many
arguments as parameters, a Python int for every pointer and a numpy scalar of the parameter's
kind and size for every other one (what cuda.core packs for a real launch).
"""

import ctypes
import functools
import hashlib
import os
import shutil
import subprocess
import tempfile

import numpy as np
import pytest

__all__ = ["ASSUME", "HostKernels", "build_library"]

# CUDA's __builtin_assume on the host: an assumption that does not hold stops the test's process
ASSUME = "#include <cstdlib>\n#define __builtin_assume(condition) do { if (!(condition)) std::abort(); } while (0)\n"

_PRELUDE = r"""
#include <math.h>
#include <stddef.h>
#include <type_traits>
#include <utility>
#define __global__
#define __device__
struct dims_ { unsigned int x, y, z; };
static const dims_ threadIdx = {0, 0, 0}, blockIdx = {0, 0, 0}, blockDim = {1, 1, 1}, gridDim = {1, 1, 1};
struct float2 { float x, y; };
struct uint2 { unsigned int x, y; };
struct uint4 { unsigned int x, y, z, w; };
struct double2 { double x, y; };
struct float4 { float x, y, z, w; };
static inline int __syncthreads_or(int predicate) { return predicate; }  // a block of one thread
static inline unsigned int atomicMax(unsigned int* address, unsigned int value) {
    unsigned int old = *address;
    if (value > old) *address = value;
    return old;
}
"""

_CALLS = r"""
template <typename... P, size_t... I>
static void call_(void (*kernel)(P...), void** args, std::index_sequence<I...>) {
    kernel(*static_cast<P*>(args[I])...);
}
template <typename... P> static void call(void (*kernel)(P...), void** args) {
    call_(kernel, args, std::index_sequence_for<P...>{});
}
// Per parameter: 'p' pointer, 'f' floating point, 'i' integer, and its size in bytes.
template <typename... P> static int describe(void (*)(P...), char* kinds, int* sizes) {
    const char k[] = {(std::is_pointer<P>::value ? 'p' : std::is_floating_point<P>::value ? 'f' : 'i')...};
    const int s[] = {(int)sizeof(P)...};
    for (size_t i = 0; i < sizeof...(P); ++i) { kinds[i] = k[i]; sizes[i] = s[i]; }
    return (int)sizeof...(P);
}
"""


class HostKernels:
    """The kernels ``names`` of ``source`` (a KernelSet's) built as one host library (cached on disk
    by the source's digest); :meth:`launch` runs one as the GPU launcher would."""

    def __init__(self, source: str, names: tuple, tag: str):
        self.source, self.names, self.tag = source, tuple(names), tag

    def _full_source(self) -> str:
        wrappers = "".join(
            f'extern "C" void run_{i}(void** args) {{ call(&{name}, args); }}\n'
            f'extern "C" int describe_{i}(char* kinds, int* sizes) {{ return describe(&{name}, kinds, sizes); }}\n'
            for i, name in enumerate(self.names))
        return _PRELUDE + self.source + _CALLS + wrappers

    @functools.cached_property
    def library(self):
        return build_library(self._full_source(), f"{self.tag}-host-kernels")

    @functools.lru_cache(maxsize=None)
    def _signature(self, index: int) -> tuple:
        kinds, sizes = ctypes.create_string_buffer(128), (ctypes.c_int * 128)()
        count = getattr(self.library, f"describe_{index}")(kinds, sizes)
        return tuple(kinds.raw[:count].decode()), tuple(sizes[:count])

    def launch(self, stream, device_id, name, count, *args):
        """What the package's ``launch`` does on a GPU, on the host."""
        assert type(count) is int and count > 0
        index = self.names.index(name)
        kinds, sizes = self._signature(index)
        assert len(args) == len(kinds), f"{name} takes {len(kinds)} arguments, got {len(args)}"
        values = []
        for position, (arg, kind, size) in enumerate(zip(args, kinds, sizes)):
            if kind == "p":
                assert type(arg) is int, f"{name} argument {position}: a pointer must be a Python int, got {arg!r}"
                values.append(ctypes.c_void_p(arg))
                continue
            if type(arg) is int:  # cuda.core passes a Python int as intptr_t: only for 64-bit integers
                assert (kind, size) == ("i", 8) and -(1 << 63) <= arg < 1 << 63, (name, position, arg, kind, size)
                values.append(ctypes.c_int64(arg))
                continue
            assert isinstance(arg, np.generic) and arg.dtype.itemsize == size, (position, arg, kind, size)
            assert (arg.dtype.kind == "f") == (kind == "f"), (position, arg, kind)
            values.append(_CTYPES[kind, size](arg.item()))
        pointers = (ctypes.c_void_p * len(values))(*(ctypes.addressof(value) for value in values))
        getattr(self.library, f"run_{index}")(pointers)


_CTYPES = {("i", 4): ctypes.c_int32, ("i", 8): ctypes.c_int64, ("f", 4): ctypes.c_float, ("f", 8): ctypes.c_double}


def build_library(source: str, name: str, flags: tuple = ("-std=c++17",)):
    """``source`` compiled as a host shared library (kept in the temporary folder by its digest)."""
    compiler = shutil.which("g++") or shutil.which("clang++")
    if compiler is None:
        pytest.skip(f"running {name} on the host needs a C++ compiler (g++ or clang++)")
    digest = hashlib.sha256((source + " ".join(flags)).encode()).hexdigest()[:16]
    path = os.path.join(tempfile.gettempdir(), f"nvmathx-{name}-{digest}.so")
    if not os.path.exists(path):
        with tempfile.TemporaryDirectory() as folder:
            source_path, built = os.path.join(folder, "kernels.cpp"), os.path.join(folder, "kernels.so")
            with open(source_path, "w") as file:
                file.write(source)
            result = subprocess.run([compiler, *flags, "-O1", "-shared", "-fPIC", source_path, "-o", built],
                                    capture_output=True, text=True)
            assert result.returncode == 0, f"{name} does not compile as host C++:\n{result.stderr}"
            os.replace(built, path)  # atomic: another process may build the same file meanwhile
    return ctypes.CDLL(path)
