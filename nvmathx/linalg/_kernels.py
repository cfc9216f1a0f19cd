"""The kernels of matmul problems with an extent of 0 (M, N, K or the batch), which run without
cuBLASLt (see :mod:`._degenerate`); compiled once per device with NVRTC, launched through
cuda.core on the caller's stream, so CUDA graphs capture them.

- ``degenerate<R>`` (R the compute type, float or double) writes, for a ``rows x cols`` matrix per
  batch index, ``v = beta * c + bias`` (either may be absent) through a real epilog: the
  pre-activation as ``gelu_aux`` or as the ``relu_aux`` bitmask, the activation, the DRELU / DGELU
  factor of an ``aux`` input, the result (times the float8 ``d`` scale), the column sums of the
  result as a bias gradient and the largest ``|v|`` as ``result_amax``. With only ``BGRAD`` set and
  ``a`` or ``b`` as ``c`` (``rows`` = K), it sums them over K: BGRADA / BGRADB of an empty result.
- ``degenerate_complex<T, R>`` writes ``beta * c`` (or zeros) for complex results.
- ``set_float8_scales`` writes the float8 scales ``a``, ``b`` and ``d`` into the slots cuBLASLt's
  scale pointers point at (floats 0, 4 and 8: each slot on its own 16-byte boundary), from kernel
  arguments, so that setting a scale neither synchronises nor escapes a CUDA graph's capture.
- ``copy_float8_scale`` copies a float8 scale given in device memory at an address cuBLASLt refuses
  (not 16-byte aligned) into its slot, on the stream of the product that reads it.

A thread takes eight neighbouring columns (one byte of the ReLU bitmask) of ``row_block`` rows of
one matrix, so every output element is written by one thread and bias gradients need no atomics.
Inputs are read through strides in elements (0 where broadcast) over up to :data:`MAX_BATCH_DIMS`
batch dimensions; outputs are dense. Loads and stores convert float16, bfloat16 and float8 with
integer arithmetic only (rounding to nearest even; float8 saturates, as the CPU space's results
do), so the same source also compiles as host C++ (the tests run it on the host that way).
"""

from __future__ import annotations

from .._codegen.float_formats import FLOAT_FORMATS_SOURCE, FORMAT_CODES
from .._codegen.launch import KernelSet
from .._codegen.launch import launch as launch_kernel

__all__ = ["KERNEL_SOURCE", "KERNEL_NAMES", "DTYPE_CODES", "MAX_BATCH_DIMS", "ACT_RELU", "ACT_GELU", "AUX_OUT_RELU",
           "AUX_OUT_GELU", "AUX_IN_RELU", "AUX_IN_GELU", "BGRAD", "WRITE_RESULT", "AMAX", "compile_kernels", "launch"]

MAX_BATCH_DIMS = 4
DTYPE_CODES = FORMAT_CODES
ACT_RELU, ACT_GELU, AUX_OUT_RELU, AUX_OUT_GELU, AUX_IN_RELU, AUX_IN_GELU, BGRAD, WRITE_RESULT, AMAX = (
    1 << bit for bit in range(9))

