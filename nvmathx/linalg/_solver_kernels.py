"""The two checks of the dense solvers on the GPU, compiled once per device with NVRTC.

They are launched on the caller's stream:

- ``nonfinite<R>`` sets ``flag[0]`` to 1 when any of ``count`` reals (a complex array counts its
  real and imaginary parts) is NaN or Inf (``v - v`` is 0 for every finite ``v`` and NaN otherwise);
- ``zero_diagonal<T>`` writes, per column-major ``n x n`` matrix of a dense batch, 1 + the index of
  its first zero diagonal element, or 0 (the ``info`` of a triangular or diagonal system, which
  has no factorization to report it).
"""

from __future__ import annotations

from .._codegen.launch import KernelSet
from .._codegen.launch import launch as launch_kernel

__all__ = ["KERNEL_SOURCE", "KERNEL_NAMES", "REAL_TYPES", "ELEMENT_TYPES", "launch"]

KERNEL_SOURCE = r"""
template <typename R>
__global__ void nonfinite(const R* data, long long count, int* flag) {
    long long step = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += step) {
        R v = data[i];
        if (!(v - v == (R)0)) flag[0] = 1;
    }
}

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
"""

# dtype -> the C type nonfinite reads (complex as its reals) and the element type zero_diagonal reads
REAL_TYPES = {"float32": "float", "float64": "double", "complex64": "float", "complex128": "double"}
ELEMENT_TYPES = {"float32": "float", "float64": "double", "complex64": "float2", "complex128": "double2"}
KERNEL_NAMES = ("nonfinite<float>", "nonfinite<double>") + tuple(
    f"zero_diagonal<{t}>" for t in ("float", "double", "float2", "double2"))
KERNELS = KernelSet(KERNEL_SOURCE, KERNEL_NAMES)


def launch(stream, device_id: int, name: str, count: int, *args) -> None:
    """Launch kernel ``name`` over ``count`` items on ``stream`` (a StreamHolder); pointers and
    ``long long`` values are Python ints."""
    launch_kernel(stream, KERNELS.kernel(device_id, name), count, *args)
