"""The device check for NaN and infinite values that the dense and sparse solvers run before they
factorize (``check_finite``): CUDA C++ source that each solver's kernel set compiles with its own
kernels, and the arguments of one launch.

``nonfinite<R>(data, count, flag)`` sets ``flag[0]`` to 1 when any of ``count`` reals is NaN or Inf
(a complex array counts its real and imaginary parts; ``v - v`` is 0 for every finite ``v`` and NaN
otherwise). Each thread reads 16 bytes at a time where the data is aligned for it (at one element
per load the check ran at a fraction of the memory bandwidth), so the grid is sized by
:func:`nonfinite_items`, and each block that finds one writes the flag once.
"""

from __future__ import annotations

__all__ = ["NONFINITE_SOURCE", "NONFINITE_NAMES", "REAL_TYPES", "nonfinite_items", "nonfinite_launch"]

NONFINITE_SOURCE = r"""
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
"""

NONFINITE_NAMES = ("nonfinite<float>", "nonfinite<double>")

# dtype -> the C type nonfinite reads (complex as its reals)
REAL_TYPES = {"float32": "float", "float64": "double", "complex64": "float", "complex128": "double"}


def nonfinite_items(count: int, real_type: str) -> int:
    """The work items (threads) of ``nonfinite<real_type>`` over ``count`` reals: one per 16 bytes."""
    return -(-count // (4 if real_type == "float" else 2))


def nonfinite_launch(dtype: str, pointer: int, elements: int, flag: int) -> tuple:
    """``(kernel name, work items, *arguments)`` of the check of ``elements`` values of ``dtype`` at
    ``pointer`` (device addresses as ints), flagging into the int32 at ``flag``."""
    real = REAL_TYPES[dtype]
    count = elements * (2 if dtype.startswith("complex") else 1)
    return f"nonfinite<{real}>", nonfinite_items(count, real), pointer, count, flag
