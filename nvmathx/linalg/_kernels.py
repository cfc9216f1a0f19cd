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

A thread takes eight neighbouring columns (one byte of the ReLU bitmask) of ``row_block`` rows of
one matrix, so every output element is written by one thread and bias gradients need no atomics.
Inputs are read through strides in elements (0 where broadcast) over up to :data:`MAX_BATCH_DIMS`
batch dimensions; outputs are dense. Loads and stores convert float16, bfloat16 and float8 with
integer arithmetic only (rounding to nearest even; float8 saturates, as the CPU space's results
do), so the same source also compiles as host C++ (the tests run it on the host that way).
"""

from __future__ import annotations

from .._codegen.launch import KernelSet
from .._codegen.launch import launch as launch_kernel

__all__ = ["KERNEL_SOURCE", "KERNEL_NAMES", "DTYPE_CODES", "MAX_BATCH_DIMS", "ACT_RELU", "ACT_GELU", "AUX_OUT_RELU",
           "AUX_OUT_GELU", "AUX_IN_RELU", "AUX_IN_GELU", "BGRAD", "WRITE_RESULT", "AMAX", "compile_kernels", "launch"]

MAX_BATCH_DIMS = 4
DTYPE_CODES = {"float16": 0, "bfloat16": 1, "float32": 2, "float64": 3, "float8_e4m3fn": 4, "float8_e5m2": 5}
ACT_RELU, ACT_GELU, AUX_OUT_RELU, AUX_OUT_GELU, AUX_IN_RELU, AUX_IN_GELU, BGRAD, WRITE_RESULT, AMAX = (
    1 << bit for bit in range(9))

KERNEL_SOURCE = r"""
typedef long long i64;

enum { F16 = 0, BF16 = 1, F32 = 2, F64 = 3, E4M3 = 4, E5M2 = 5 };
enum { ACT_RELU = 1, ACT_GELU = 2, AUX_OUT_RELU = 4, AUX_OUT_GELU = 8, AUX_IN_RELU = 16, AUX_IN_GELU = 32,
       BGRAD = 64, WRITE_RESULT = 128, AMAX = 256 };

__device__ inline unsigned int float_bits(float v) { union { float f; unsigned int u; } x; x.f = v; return x.u; }
__device__ inline float bits_float(unsigned int u) { union { float f; unsigned int u; } x; x.u = u; return x.f; }

// A (1 + e + m)-bit float (float16, float8) to float; has_inf: the top exponent holds infinities
// and NaNs (float16, e5m2), else only its all-ones mantissa is NaN (e4m3fn).
__device__ inline float decode(unsigned int bits, int m, int e, int bias, int has_inf) {
    unsigned int exponent = (bits >> m) & ((1u << e) - 1u), mantissa = bits & ((1u << m) - 1u);
    float value;
    if (exponent == (1u << e) - 1u && (has_inf || mantissa == (1u << m) - 1u))
        value = (has_inf && mantissa == 0u) ? bits_float(0x7f800000u) : bits_float(0x7fc00000u);
    else if (exponent == 0u)
        value = ldexpf((float)mantissa, 1 - bias - m);
    else
        value = ldexpf((float)(mantissa | (1u << m)), (int)exponent - bias - m);
    return ((bits >> (m + e)) & 1u) ? -value : value;
}

