"""The kernels of the dense solvers on the GPU, compiled once per device with NVRTC.

They are launched on the caller's stream:

- ``nonfinite<R>`` sets ``flag[0]`` to 1 when any of ``count`` reals (a complex array counts its
  real and imaginary parts) is NaN or Inf (``v - v`` is 0 for every finite ``v`` and NaN otherwise);
  each thread reads 16 bytes at a time, so its grid is sized by :func:`nonfinite_items`;
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

__all__ = ["KERNEL_SOURCE", "KERNEL_NAMES", "REAL_TYPES", "ELEMENT_TYPES", "launch", "nonfinite_items"]

KERNEL_SOURCE = r"""
// Loads of 16 bytes (four floats or two doubles) where the data allows: the check reads all of a,
// and at one element per load it ran at a fraction of the memory bandwidth.
template <typename R> struct Wide;
template <> struct Wide<float> { typedef float4 type; static const int width = 4; };
template <> struct Wide<double> { typedef double2 type; static const int width = 2; };

template <typename R>
__device__ inline int is_nonfinite(R v) { return !(v - v == (R)0); }

template <typename R>
__global__ void nonfinite(const R* data, long long count, int* flag) {
    typedef typename Wide<R>::type V;
    const int width = Wide<R>::width;
    long long step = (long long)gridDim.x * blockDim.x;
    long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long wide = ((unsigned long long)data % sizeof(V)) == 0 ? count / width : 0;
    int bad = 0;
    for (long long i = first; i < wide; i += step) {
        V v = reinterpret_cast<const V*>(data)[i];
        const R* parts = reinterpret_cast<const R*>(&v);
#pragma unroll
        for (int k = 0; k < width; ++k) bad |= is_nonfinite(parts[k]);
    }
    for (long long i = wide * width + first; i < count; i += step) bad |= is_nonfinite(data[i]);
    // one write per block that found one (every thread reaches the barrier)
    if (__syncthreads_or(bad) && threadIdx.x == 0) flag[0] = 1;
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

__global__ void fill_pointers(unsigned long long* pointers, long long count, unsigned long long base,
                              long long stride) {
    long long step = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += step) {
        pointers[i] = base + (unsigned long long)i * (unsigned long long)stride;
    }
}
"""

# dtype -> the C type nonfinite reads (complex as its reals) and the element type zero_diagonal reads
REAL_TYPES = {"float32": "float", "float64": "double", "complex64": "float", "complex128": "double"}
ELEMENT_TYPES = {"float32": "float", "float64": "double", "complex64": "float2", "complex128": "double2"}
KERNEL_NAMES = ("nonfinite<float>", "nonfinite<double>") + tuple(
    f"zero_diagonal<{t}>" for t in ("float", "double", "float2", "double2")) + ("fill_pointers",)
KERNELS = KernelSet(KERNEL_SOURCE, KERNEL_NAMES)


def nonfinite_items(count: int, real_type: str) -> int:
    """The work items (threads) of ``nonfinite<real_type>`` over ``count`` reals: one per 16 bytes."""
    return -(-count // (4 if real_type == "float" else 2))


def launch(stream, device_id: int, name: str, count: int, *args) -> None:
    """Launch kernel ``name`` over ``count`` items on ``stream`` (a StreamHolder); pointers and
    ``long long`` values are Python ints."""
    launch_kernel(stream, KERNELS.kernel(device_id, name), count, *args)
