"""The float8 training kernels: one pass per tensor that casts, transposes and measures it, and the
scaling update. Compiled with NVRTC once per device, launched through cuda.core on torch's current
stream, so CUDA graphs capture them; the source also compiles as host C++ (the tests run it so).

``cast_transpose<IN, OUT>`` reads a ``rows x cols`` matrix (row stride ``in_ld``) of format ``IN``
(float16, bfloat16, float32), applies ``op`` elementwise (none, ReLU, GELU, or the gradient of
ReLU / GELU at the matching element of ``aux``, stride ``aux_ld``, given the incoming gradient)
and, according to ``flags``:

- ``WRITE``: stores ``v * scale`` as float8 ``OUT`` (e4m3fn or e5m2, saturating) in ``out``,
  row-major and dense;
- ``WRITE_T``: stores the same bytes transposed in ``out_t`` (``cols x rows``, dense): the
  K-major copy that Hopper's float8 GEMMs need for the gradient GEMMs;
- ``AMAX``: max-accumulates ``|v|`` into ``amax`` (float32 bits as unsigned int: the order of
  non-negative floats, NaN above every number);
- ``DBIAS``: writes the column sums of ``v`` over each tile of 128 rows to ``dbias_partial`` (one
  row per 128 input rows), which ``add_rows`` then adds up in one launch, in a fixed order
  (deterministic, no atomics);
- ``DYNAMIC``: takes the scale from the amax already in ``amax_in`` (this step's, from an earlier
  ``AMAX`` pass) instead of ``scale``, and records it in ``scale`` and ``scale_inv``.

A block of :data:`TILE_THREADS` threads takes a tile of 128 rows and 128 columns at a time (grid
stride over tiles, :func:`tile_count` of them), a thread two groups of four rows of eight columns:
a 16-byte read per row (when the input is 16-byte aligned) and an 8-byte row-major store; the
transposed bytes pass through shared memory and leave as 128 contiguous bytes per column (fewer
made the casts slower). ``rows`` must be a
multiple of 16 and ``cols`` of 8 (float8 GEMMs need multiples of 16 anyway).

``column_partials<IN>`` sums the columns of a matrix over bands of rows (the bias gradient of the
unquantised layers, :mod:`nvmathx.torch._column_sums`; ``add_rows`` adds the bands up).

``update_scaling`` applies delayed scaling to the slots in ``mask`` of a layer's state, one warp
per slot (:data:`WARP` threads of the launch each): from the amax history (``history_len x
slots``, row 0 the latest step's accumulator) it takes the largest value (or row 0's,
``most_recent``), sets ``scale = fp8_max / amax / 2**margin`` (kept as it was when that amax is 0,
infinite or NaN; the largest float when the quotient overflows), then shifts the history down one
row and zeroes row 0 (slot ``i``'s scale at ``scale[i * scale_stride]``, its inverse likewise).
With ``zero_only`` it only zeroes row 0 (dynamic scaling's accumulators, before a step). The lanes
share the history's rows, each lane reading its block before writing it, so a history of 1024
steps costs one wait on memory rather than one per row.
"""

from __future__ import annotations

from ..._codegen.float_formats import FLOAT_FORMATS_SOURCE, FORMAT_CODES
from ..._codegen.launch import BLOCK, KernelSet
from ..._codegen.launch import launch as launch_kernel

__all__ = ["ADD_COLUMNS", "AMAX", "DBIAS", "DYNAMIC", "KERNEL_NAMES", "KERNEL_SOURCE", "OPS", "PARTIAL_STRIP",
           "PARTIAL_THREADS", "TILE_COLS", "TILE_ROWS", "TILE_THREADS", "WRITE", "WRITE_T", "cast_transpose_name",
           "column_partials_name", "launch", "tile_count"]

