"""Two elementwise CUDA kernels that the areas share, compiled once per device with NVRTC.

- ``scale``: multiply a dense buffer by a real factor (optionally conjugating), for the FFT's
  ``norm`` modes that cuFFT does not apply.
- ``copy_nd``: a strided copy of up to eight dimensions with the same factor: operands cuFFT
  cannot read in place (padding, negative or zero strides, C2R inputs that must survive), matmul
  operands cuBLASLt cannot broadcast, the pieces of a distributed exchange; it also widens real
  to complex, float16/bfloat16 to float32 and integers/bool to float64, as scipy.fft promotes
  them, and takes the real part where a one-point C2R transform needs it. A same-type copy that is
  a batch of 2-D transposes (a row-major matrix into column-major order) runs as ``transpose``
  through shared-memory tiles; a contiguous same-type copy is a cuMemcpyAsync.

Both are launched through cuda.core on the caller's stream (:mod:`.launch`), so they are captured
in CUDA graphs.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from .._bindings import cuda_driver
from .launch import BLOCK, KernelSet
from .launch import launch as launch_kernel

__all__ = [
    "INTEGER_C_TYPES", "MAX_COPY_DIMS", "KERNEL_SOURCE", "KERNELS", "can_copy", "scale", "copy_nd", "prepare_copy",
    "collapse", "transpose_plan",
]

MAX_COPY_DIMS = 8

KERNEL_SOURCE = r"""
struct half_t { unsigned short bits; };
struct bf16_t { unsigned short bits; };

__device__ inline float to_float(half_t h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h.bits)); return f; }
__device__ inline float to_float(bf16_t h) { return __int_as_float(((int)h.bits) << 16); }

template <typename T> struct convert;
template <> struct convert<float> {
    __device__ static float from(float v) { return v; }
    __device__ static float from(half_t v) { return to_float(v); }
    __device__ static float from(bf16_t v) { return to_float(v); }
    __device__ static float from(float2 v) { return v.x; }
};
template <> struct convert<double> {
    __device__ static double from(double v) { return v; }
    __device__ static double from(double2 v) { return v.x; }
    template <typename I> __device__ static double from(I v) { return (double)v; }  // integers and bool
};
template <> struct convert<float2> {
    __device__ static float2 from(float2 v) { return v; }
    __device__ static float2 from(float v) { return make_float2(v, 0.0f); }
    __device__ static float2 from(half_t v) { return make_float2(to_float(v), 0.0f); }
    __device__ static float2 from(bf16_t v) { return make_float2(to_float(v), 0.0f); }
};
template <> struct convert<double2> {
    __device__ static double2 from(double2 v) { return v; }
    __device__ static double2 from(double v) { return make_double2(v, 0.0); }
    template <typename I> __device__ static double2 from(I v) { return make_double2((double)v, 0.0); }
};

__device__ inline float  apply(float v, float f, int)     { return v * f; }
__device__ inline double apply(double v, double f, int)   { return v * f; }
__device__ inline float2 apply(float2 v, float f, int c)  { return make_float2(v.x * f, c ? -v.y * f : v.y * f); }
__device__ inline double2 apply(double2 v, double f, int c) { return make_double2(v.x * f, c ? -v.y * f : v.y * f); }
// Two complex64 values (or four float32 values, conj unused) per 16-byte access.
__device__ inline float4 apply(float4 v, float f, int c) {
    return make_float4(v.x * f, c ? -v.y * f : v.y * f, v.z * f, c ? -v.w * f : v.w * f);
}

template <typename T, typename R>
__global__ void scale(T* data, long long count, R factor, int conj) {
    long long step = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += step) {
        data[i] = apply(data[i], factor, conj);
    }
}

