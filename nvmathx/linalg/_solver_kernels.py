"""The kernels of the dense solvers on the GPU, compiled once per device with NVRTC.

They are launched on the caller's stream:

- ``nonfinite<R>`` (:mod:`nvmathx._codegen.nonfinite`, shared with the sparse solver) flags NaN or
  Inf among the values of ``a`` or ``b``;
- ``zero_diagonal<T>`` writes, per column-major ``n x n`` matrix of a dense batch, 1 + the index of
  its first zero diagonal element, or 0 (the ``info`` of a triangular or diagonal system, which
  has no factorization to report it);
- ``fill_pointers`` writes ``base + i * stride`` (bytes) to ``pointers[i]`` for each of ``count``
  64-bit pointers: the batched engine's array of right-hand sides, refilled on the stream when the
  systems are solved at a new address (the call's result) instead of uploaded from the host;
- ``pivots_to_permutation<I>`` turns, per factored matrix, LAPACK's pivots (``n`` one-based row
  interchanges, applied in order) into the permutation they make: row ``i`` of ``P^T b`` is row
  ``permutation[i]`` of ``b``. One thread per matrix: the interchanges depend on one another;
- ``permute_rows<T, I>`` gathers ``target[i] = source[permutation[i]]`` over ``n`` values.
"""

from __future__ import annotations

from .._codegen.launch import KernelSet
from .._codegen.launch import launch as launch_kernel
from .._codegen.nonfinite import NONFINITE_NAMES, NONFINITE_SOURCE

__all__ = ["KERNEL_SOURCE", "KERNEL_NAMES", "ELEMENT_TYPES", "PIVOT_TYPES", "launch"]

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

template <typename I>
__global__ void pivots_to_permutation(const I* pivots, long long count, long long n, I* permutation) {
    long long step = (long long)gridDim.x * blockDim.x;
    for (long long s = (long long)blockIdx.x * blockDim.x + threadIdx.x; s < count; s += step) {
        const I* swaps = pivots + s * n;
        I* order = permutation + s * n;
        for (long long i = 0; i < n; ++i) order[i] = (I)i;
        for (long long i = 0; i < n; ++i) {
            long long j = (long long)swaps[i] - 1;
            I kept = order[i];
            order[i] = order[j];
            order[j] = kept;
        }
    }
}

template <typename T, typename I>
__global__ void permute_rows(const T* source, const I* permutation, long long n, T* target) {
    long long step = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        target[i] = source[permutation[i]];
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

# dtype -> the element type zero_diagonal and permute_rows read
ELEMENT_TYPES = {"float32": "float", "float64": "double", "complex64": "float2", "complex128": "double2"}
# pivot bytes -> their C type (the legacy LU's int32, the 64-bit API's int64)
PIVOT_TYPES = {4: "int", 8: "long long"}
KERNEL_NAMES = NONFINITE_NAMES + tuple(
    f"zero_diagonal<{t}>" for t in ("float", "double", "float2", "double2")) + ("fill_pointers",) + tuple(
    f"pivots_to_permutation<{i}>" for i in PIVOT_TYPES.values()) + tuple(
    f"permute_rows<{t}, {i}>" for t in ("float", "double", "float2", "double2") for i in PIVOT_TYPES.values())
KERNELS = KernelSet(KERNEL_SOURCE, KERNEL_NAMES)


def launch(stream, device_id: int, name: str, count: int, *args) -> None:
    """Launch kernel ``name`` over ``count`` items on ``stream`` (a StreamHolder); pointers and
    ``long long`` values are Python ints."""
    launch_kernel(stream, KERNELS.kernel(device_id, name), count, *args)