WRITE, WRITE_T, AMAX, DBIAS, DYNAMIC = (1 << bit for bit in range(5))
OPS = {"none": 0, "relu": 1, "gelu": 2, "drelu": 3, "dgelu": 4}
TILE_ROWS, TILE_COLS = 128, 128  # a block's tile (and the rows per bias-gradient partial row)
TILE_THREADS = BLOCK  # a block, one per tile: each thread takes two of its groups of 4 rows by 8 columns
WARP = 32  # threads of update_scaling per slot (the lanes of one warp)
PARTIAL_STRIP = 256  # columns of a column_partials block (32 lanes of eight)
PARTIAL_THREADS = 256  # its threads: eight warps
ADD_COLUMNS = 32  # columns of an add_rows block (its eight warps: 256 threads)


def tile_count(rows: int, cols: int) -> int:
    """Tiles of cast_transpose for a ``rows x cols`` matrix (one block's work each).

    >>> tile_count(16384, 4096), tile_count(64, 136)
    (4096, 2)
    """
    return -(-rows // TILE_ROWS) * -(-cols // TILE_COLS)


KERNEL_SOURCE = FLOAT_FORMATS_SOURCE + r"""
enum { WRITE = 1, WRITE_T = 2, AMAX = 4, DBIAS = 8, DYNAMIC = 16 };
enum { OP_NONE = 0, OP_RELU = 1, OP_GELU = 2, OP_DRELU = 3, OP_DGELU = 4 };
enum { COLS = 8 };

__device__ inline float largest_finite(int out) { return out == E4M3 ? 448.0f : 57344.0f; }

// The scale that maps amax onto the float8 format's largest value, 2**-margin of it; `previous`
// when amax is 0, infinite or NaN; the largest float when the quotient overflows.
__device__ inline float scale_for(float amax, float fp8_max, float margin_factor, float previous) {
    if (!(amax > 0.0f) || amax > 3.402823466e38f) return previous;
    // kept normal, so that neither the scale nor its inverse is infinite (an amax near float32's
    // largest with a margin would make it subnormal)
    float scale = fp8_max / amax * margin_factor;
    return scale > 3.402823466e38f ? 3.402823466e38f : scale < 1.175494351e-38f ? 1.175494351e-38f : scale;
}

// Two floats to two float8 bytes (lo in the low byte), rounding to nearest even, saturating.
template <int OUT> __device__ inline unsigned int to_float8x2(float lo, float hi) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    unsigned short packed;
    if (OUT == E4M3)
        asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(packed) : "f"(hi), "f"(lo));
    else
        asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(packed) : "f"(hi), "f"(lo));
    return packed;
#else
    if (OUT == E4M3)
        return encode(lo, 3, 4, 7, 448.0f, 1, 0x7fu) | (encode(hi, 3, 4, 7, 448.0f, 1, 0x7fu) << 8);
    return encode(lo, 2, 5, 15, 57344.0f, 1, 0x7eu) | (encode(hi, 2, 5, 15, 57344.0f, 1, 0x7eu) << 8);
#endif
}

// Eight neighbouring elements of one row, as loaded: 16-bit formats packed two a word (one 16-byte
// load when `vector`: 16-byte aligned), float32 as its bits. Decoded only when used, so that a
// thread's four rows in flight cost half the registers.
template <int IN> struct Raw8 { unsigned int words[IN == F32 ? 8 : 4]; };

template <int IN> __device__ inline void load_raw8(const void* base, i64 index, bool vector, Raw8<IN>& raw) {
    if (IN == F16 || IN == BF16) {
        const unsigned short* halves = (const unsigned short*)base + index;
        if (vector) {
            const uint4 word = *(const uint4*)halves;
            raw.words[0] = word.x;
            raw.words[1] = word.y;
            raw.words[2] = word.z;
            raw.words[3] = word.w;
        } else {
            for (int k = 0; k < 4; ++k) raw.words[k] = halves[2 * k] | ((unsigned int)halves[2 * k + 1] << 16);
        }
        return;
    }
    for (int j = 0; j < COLS; ++j) raw.words[j] = float_bits(load<float>(base, IN, index + j));
}

template <int IN> __device__ inline void decode8(const Raw8<IN>& raw, float* v) {
    for (int k = 0; k < 4; ++k) {
        if (IN == BF16) {
            v[2 * k] = bits_float(raw.words[k] << 16);
            v[2 * k + 1] = bits_float(raw.words[k] & 0xffff0000u);
        } else if (IN == F16) {
            v[2 * k] = decode(raw.words[k] & 0xffffu, 10, 5, 15, 1);
            v[2 * k + 1] = decode(raw.words[k] >> 16, 10, 5, 15, 1);
        } else {
            v[2 * k] = bits_float(raw.words[2 * k]);
            v[2 * k + 1] = bits_float(raw.words[2 * k + 1]);
        }
    }
}

template <int OP> __device__ inline float apply_op(float v, float aux) {
    if (OP == OP_RELU) return v > 0.0f ? v : 0.0f;
    if (OP == OP_GELU) return gelu(v);
    if (OP == OP_DRELU) return aux > 0.0f ? v : 0.0f;
    if (OP == OP_DGELU) return v * gelu_derivative(aux);
    return v;
}

#ifdef __CUDA_ARCH__
enum { WARP = 32 };
__device__ inline void sync_warp() { __syncwarp(); }
__device__ inline void sync_block() { __syncthreads(); }
#define SHARED __shared__
#else
enum { WARP = 1 };  // on the host a launch is one thread: a warp of one lane
inline void sync_warp() {}
inline void sync_block() {}  // and a block of one thread, which loops over the block's share
#define SHARED static
#endif

__device__ inline unsigned int warp_max(unsigned int value) {
#ifdef __CUDA_ARCH__
    for (int offset = 16; offset > 0; offset >>= 1) {
        unsigned int other = __shfl_xor_sync(0xffffffffu, value, offset);
        value = other > value ? other : value;
    }
#endif
    return value;
}

// Columns c < count of ROWS rows of per-column sums in shared memory, added in a fixed order
// (deterministic), into out[c]: the last step of a block's column sums.
template <int ROWS, int COLUMNS>
__device__ inline void add_shared_rows(const float (*sums)[COLUMNS], i64 count, float* out) {
    for (int c = threadIdx.x; c < COLUMNS; c += blockDim.x)
        if (c < count) {
            float total = 0.0f;
            for (int r = 0; r < ROWS; ++r) total += sums[r][c];
            out[c] = total;
        }
}

// A block's tile: TILE_ROWS x TILE_COLS elements in groups of four rows of eight columns (one
// 16-byte read per row), GROUPS_OF_TILE of them, a thread's share one group or more. Its float8
// bytes go to the row-major output directly and, four rows a word, to shared memory, from which the
// transposed tile leaves as TILE_ROWS contiguous bytes per column: a
// thread storing 16 scattered bytes per column instead ran the cast at under 1 TB/s.
#ifndef CAST_TILE_ROWS
#define CAST_TILE_ROWS 128
#endif
enum { TILE_ROWS = CAST_TILE_ROWS, TILE_COLS = 128, QUADS = TILE_ROWS / 4, GROUPS = TILE_COLS / COLS,
       GROUPS_OF_TILE = QUADS * GROUPS, WORDS = QUADS + 1 /* padded: fewer bank conflicts */,
       CHUNKS = TILE_ROWS / 16 };

// The elementwise op is a template parameter: a run-time op in the unrolled loop made every element
// an indirect branch. cast_transpose below picks the instance once per launch.
template <int IN, int OUT, int OP>
__device__ inline void cast_transpose_op(const void* __restrict__ in, i64 in_ld, const void* __restrict__ aux,
                                         i64 aux_ld, i64 rows, i64 cols, int flags, unsigned char* __restrict__ out,
                                         unsigned char* __restrict__ out_t, float* scale, float* scale_inv,
                                         unsigned int* amax, const unsigned int* amax_in, float margin_factor,
                                         float* dbias_partial, int vector, unsigned int (*words_t)[WORDS],
                                         float (*quad_sums)[TILE_COLS]) {
    const float fp8_max = largest_finite(OUT);
    float s;
    if (flags & DYNAMIC) {
        s = scale_for(bits_float(*amax_in), fp8_max, margin_factor, 1.0f);
        if (blockIdx.x == 0 && threadIdx.x == 0) {
            *scale = s;
            *scale_inv = 1.0f / s;
        }
    } else {
        s = *scale;
    }
    const i64 tile_rows = (rows + TILE_ROWS - 1) / TILE_ROWS, tile_cols = (cols + TILE_COLS - 1) / TILE_COLS;
    const bool vector_in = vector & 1, vector_aux = (vector >> 1) & 1;
    const bool gradient = OP == OP_DRELU || OP == OP_DGELU;
    unsigned int largest = 0u;
    for (i64 tile = blockIdx.x; tile < tile_rows * tile_cols; tile += gridDim.x) {
        const i64 row0 = tile / tile_cols * TILE_ROWS, col0 = tile % tile_cols * TILE_COLS;
        // neighbouring threads take neighbouring column groups: 256 contiguous bytes of a row per 16 threads
        for (int thread = threadIdx.x; thread < GROUPS_OF_TILE; thread += blockDim.x) {
            const int group = thread % GROUPS, quad = thread / GROUPS;
            const i64 col = col0 + group * COLS, first = row0 + quad * 4;
            float sums[COLS];
            unsigned int words[COLS];
            for (int j = 0; j < COLS; ++j) {
                sums[j] = 0.0f;
                words[j] = 0u;
            }
            if (col < cols && first < rows) {
                Raw8<IN> raw[4], raw_aux[4];
#pragma unroll
                for (int r = 0; r < 4; ++r) {  // the four rows' reads first, in flight together
                    load_raw8<IN>(in, (first + r) * in_ld + col, vector_in, raw[r]);
                    if (gradient) load_raw8<IN>(aux, (first + r) * aux_ld + col, vector_aux, raw_aux[r]);
                }
#pragma unroll
                for (int r = 0; r < 4; ++r) {
                    float v[COLS], a[COLS];
                    decode8<IN>(raw[r], v);
                    if (gradient) decode8<IN>(raw_aux[r], a);
                    else for (int j = 0; j < COLS; ++j) a[j] = 0.0f;
                    unsigned int bytes[COLS];
                    for (int j = 0; j < COLS; j += 2) {
                        v[j] = apply_op<OP>(v[j], a[j]);
                        v[j + 1] = apply_op<OP>(v[j + 1], a[j + 1]);
                        const unsigned int pair = to_float8x2<OUT>(v[j] * s, v[j + 1] * s);
                        bytes[j] = pair & 0xffu;
                        bytes[j + 1] = pair >> 8;
                    }
                    for (int j = 0; j < COLS; ++j) {
                        sums[j] += v[j];
                        const unsigned int magnitude = float_bits(fabsf(v[j]));
                        largest = magnitude > largest ? magnitude : largest;
                        words[j] |= bytes[j] << (8 * r);
                    }
                    if (flags & WRITE) {
                        uint2 packed;
                        packed.x = bytes[0] | (bytes[1] << 8) | (bytes[2] << 16) | (bytes[3] << 24);
                        packed.y = bytes[4] | (bytes[5] << 8) | (bytes[6] << 16) | (bytes[7] << 24);
                        *(uint2*)(out + (first + r) * cols + col) = packed;
                    }
                }
            }
            if (flags & WRITE_T)
                for (int j = 0; j < COLS; ++j) words_t[group * COLS + j][quad] = words[j];
            if (flags & DBIAS)
                for (int j = 0; j < COLS; ++j) quad_sums[quad][group * COLS + j] = sums[j];
        }
        sync_block();
        if (flags & WRITE_T)  // CHUNKS threads per column: its rows as 16-byte stores side by side
            for (int k = threadIdx.x; k < TILE_COLS * CHUNKS; k += blockDim.x) {
                const int c = k / CHUNKS, chunk = k % CHUNKS;
                const i64 row = row0 + chunk * 16;
                if (col0 + c < cols && row < rows) {
                    uint4 packed;
                    packed.x = words_t[c][4 * chunk];
                    packed.y = words_t[c][4 * chunk + 1];
                    packed.z = words_t[c][4 * chunk + 2];
                    packed.w = words_t[c][4 * chunk + 3];
                    *(uint4*)(out_t + (col0 + c) * rows + row) = packed;
                }
            }
        if (flags & DBIAS)  // the tile's column sums
            add_shared_rows<QUADS, TILE_COLS>(quad_sums, cols - col0, dbias_partial + row0 / TILE_ROWS * cols + col0);
        sync_block();  // the next tile overwrites shared memory
    }
    if (flags & AMAX) {
        largest = warp_max(largest);
        if ((threadIdx.x & 31u) == 0u && largest) atomicMax(amax, largest);
    }
}

template <int IN, int OUT>
__global__ void cast_transpose(const void* __restrict__ in, i64 in_ld, const void* __restrict__ aux, i64 aux_ld,
                               i64 rows, i64 cols, int op, int flags, unsigned char* __restrict__ out,
                               unsigned char* __restrict__ out_t, float* scale, float* scale_inv,
                               unsigned int* amax, const unsigned int* amax_in, float margin_factor,
                               float* dbias_partial, int vector) {
    SHARED unsigned int words_t[TILE_COLS][WORDS];
    SHARED float quad_sums[QUADS][TILE_COLS];
#define NVMATHX_CAST(OP) cast_transpose_op<IN, OUT, OP>(in, in_ld, aux, aux_ld, rows, cols, flags, out, out_t, \
                                                      scale, scale_inv, amax, amax_in, margin_factor, \
                                                      dbias_partial, vector, words_t, quad_sums)
#ifdef CAST_OP  // a build for one op: only its registers count
    NVMATHX_CAST(CAST_OP);
#else
    switch (op) {
    case OP_RELU: NVMATHX_CAST(OP_RELU); break;
    case OP_GELU: NVMATHX_CAST(OP_GELU); break;
    case OP_DRELU: NVMATHX_CAST(OP_DRELU); break;
    case OP_DGELU: NVMATHX_CAST(OP_DGELU); break;
    default: NVMATHX_CAST(OP_NONE); break;
    }
#endif
#undef NVMATHX_CAST
}

// Column sums of a rows x cols matrix (row stride `ld`, format IN) over `splits` bands of rows, into
// partial[split * cols + c]: a block takes a strip of 256 columns of one band, each warp every
// eighth row of it (a warp reads 512 contiguous bytes of a row, eight rows in flight per thread),
// then adds its eight warps' sums in a fixed order. One read at memory speed; add_rows finishes.
enum { PARTIAL_WARPS = 8, PARTIAL_STRIP = 32 * COLS, PARTIAL_DEPTH = 8 };

template <int IN>
__global__ void column_partials(const void* __restrict__ in, i64 ld, i64 rows, i64 cols, i64 splits, int vector,
                                float* __restrict__ partial) {
    SHARED float warp_sums[PARTIAL_WARPS][PARTIAL_STRIP];
    const i64 strips = (cols + PARTIAL_STRIP - 1) / PARTIAL_STRIP, band = (rows + splits - 1) / splits;
    for (i64 item = blockIdx.x; item < strips * splits; item += gridDim.x) {
        const i64 col0 = item % strips * PARTIAL_STRIP, first = item / strips * band;
        const i64 last = first + band < rows ? first + band : rows;
        for (int thread = threadIdx.x; thread < PARTIAL_WARPS * 32; thread += blockDim.x) {
            const int warp = thread / 32, lane = thread % 32;
            const i64 col = col0 + lane * COLS;
            float sums[COLS];
            for (int j = 0; j < COLS; ++j) sums[j] = 0.0f;
            if (col < cols) {
                i64 row = first + warp;
                for (; row + (PARTIAL_DEPTH - 1) * PARTIAL_WARPS < last; row += PARTIAL_DEPTH * PARTIAL_WARPS) {
                    Raw8<IN> raw[PARTIAL_DEPTH];
#pragma unroll
                    for (int r = 0; r < PARTIAL_DEPTH; ++r)
                        load_raw8<IN>(in, (row + r * PARTIAL_WARPS) * ld + col, vector, raw[r]);
#pragma unroll
                    for (int r = 0; r < PARTIAL_DEPTH; ++r) {
                        float v[COLS];
                        decode8<IN>(raw[r], v);
                        for (int j = 0; j < COLS; ++j) sums[j] += v[j];
                    }
                }
                for (; row < last; row += PARTIAL_WARPS) {
                    Raw8<IN> raw;
                    float v[COLS];
                    load_raw8<IN>(in, row * ld + col, vector, raw);
                    decode8<IN>(raw, v);
                    for (int j = 0; j < COLS; ++j) sums[j] += v[j];
                }
            }
            for (int j = 0; j < COLS; ++j) warp_sums[warp][lane * COLS + j] = sums[j];
        }
        sync_block();
        add_shared_rows<PARTIAL_WARPS, PARTIAL_STRIP>(warp_sums, cols - col0, partial + item / strips * cols + col0);
        sync_block();  // the next item overwrites shared memory
    }
}

// Column sums of `parts` rows of partial sums into result[c], format result_code (the bias
// gradient), in one launch: a block of ADD_WARPS warps takes 32 columns, each warp every
// ADD_WARPS-th row of them (128 contiguous bytes a row), then the warps' sums are added in a fixed
// order: deterministic. A second matrix of partial sums (`partial2`, `cols2` columns, the same
// number of rows: a block's two bias gradients, summed once both exist) goes to result2 in the same
// launch when cols2 > 0; its groups of 32 columns follow the first's.
enum { ADD_WARPS = 8 };

__global__ void add_rows(const float* __restrict__ partial, i64 parts, i64 cols, void* result,
                         const float* __restrict__ partial2, i64 cols2, void* result2, int result_code) {
    SHARED float warp_sums[ADD_WARPS][32];
    const i64 first_groups = (cols + 31) / 32, groups = first_groups + (cols2 + 31) / 32;
    for (i64 item = blockIdx.x; item < groups; item += gridDim.x) {
        const bool second = item >= first_groups;
        const float* source = second ? partial2 : partial;
        const i64 width = second ? cols2 : cols, group = second ? item - first_groups : item;
        for (int thread = threadIdx.x; thread < ADD_WARPS * 32; thread += blockDim.x) {
            const int warp = thread / 32, lane = thread % 32;
            const i64 c = group * 32 + lane;
            float sum = 0.0f;
            if (c < width) {
#pragma unroll 8
                for (i64 p = warp; p < parts; p += ADD_WARPS) sum += source[p * width + c];
            }
            warp_sums[warp][lane] = sum;
        }
        sync_block();
        for (int lane = threadIdx.x; lane < 32; lane += blockDim.x)
            if (group * 32 + lane < width) {
                float total = 0.0f;
                for (int w = 0; w < ADD_WARPS; ++w) total += warp_sums[w][lane];
                store<float>(second ? result2 : result, result_code, group * 32 + lane, total);
            }
        sync_block();  // the next group overwrites shared memory
    }
}

// One warp per slot (a "warp" of one thread when compiled for the host): each lane takes a block of
// the history's rows and moves them down one row, ROLL_CHUNK rows at a time from the top, every read
// of a chunk issued before its writes. Before any lane writes, each has read the row above its block
// (another lane's), its own top row (which the roll drops) and its first chunk: a history of up to
// 32 * ROLL_CHUNK rows costs one wait on memory. The reads give the lane's largest amax on the way.
enum { ROLL_CHUNK = 32 };

// moved[r] = row top - r - 1 of the slot's column, for the destinations top - r above `first`
__device__ inline void read_chunk(const float* history, i64 slots, i64 slot, i64 top, i64 first,
                                  float (&moved)[ROLL_CHUNK]) {
#pragma unroll
    for (int r = 0; r < ROLL_CHUNK; ++r) moved[r] = top - r > first ? history[(top - r - 1) * slots + slot] : 0.0f;
}

__device__ inline void write_chunk(float* history, i64 slots, i64 slot, i64 top, i64 first,
                                   const float (&moved)[ROLL_CHUNK], bool track, unsigned int& largest) {
#pragma unroll
    for (int r = 0; r < ROLL_CHUNK; ++r)
        if (top - r > first) {
            history[(top - r) * slots + slot] = moved[r];
            const unsigned int bits = track ? float_bits(moved[r]) : 0u;
            largest = bits > largest ? bits : largest;
        }
}

__global__ void update_scaling(float* history, i64 history_len, i64 slots, unsigned long long mask,
                               unsigned long long e5m2_mask, float* scale, i64 scale_stride, float* scale_inv,
                               i64 scale_inv_stride, float margin_factor, int most_recent, int zero_only) {
    const i64 step = (i64)gridDim.x * blockDim.x, count = slots * WARP;
    const i64 rows_per_lane = (history_len + WARP - 1) / WARP;
    for (i64 t = (i64)blockIdx.x * blockDim.x + threadIdx.x; t < count; t += step) {
        const i64 slot = t / WARP, lane = t % WARP;
        if (!((mask >> slot) & 1ull)) continue;  // the whole warp: one slot per warp
        const i64 first = lane * rows_per_lane;
        const i64 last = first + rows_per_lane < history_len ? first + rows_per_lane : history_len;
        if (!zero_only) {
            const bool rows = first < last, track = !most_recent;
            const float above = rows && first > 0 ? history[(first - 1) * slots + slot] : 0.0f;
            unsigned int largest = 0u;
            if (most_recent) {
                if (lane == 0) largest = float_bits(history[slot]);
            } else if (rows) {
                largest = float_bits(history[(last - 1) * slots + slot]);
            }
            float moved[ROLL_CHUNK];
            i64 top = last - 1;  // the chunk's highest destination
            read_chunk(history, slots, slot, top, first, moved);
            sync_warp();  // every lane has read the row above its block
            while (top > first) {
                write_chunk(history, slots, slot, top, first, moved, track, largest);
                top -= ROLL_CHUNK;
                if (top > first) read_chunk(history, slots, slot, top, first, moved);
            }
            if (rows && first > 0) history[first * slots + slot] = above;
            largest = warp_max(largest);  // (in most_recent only lane 0 holds a value)
            if (lane == 0) {
                const float fp8_max = ((e5m2_mask >> slot) & 1ull) ? 57344.0f : 448.0f;
                const float s = scale_for(bits_float(largest), fp8_max, margin_factor, scale[slot * scale_stride]);
                scale[slot * scale_stride] = s;
                scale_inv[slot * scale_inv_stride] = 1.0f / s;
            }
            sync_warp();
        }
        if (lane == 0) history[slot] = 0.0f;
    }
}
"""


def column_partials_name(in_dtype: str) -> str:
    """The column-sum kernel instance for a torch dtype name (the unquantised layers' bias gradient)."""
    return f"column_partials<{FORMAT_CODES[in_dtype]}>"


def cast_transpose_name(in_dtype: str, out_dtype: str) -> str:
    """The kernel instance for torch dtype names, e.g. ``("bfloat16", "float8_e4m3fn")``."""
    return f"cast_transpose<{FORMAT_CODES[in_dtype]}, {FORMAT_CODES[out_dtype]}>"


KERNEL_NAMES = tuple(cast_transpose_name(i, o) for i in ("float16", "bfloat16", "float32")
                     for o in ("float8_e4m3fn", "float8_e5m2")) + ("add_rows", "update_scaling") + tuple(
    column_partials_name(i) for i in ("float16", "bfloat16", "float32"))

KERNELS = KernelSet(KERNEL_SOURCE, KERNEL_NAMES)


def launch(stream, device_id: int, name: str, count: int, *args) -> None:
    """Launch kernel ``name`` for ``count`` threads' work on ``stream`` (a StreamHolder); arguments
    as :func:`nvmathx._codegen.launch.launch` takes them."""
    launch_kernel(stream, KERNELS.kernel(device_id, name), count, *args)