template <typename S, typename T, typename R>
__global__ void copy_nd(const S* src, T* dst, long long count, R factor, int conj, int ndim,
                        long long e0, long long e1, long long e2, long long e3,
                        long long e4, long long e5, long long e6, long long e7,
                        long long s0, long long s1, long long s2, long long s3,
                        long long s4, long long s5, long long s6, long long s7,
                        long long d0, long long d1, long long d2, long long d3,
                        long long d4, long long d5, long long d6, long long d7) {
    const long long extent[8] = {e0, e1, e2, e3, e4, e5, e6, e7};
    const long long sstride[8] = {s0, s1, s2, s3, s4, s5, s6, s7};
    const long long dstride[8] = {d0, d1, d2, d3, d4, d5, d6, d7};
    long long step = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += step) {
        long long rest = i, from = 0, to = 0;
        for (int k = ndim - 1; k >= 0; --k) {
            long long index = rest % extent[k];
            rest /= extent[k];
            from += index * sstride[k];
            to += index * dstride[k];
        }
        dst[to] = apply(convert<T>::from(src[from]), factor, conj);
    }
}

// A batch of 2-D transposes through 32 x 33 shared tiles (reads and writes both coalesced): the
// column-major copies of row-major matrices, which copy_nd would read 32 rows apart per warp.
// src[b * src_batch + r * src_row + c] -> dst[b * dst_batch + c * dst_col + r]; 256 threads a block.
template <typename T, typename R>
__global__ void transpose(const T* src, T* dst, long long batches, long long rows, long long cols,
                          long long src_batch, long long src_row, long long dst_batch, long long dst_col,
                          R factor, int conj) {
    __shared__ T tile[32][33];
    const int tx = threadIdx.x % 32, ty = threadIdx.x / 32;
    const long long row_tiles = (rows + 31) / 32, col_tiles = (cols + 31) / 32;
    const long long per_matrix = row_tiles * col_tiles, tiles = batches * per_matrix;
    for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {
        const long long b = t / per_matrix, within = t % per_matrix;
        const long long r0 = within / col_tiles * 32, c0 = within % col_tiles * 32;
        const T* s = src + b * src_batch;
        T* d = dst + b * dst_batch;
        for (int j = ty; j < 32; j += 8) {
            if (r0 + j < rows && c0 + tx < cols) tile[j][tx] = s[(r0 + j) * src_row + c0 + tx];
        }
        __syncthreads();
        for (int j = ty; j < 32; j += 8) {
            if (c0 + j < cols && r0 + tx < rows) d[(c0 + j) * dst_col + r0 + tx] = apply(tile[tx][j], factor, conj);
        }
        __syncthreads();
    }
}
"""

# Integer and bool operands are converted to float64, as scipy.fft does.
INTEGER_C_TYPES = {
    "bool": "bool", "int8": "signed char", "int16": "short", "int32": "int", "int64": "long long",
    "uint8": "unsigned char", "uint16": "unsigned short", "uint32": "unsigned int", "uint64": "unsigned long long",
}
# numpy dtype name -> C element type; the real type and numpy scalar of the factor follow the target.
_C_TYPES = {
    "float16": "half_t", "bfloat16": "bf16_t", "float32": "float", "float64": "double",
    "complex64": "float2", "complex128": "double2", **INTEGER_C_TYPES,
}
_REAL = {"float": ("float", np.float32), "float2": ("float", np.float32), "float4": ("float", np.float32),
         "double": ("double", np.float64), "double2": ("double", np.float64)}
# (source, target) pairs the copy converts between
_COPIES = (
    ("float32", "float32"), ("float64", "float64"), ("complex64", "complex64"), ("complex128", "complex128"),
    ("float32", "complex64"), ("float64", "complex128"), ("float16", "float32"), ("float16", "complex64"),
    ("bfloat16", "float32"), ("bfloat16", "complex64"), ("complex64", "float32"), ("complex128", "float64"),
) + tuple((name, target) for name in INTEGER_C_TYPES for target in ("float64", "complex128"))
_SCALED = ("float32", "float64", "complex64", "complex128")


def _dtype_name(dtype) -> str:
    return dtype if isinstance(dtype, str) else np.dtype(dtype).name


def _scale_name(dtype) -> str:
    c_type = _C_TYPES[_dtype_name(dtype)]
    return f"scale<{c_type}, {_REAL[c_type][0]}>"


def _copy_name(source_dtype, target_dtype) -> str:
    source, target = _C_TYPES[_dtype_name(source_dtype)], _C_TYPES[_dtype_name(target_dtype)]
    return f"copy_nd<{source}, {target}, {_REAL[target][0]}>"


def can_copy(source_dtype, target_dtype) -> bool:
    """Whether :func:`copy_nd` converts ``source_dtype`` to ``target_dtype``."""
    return (_dtype_name(source_dtype), _dtype_name(target_dtype)) in _COPIES


def _transpose_name(dtype) -> str:
    c_type = _C_TYPES[_dtype_name(dtype)]
    return f"transpose<{c_type}, {_REAL[c_type][0]}>"


_VECTOR_SCALE = "scale<float4, float>"
_NAMES = (_VECTOR_SCALE,) + tuple(_scale_name(d) for d in _SCALED) + tuple(_copy_name(s, t) for s, t in _COPIES) \
    + tuple(_transpose_name(d) for d in _SCALED)
KERNELS = KernelSet(KERNEL_SOURCE, _NAMES)
_kernel = KERNELS.kernel


def _launch(stream, device_id, name, count, *args):
    launch_kernel(stream, _kernel(device_id, name), count, *args)


def _factor(dtype, factor):
    return _REAL[_C_TYPES[_dtype_name(dtype)]][1](factor)


def scale(pointer: int, count: int, dtype, factor: float, conj: bool, stream, device_id: int) -> None:
    """``data[i] = factor * data[i]`` (conjugated when ``conj``) for ``count`` dense elements."""
    if count == 0:
        return
    name = _dtype_name(dtype)
    per_vector = {"complex64": 2, "float32": 4}.get(name)
    if per_vector and count % per_vector == 0 and pointer % 16 == 0:  # 16-byte accesses
        vectors = count // per_vector
        _launch(stream, device_id, _VECTOR_SCALE, vectors, pointer, np.int64(vectors), np.float32(factor),
                np.int32(conj and name == "complex64"))
        return
    _launch(stream, device_id, _scale_name(dtype), count, pointer, np.int64(count), _factor(dtype, factor),
            np.int32(conj))


def collapse(shape, source_strides, target_strides) -> tuple:
    """Merge axes that nest in both layouts and drop extent-1 axes (fewer kernel dimensions)."""
    axes = [(e, s, t) for e, s, t in zip(shape, source_strides, target_strides) if e != 1]
    axes.sort(key=lambda a: (abs(a[2]), abs(a[1])), reverse=True)
    merged: list[tuple[int, int, int]] = []
    for extent, source, target in axes:
        if merged:
            outer_extent, outer_source, outer_target = merged[-1]
            if outer_source == source * extent and outer_target == target * extent:
                merged[-1] = (outer_extent * extent, source, target)
                continue
        merged.append((extent, source, target))
    if not merged:
        merged = [(1, 1, 1)]
    return tuple(m[0] for m in merged), tuple(m[1] for m in merged), tuple(m[2] for m in merged)


def transpose_plan(shape, source_strides, target_strides) -> tuple | None:
    """``(batches, rows, cols, source batch stride, source row stride, target batch stride, target
    column stride)`` where a collapsed copy is a batch of 2-D transposes (at most one batch axis,
    the target's fastest axis strided in the source and another axis contiguous there), else None.
    Rows run along the target's contiguous axis, columns along the source's."""
    if len(shape) not in (2, 3) or target_strides[-1] != 1 or source_strides[-1] == 1:
        return None
    inner = [axis for axis in range(len(shape) - 1) if source_strides[axis] == 1]
    if len(inner) != 1:
        return None
    column = inner[0]
    batch = [axis for axis in range(len(shape) - 1) if axis != column]
    batches, source_batch, target_batch = (shape[batch[0]], source_strides[batch[0]], target_strides[batch[0]]) \
        if batch else (1, 0, 0)
    return (int(batches), int(shape[-1]), int(shape[column]), int(source_batch), int(source_strides[-1]),
            int(target_batch), int(target_strides[column]))


def copy_nd(source: int, target: int, shape, source_strides, target_strides, source_dtype, target_dtype,
            factor: float, conj: bool, stream, device_id: int) -> None:
    """Strided copy (converted to ``target_dtype``, times ``factor``) of ``shape`` elements; strides in
    elements, any sign."""
    prepare_copy(shape, source_strides, target_strides, source_dtype, target_dtype, factor, conj,
                 device_id)(source, target, stream)


def prepare_copy(shape, source_strides, target_strides, source_dtype, target_dtype, factor: float, conj: bool,
                 device_id: int) -> Callable[[int, int, Any], None]:
    """:func:`copy_nd`'s decisions for one geometry, made once: ``copy(source, target, stream)``
    then costs the call alone (a plan that copies the same layout every call keeps it)."""
    shape, source_strides, target_strides = collapse(shape, source_strides, target_strides)
    count = int(np.prod(shape, dtype=np.int64))
    if count == 0:
        return _no_copy
    if len(shape) > MAX_COPY_DIMS:  # copy the leading dimensions one slice at a time
        return functools.partial(_copy_slices, shape, source_strides, target_strides, source_dtype, target_dtype,
                                 factor, conj, device_id)
    source_name, target_name = _dtype_name(source_dtype), _dtype_name(target_dtype)
    if (len(shape) == 1 and source_strides[0] == target_strides[0] == 1 and source_name == target_name
            and factor == 1 and not (conj and source_name.startswith("complex"))):
        # a plain copy of contiguous memory: the copy engine's call, cheaper to issue than a launch
        nbytes = count * np.dtype(source_name).itemsize

        def copy_contiguous(source: int, target: int, stream) -> None:
            cuda_driver.memcpy_async(target, source, nbytes, stream.handle)

        return copy_contiguous
    plan = transpose_plan(shape, source_strides, target_strides) if source_name == target_name in _SCALED else None
    if plan is not None:
        batches, rows, cols = plan[:3]
        name, items = _transpose_name(source_name), batches * -(-rows // 32) * -(-cols // 32) * BLOCK
        tail: tuple = (*plan, _factor(target_name, factor), np.int32(conj))
    else:
        # long long parameters as Python ints (see .launch.launch)
        pad = MAX_COPY_DIMS - len(shape)
        extents = [int(e) for e in shape] + [1] * pad
        sources = [int(s) for s in source_strides] + [0] * pad
        targets = [int(t) for t in target_strides] + [0] * pad
        name, items = _copy_name(source_name, target_name), count
        tail = (count, _factor(target_name, factor), np.int32(conj), np.int32(len(shape)), *extents, *sources,
                *targets)

    def copy_kernel(source: int, target: int, stream) -> None:
        _launch(stream, device_id, name, items, source, target, *tail)

    return copy_kernel


def _no_copy(source: int, target: int, stream) -> None:
    pass


def _copy_slices(shape, source_strides, target_strides, source_dtype, target_dtype, factor, conj, device_id,
                 source: int, target: int, stream) -> None:
    keep = MAX_COPY_DIMS - 1
    for index in np.ndindex(*shape[:-keep]):
        so = sum(i * s for i, s in zip(index, source_strides))
        to = sum(i * s for i, s in zip(index, target_strides))
        copy_nd(source + so * np.dtype(source_dtype).itemsize, target + to * np.dtype(target_dtype).itemsize,
                shape[-keep:], source_strides[-keep:], target_strides[-keep:], source_dtype, target_dtype,
                factor, conj, stream, device_id)
