"""CUDA C++ source shared by the NVRTC kernels that read and write several floating-point formats.

``FLOAT_FORMATS_SOURCE`` defines ``i64``, the format codes (:data:`FORMAT_CODES`), bit-exact
conversions between float and float16 / bfloat16 / float8 (integer arithmetic only, rounding to
nearest even; float8 saturates), ``load<R>`` / ``store<R>`` through a format code, and the tanh
GELU with its derivative. It compiles as CUDA and as host C++, so the tests run the kernels that
include it on the host.
"""

from __future__ import annotations

__all__ = ["FORMAT_CODES", "FLOAT_FORMATS_SOURCE"]

FORMAT_CODES = {"float16": 0, "bfloat16": 1, "float32": 2, "float64": 3, "float8_e4m3fn": 4, "float8_e5m2": 5}

FLOAT_FORMATS_SOURCE = r"""
typedef long long i64;

enum { F16 = 0, BF16 = 1, F32 = 2, F64 = 3, E4M3 = 4, E5M2 = 5 };

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
"""
