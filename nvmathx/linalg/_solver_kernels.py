"""The kernels of the dense solvers on the GPU, compiled once per device with NVRTC.

They are launched on the caller's stream:

- ``nonfinite<R>`` (:mod:`nvmathx._codegen.nonfinite`, shared with the sparse solver) flags NaN or
  Inf among the values of ``a`` or ``b``;
- ``zero_diagonal<T>`` writes, per column-major ``n x n`` matrix of a dense batch, 1 + the index of
  its first zero diagonal element, or 0 (the ``info`` of a triangular or diagonal system, which
  has no factorization to report it);
- ``fill_pointers`` writes ``base + i * stride`` (bytes) to ``pointers[i]`` for each of ``count``
  64-bit pointers: the batched engine's array of right-hand sides, refilled on the stream when the
  systems are solved at a new address (the call's result) instead of uploaded from the host.
"""

from __future__ import annotations

from .._codegen.launch import KernelSet
from .._codegen.launch import launch as launch_kernel
from .._codegen.nonfinite import NONFINITE_NAMES, NONFINITE_SOURCE

__all__ = ["KERNEL_SOURCE", "KERNEL_NAMES", "ELEMENT_TYPES", "launch"]

KERNEL_SOURCE = NONFINITE_SOURCE + r"""
__device__ inline bool is_zero(float v) { return v == 0.0f; }
__device__ inline bool is_zero(double v) { return v == 0.0; }
__device__ inline bool is_zero(float2 v) { return v.x == 0.0f && v.y == 0.0f; }
__device__ inline bool is_zero(double2 v) { return v.x == 0.0 && v.y == 0.0; }

template <typename T>
__global__ void zero_diagonal(const T* a, long long count, long long n, int* info) {
    long long step = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += step) {
        const T* matrix = a + i * n * n;
        int found = 0;
        for (long long j = 0; j < n; ++j) {
            if (is_zero(matrix[j * (n + 1)])) { found = (int)(j + 1); break; }
        }
        info[i] = found;
    }
}

__global__ void fill_pointers(unsigned long long* pointers, long long count, unsigned long long base,
                              long long stride) {
    long long step = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += step) {
        pointers[i] = base + (unsigned long long)i * (unsigned long long)stride;
    }
}
"""

# dtype -> the element type zero_diagonal reads
ELEMENT_TYPES = {"float32": "float", "float64": "double", "complex64": "float2", "complex128": "double2"}
KERNEL_NAMES = NONFINITE_NAMES + tuple(
    f"zero_diagonal<{t}>" for t in ("float", "double", "float2", "double2")) + ("fill_pointers",)
KERNELS = KernelSet(KERNEL_SOURCE, KERNEL_NAMES)


def launch(stream, device_id: int, name: str, count: int, *args) -> None:
    """Launch kernel ``name`` over ``count`` items on ``stream`` (a StreamHolder); pointers and
    ``long long`` values are Python ints."""
    launch_kernel(stream, KERNELS.kernel(device_id, name), count, *args)