KERNEL_SOURCE = FLOAT_FORMATS_SOURCE + r"""
enum { ACT_RELU = 1, ACT_GELU = 2, AUX_OUT_RELU = 4, AUX_OUT_GELU = 8, AUX_IN_RELU = 16, AUX_IN_GELU = 32,
       BGRAD = 64, WRITE_RESULT = 128, AMAX = 256 };

// The element offset of batch index b in an operand with these strides over the batch extents.
__device__ inline i64 batch_offset(i64 b, int ndim, const i64* extent, const i64* stride) {
    i64 offset = 0;
    for (int k = ndim - 1; k >= 0; --k) {
        offset += (b % extent[k]) * stride[k];
        b /= extent[k];
    }
    return offset;
}

template <typename R>
__global__ void degenerate(void* result, int result_code, i64 rows, i64 cols, i64 groups, i64 row_block,
                           i64 row_blocks, i64 count, int flags, R beta, float scale_d, const float* scale_d_ptr,
                           unsigned int* amax, int batch_ndim, i64 e0, i64 e1, i64 e2, i64 e3,
                           const void* c, int c_code, i64 c0, i64 c1, i64 c2, i64 c3, i64 c_rs, i64 c_cs,
                           const void* bias, int bias_code, i64 bias0, i64 bias1, i64 bias2, i64 bias3,
                           i64 bias_rs, i64 bias_cs,
                           const void* aux_in, i64 aux0, i64 aux1, i64 aux2, i64 aux3, i64 aux_rs, i64 aux_cs,
                           void* aux_out, i64 aux_out_ld, void* bgrad) {
    const i64 extent[4] = {e0, e1, e2, e3};
    const i64 c_stride[4] = {c0, c1, c2, c3};
    const i64 bias_stride[4] = {bias0, bias1, bias2, bias3};
    const i64 aux_stride[4] = {aux0, aux1, aux2, aux3};
    const R d_scale = (R)(scale_d_ptr ? *scale_d_ptr : scale_d);
    const i64 step = (i64)gridDim.x * blockDim.x;
    for (i64 t = (i64)blockIdx.x * blockDim.x + threadIdx.x; t < count; t += step) {
        const i64 group = t % groups, rest = t / groups;
        const i64 first = (rest % row_blocks) * row_block, b = rest / row_blocks;
        const i64 last = first + row_block < rows ? first + row_block : rows;
        const i64 c_at = batch_offset(b, batch_ndim, extent, c_stride);
        const i64 bias_at = batch_offset(b, batch_ndim, extent, bias_stride);
        const i64 aux_at = batch_offset(b, batch_ndim, extent, aux_stride);
        R sums[8];
        for (int j = 0; j < 8; ++j) sums[j] = (R)0;
        unsigned int largest = 0u;  // bits of the largest |v| so far (a NaN's are above any number's)
        for (i64 row = first; row < last; ++row) {
            unsigned int mask = 0u;
            for (int j = 0; j < 8; ++j) {
                const i64 col = group * 8 + j;
                if (col >= cols) break;
                R v = (R)0;  // the product: exactly 0, to which beta * c is added (so -0 in c gives +0)
                if (c) v = v + beta * load<R>(c, c_code, c_at + row * c_rs + col * c_cs);
                if (bias) v += load<R>(bias, bias_code, bias_at + row * bias_rs + col * bias_cs);
                if (flags & AUX_OUT_GELU) store<R>(aux_out, result_code, (b * rows + row) * aux_out_ld + col, v);
                if (v > (R)0) mask |= 1u << j;
                if (flags & ACT_RELU) v = v < (R)0 ? (R)0 : v;
                if (flags & ACT_GELU) v = gelu(v);
                if (flags & AUX_IN_RELU) {
                    unsigned int byte = ((const unsigned char*)aux_in)[aux_at + row * aux_rs + (col / 8) * aux_cs];
                    v = v * (R)((byte >> (col % 8)) & 1u);
                }
                if (flags & AUX_IN_GELU)
                    v = v * gelu_derivative(load<R>(aux_in, result_code, aux_at + row * aux_rs + col * aux_cs));
                sums[j] += v;
                if (flags & AMAX) {
                    unsigned int bits = float_bits(fabsf((float)v));
                    largest = bits > largest ? bits : largest;
                }
                if (flags & WRITE_RESULT) store<R>(result, result_code, (b * rows + row) * cols + col, v * d_scale);
            }
            if (flags & AUX_OUT_RELU)
                ((unsigned char*)aux_out)[(b * rows + row) * aux_out_ld + group] = (unsigned char)mask;
        }
        if (flags & BGRAD)
            for (int j = 0; j < 8 && group * 8 + j < cols; ++j)
                store<R>(bgrad, result_code, b * cols + group * 8 + j, sums[j]);
        if (flags & AMAX) atomicMax(amax, largest);
    }
}

template <typename T, typename R>
__global__ void degenerate_complex(T* result, i64 rows, i64 cols, i64 count, R beta_re, R beta_im, int batch_ndim,
                                   i64 e0, i64 e1, i64 e2, i64 e3, const T* c, i64 c0, i64 c1, i64 c2, i64 c3,
                                   i64 c_rs, i64 c_cs) {
    const i64 extent[4] = {e0, e1, e2, e3};
    const i64 c_stride[4] = {c0, c1, c2, c3};
    const i64 step = (i64)gridDim.x * blockDim.x;
    for (i64 t = (i64)blockIdx.x * blockDim.x + threadIdx.x; t < count; t += step) {
        const i64 col = t % cols, rest = t / cols, row = rest % rows, b = rest / rows;
        T v;
        v.x = (R)0;
        v.y = (R)0;
        if (c) {
            T x = c[batch_offset(b, batch_ndim, extent, c_stride) + row * c_rs + col * c_cs];
            v.x = v.x + (beta_re * x.x - beta_im * x.y);
            v.y = v.y + (beta_re * x.y + beta_im * x.x);
        }
        result[t] = v;
    }
}

__global__ void set_float8_scales(float* slots, float a, float b, float d)
{
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        slots[0] = a;
        slots[4] = b;
        slots[8] = d;
    }
}

__global__ void copy_float8_scale(const float* source, float* slot)
{
    if (blockIdx.x == 0 && threadIdx.x == 0) *slot = *source;
}
"""

KERNEL_NAMES = ("degenerate<float>", "degenerate<double>", "degenerate_complex<float2, float>",
                "degenerate_complex<double2, double>", "set_float8_scales", "copy_float8_scale")

KERNELS = KernelSet(KERNEL_SOURCE, KERNEL_NAMES)
compile_kernels = KERNELS.compile
_kernel = KERNELS.kernel


def launch(stream, device_id: int, name: str, count: int, *args) -> None:
    """Launch kernel ``name`` for ``count`` threads' work on ``stream`` (a StreamHolder); pointers
    are Python ints, every other argument a numpy scalar of the parameter's type."""
    launch_kernel(stream, _kernel(device_id, name), count, *args)