// float to a (1 + e + m)-bit float, rounding to nearest even. Past the largest finite value a
// saturating format (float8) gives that value, float16 gives infinity where a cast rounds to it.
__device__ inline unsigned int encode(float v, int m, int e, int bias, float largest, int saturate,
                                      unsigned int nan_bits) {
    unsigned int sign = (float_bits(v) >> 31) << (m + e);
    if (v != v) return nan_bits;
    float a = fabsf(v);
    int top;
    frexpf(largest, &top);
    if (!saturate && a >= largest + ldexpf(1.0f, top - 2 - m)) return sign | (((1u << e) - 1u) << m);
    if (a > largest) a = largest;
    if (a == 0.0f) return sign;
    int exponent;
    frexpf(a, &exponent);
    exponent -= 1;                                    // a in [2^exponent, 2^(exponent + 1))
    if (exponent < 1 - bias) exponent = 1 - bias;     // subnormals: the smallest normal's step
    unsigned int count = (unsigned int)rintf(ldexpf(a, m - exponent));  // steps, exact; ties to even
    if (count >= (2u << m)) { count >>= 1; exponent += 1; }             // rounded up to a power of two
    if (count < (1u << m)) return sign | count;                         // subnormal
    return sign | ((unsigned int)(exponent + bias) << m) | (count - (1u << m));
}

__device__ inline unsigned int to_bf16(float v) {
    if (v != v) return 0x7fc0u;
    unsigned int bits = float_bits(v);
    return (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
}

template <typename R> __device__ inline R load(const void* base, int code, i64 index) {
    switch (code) {
    case F16: return (R)decode(((const unsigned short*)base)[index], 10, 5, 15, 1);
    case BF16: return (R)bits_float(((unsigned int)((const unsigned short*)base)[index]) << 16);
    case F32: return (R)((const float*)base)[index];
    case F64: return (R)((const double*)base)[index];
    case E4M3: return (R)decode(((const unsigned char*)base)[index], 3, 4, 7, 0);
    default: return (R)decode(((const unsigned char*)base)[index], 2, 5, 15, 1);
    }
}

template <typename R> __device__ inline void store(void* base, int code, i64 index, R value) {
    float f = (float)value;
    switch (code) {
    case F16: ((unsigned short*)base)[index] = (unsigned short)encode(f, 10, 5, 15, 65504.0f, 0, 0x7e00u); break;
    case BF16: ((unsigned short*)base)[index] = (unsigned short)to_bf16(f); break;
    case F32: ((float*)base)[index] = f; break;
    case F64: ((double*)base)[index] = (double)value; break;
    case E4M3: ((unsigned char*)base)[index] = (unsigned char)encode(f, 3, 4, 7, 448.0f, 1, 0x7fu); break;
    default: ((unsigned char*)base)[index] = (unsigned char)encode(f, 2, 5, 15, 57344.0f, 1, 0x7eu); break;
    }
}

__device__ inline float tanh_of(float x) { return tanhf(x); }
__device__ inline double tanh_of(double x) { return tanh(x); }

// GELU, tanh form, and its derivative (as nvmathx._matmulcore.epilogs.gelu and gelu_derivative).
template <typename R> __device__ inline R gelu(R x) {
    R t = tanh_of((R)0.7978845608028654 * (x + (R)0.044715 * x * x * x));
    return (R)0.5 * x * ((R)1 + t);
}

template <typename R> __device__ inline R gelu_derivative(R x) {
    R t = tanh_of((R)0.7978845608028654 * (x + (R)0.044715 * x * x * x));
    return (R)0.5 * ((R)1 + t)
           + (R)0.5 * x * ((R)1 - t * t) * (R)0.7978845608028654 * ((R)1 + (R)3 * (R)0.044715 * x * x);
}

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
"""

KERNEL_NAMES = ("degenerate<float>", "degenerate<double>", "degenerate_complex<float2, float>",
                "degenerate_complex<double2, double>", "set_float8_scales")

KERNELS = KernelSet(KERNEL_SOURCE, KERNEL_NAMES)
compile_kernels = KERNELS.compile
_kernel = KERNELS.kernel


def launch(stream, device_id: int, name: str, count: int, *args) -> None:
    """Launch kernel ``name`` for ``count`` threads' work on ``stream`` (a StreamHolder); pointers
    are Python ints, every other argument a numpy scalar of the parameter's type."""
    launch_kernel(stream, _kernel(device_id, name), count, *args)
