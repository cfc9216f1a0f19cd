"""The epilog of the cuBLASMp path: one CUDA kernel (NVRTC, compiled once per device) that adds the
bias and applies RELU or GELU to this rank's piece of the result, in place.

cuBLASMp 0.7 fuses epilogues into some of its algorithms only, so the distributed product is
computed without one and this kernel follows it on the same stream. A local column ``j`` of the
piece is global column ``((j // block) * procs + coord) * block + j % block`` (the result's columns
dealt in blocks over ``procs`` process columns, this rank at ``coord``), which covers slabs,
replicated results and block-cyclic ones alike.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from ..._core import device

__all__ = ["ACTIVATIONS", "KERNEL_SOURCE", "compile_kernels", "prepare", "bias_activation"]

ACTIVATIONS = {None: 0, "relu": 1, "gelu": 2}
_BLOCK = 256

KERNEL_SOURCE = r"""
__device__ inline float  add(float a, float b)   { return a + b; }
__device__ inline double add(double a, double b) { return a + b; }

// tanh approximation of GELU, as nvmathx.linalg's: 0.5 v (1 + tanh(sqrt(2 / pi) (v + 0.044715 v^3)))
__device__ inline float activate(float v, int kind) {
    if (kind == 1) return v > 0.0f ? v : 0.0f;
    if (kind == 2) return 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
    return v;
}
__device__ inline double activate(double v, int kind) {
    if (kind == 1) return v > 0.0 ? v : 0.0;
    if (kind == 2) return 0.5 * v * (1.0 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
    return v;
}

template <typename T>
__global__ void bias_activation(T* d, const T* bias, long long rows, long long cols, long long ld,
                                long long block, long long procs, long long coord, int kind) {
    long long count = rows * cols;
    long long step = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += step) {
        long long r = i / cols, j = i % cols;
        T v = d[r * ld + j];
        if (bias != nullptr) {
            long long g = ((j / block) * procs + coord) * block + j % block;
            v = add(v, bias[g]);
        }
        d[r * ld + j] = activate(v, kind);
    }
}
"""

_C_TYPES = {"float32": "float", "float64": "double"}  # epilogs need real operands, as in nvmathx.linalg
_NAMES = tuple(f"bias_activation<{c_type}>" for c_type in _C_TYPES.values())
_modules: dict[int, Any] = {}  # cuda.core ObjectCode
_kernels: dict[tuple, object] = {}
_lock = threading.Lock()


def compile_kernels(arch: str):
    """The kernels as a cuda.core ObjectCode for ``arch`` (e.g. "sm_90")."""
    from cuda.core import Program, ProgramOptions

    program = Program(KERNEL_SOURCE, "c++", ProgramOptions(arch=arch, std="c++17"))
    return program.compile("cubin", name_expressions=_NAMES)


def prepare(device_id: int, dtype: str):
    """The kernel for ``dtype`` on a device (compiled on first use; called at plan time)."""
    name = f"bias_activation<{_C_TYPES[dtype]}>"
    kernel = _kernels.get((device_id, name))
    if kernel is None:
        with _lock:
            module = _modules.get(device_id)
            if module is None:
                major, minor = device.ensure_device(device_id).compute_capability
                module = _modules[device_id] = compile_kernels(f"sm_{major}{minor}")
            kernel = _kernels[device_id, name] = module.get_kernel(name)
    return kernel


def bias_activation(kernel, stream, pointer: int, bias: int, rows: int, cols: int, ld: int, columns,
                    activation) -> None:
    """Launch on ``stream`` (a StreamHolder) over a ``rows x cols`` piece (row stride ``ld``
    elements); ``columns`` is ``(block, procs, coord)`` of the result's column axis, ``bias`` a
    device address or 0."""
    count = rows * cols
    if count == 0:
        return
    from cuda.core import LaunchConfig, launch

    block, procs, coord = columns
    config = LaunchConfig(grid=max(1, min((count + _BLOCK - 1) // _BLOCK, 65535 * 8)), block=_BLOCK)
    launch(_core_stream(stream), config, kernel, pointer, bias, np.int64(rows), np.int64(cols), np.int64(ld),
           np.int64(block), np.int64(procs), np.int64(coord), np.int32(ACTIVATIONS[activation]))


def _core_stream(stream):
    """The cuda.core Stream of a StreamHolder; the special handles map to cuda.core's own objects."""
    if stream.handle in (0, 1):  # NULL and cudaStreamLegacy
        from cuda.core import LEGACY_DEFAULT_STREAM

        return LEGACY_DEFAULT_STREAM
    if stream.handle == 2:  # cudaStreamPerThread
        from cuda.core import PER_THREAD_DEFAULT_STREAM

        return PER_THREAD_DEFAULT_STREAM
    return stream.core
