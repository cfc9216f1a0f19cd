"""The fused FFT kernel's CUDA C++ run on the host: every thread of a block is an OS thread, blocks
run one after another, and the cuFFTDx function is replaced by a model of its register API (element
``threadIdx.x + i * stride`` of row ``threadIdx.y`` in ``thread_data[i]``; reals packed on the real
side of R2C/C2R) that computes the unnormalised DFT of each row in float64. The model fills every
register it does not define with NaN, so a store of a register the layout leaves undefined shows.

What this checks is the kernel's own code (row and element offsets, ragged batches, the scale,
the callbacks' signature and offsets) against the layout the device API's GPU tests establish for
cuFFTDx; the transform itself runs on the GPU only.
"""

import ctypes

import numpy as np

from helpers.host_kernels import ASSUME, build_library
from nvmathx._codegen import fused_fft

__all__ = ["HostFusedKernel"]

_C_TYPES = {"complex64": "float2", "complex128": "double2", "float32": "float", "float64": "double"}

_PRELUDE = r"""
#include <barrier>
#include <cmath>
#include <complex>
#include <limits>
#include <thread>
#include <vector>
#define __global__
#define __device__
#define __shared__
#define __launch_bounds__(...)
#define __align__(n)
#define __syncthreads() block_barrier->arrive_and_wait()
struct dims_ {{ unsigned int x, y, z; }};
static thread_local dims_ threadIdx;
static dims_ blockIdx;
struct float2 {{ float x, y; }};
struct double2 {{ double x, y; }};
alignas(16) unsigned char shared_bytes[{shared_bytes}];
static std::barrier<>* block_barrier;
static std::complex<double> rows_[{ffts_per_block}][{size}], results_[{ffts_per_block}][{size}];
"""

_MODEL = r"""
extern "C" void model_fft({element}* thread_data, {element}* shared) {{
    typedef decltype(thread_data->x) real;
    real* const reals = reinterpret_cast<real*>(thread_data);
    const unsigned t = threadIdx.x, y = threadIdx.y;
    for (unsigned i = 0; i < {input_slots}u; ++i) {{
        const unsigned p = t + i * {stride}u;
        if (p < {input_length}u) {{ {load_register}; }}
    }}
    block_barrier->arrive_and_wait();
    if (t == 0) {{
        const double pi = 3.14159265358979323846;
        std::complex<double>* x = rows_[y];
        if ({c2r})  // the Hermitian half completes the spectrum
            for (unsigned k = {size}u / 2 + 1; k < {size}u; ++k) x[k] = std::conj(x[{size}u - k]);
        for (unsigned k = 0; k < {size}u; ++k) {{
            std::complex<double> sum = 0;
            for (unsigned n = 0; n < {size}u; ++n)
                sum += x[n] * std::polar(1.0, {sign} * 2 * pi * double((unsigned long long)k * n % {size}u) / {size});
            results_[y][k] = sum;
        }}
    }}
    block_barrier->arrive_and_wait();
    const real nan = std::numeric_limits<real>::quiet_NaN();
    for (unsigned i = 0; i < {storage}u; ++i) thread_data[i] = {{nan, nan}};
    const std::complex<double>* const result = results_[y];
    for (unsigned i = 0; i < {output_slots}u; ++i) {{
        const unsigned p = t + i * {stride}u;
        if (p < {output_length}u) {{ {store_register}; }}
    }}
    block_barrier->arrive_and_wait();
}}
"""

# how the model moves one register position p (slot i) in and out, per layout of a side
_LOAD_REGISTER = {
    "complex": "rows_[y][p] = std::complex<double>(thread_data[i].x, thread_data[i].y)",
    "reals": "rows_[y][p] = reals[i]",
    "pairs": "rows_[y][2 * p] = thread_data[i].x; rows_[y][2 * p + 1] = thread_data[i].y",
}
_STORE_REGISTER = {
    "complex": "thread_data[i] = {(real)result[p].real(), (real)result[p].imag()}",
    "reals": "reals[i] = (real)result[p].real()",
    "pairs": "thread_data[i] = {(real)result[2 * p].real(), (real)result[2 * p + 1].real()}",
}


_LAUNCHER = r"""
extern "C" void run(const void* in, void* out, long long rows, long long in_row_stride,
                    long long in_element_stride, long long out_row_stride, long long out_element_stride,
                    double scale, void* load_info, void* store_info, long long blocks, unsigned bx, unsigned by) {{
    for (long long b = 0; b < blocks; ++b) {{
        blockIdx = {{(unsigned)b, 0, 0}};
        std::barrier<> barrier(bx * by);
        block_barrier = &barrier;
        std::vector<std::thread> threads;
        for (unsigned y = 0; y < by; ++y)
            for (unsigned x = 0; x < bx; ++x)
                threads.emplace_back([=] {{
                    threadIdx = {{x, y, 0}};
                    {symbol}(static_cast<const {input}*>(in), static_cast<{output}*>(out), rows, in_row_stride,
                             in_element_stride, out_row_stride, out_element_stride, ({real})scale, load_info,
                             store_info);
                }});
        for (std::thread& thread : threads) thread.join();
    }}
}}
"""


class HostFusedKernel:
    """The fused kernel of the Block FFT descriptor ``fft`` built as a host library, with the C++
    callbacks ``callbacks`` (source defining the symbols ``load`` / ``store``) where given."""

    def __init__(self, fft, load: str | None = None, store: str | None = None, callbacks: str = "",
                 staged_loads: bool = False):
        self.fft = fft
        self.parameters = {**fused_fft.kernel_parameters(fft, load, store), "staged_loads": staged_loads}
        p = self.parameters
        kind = fft.fft_type
        self.block_dim = tuple(fft.block_dim)
        real = _C_TYPES[p["element"]][:-1]
        # the model reads the layout from the descriptor's traits alone, not from the kernel's parameters
        real_side = "pairs" if fft.real_mode == "folded" else "reals"
        input_side = real_side if kind == "r2c" else "complex"
        output_side = real_side if kind == "c2r" else "complex"

        def slots(side):
            return 2 * fft.storage_size if side == "reals" else fft.storage_size

        model = _MODEL.format(
            element=_C_TYPES[p["element"]], size=fft.size, stride=fft.stride, input_length=fft.input_length,
            output_length=fft.output_length, storage=fft.storage_size, input_slots=slots(input_side),
            output_slots=slots(output_side), c2r="true" if kind == "c2r" else "false",
            sign=-1 if kind == "r2c" or (kind == "c2c" and fft.direction == "forward") else 1,
            load_register=_LOAD_REGISTER[input_side], store_register=_STORE_REGISTER[output_side])
        prelude = _PRELUDE.format(shared_bytes=max(fused_fft.shared_memory_bytes(fft, staged_loads), 16),
                                  ffts_per_block=p["ffts_per_block"], size=fft.size)
        launcher = _LAUNCHER.format(symbol="fused", input=_C_TYPES[p["input"]], output=_C_TYPES[p["output"]],
                                    real=real)
        self._parts = (prelude + ASSUME + 'extern "C" void model_fft(' + _C_TYPES[p["element"]] + "*, " +
                       _C_TYPES[p["element"]] + "*);\n" + callbacks, model + launcher)
        self._libraries = {}
        self.dense_rows = None  # (input, output) to compile in whatever the rows; None: as a plan would

    def library(self, unit_strides, dense_rows=(False, False)):
        """The host library of the kernel compiled with ``unit_strides`` and ``dense_rows`` (input,
        output), as a plan whose rows have those unit element strides and dense row strides compiles it."""
        variant = (tuple(unit_strides), tuple(dense_rows))
        if variant not in self._libraries:
            kernel = fused_fft.kernel_source("fused", "model_fft", **self.parameters, unit_strides=unit_strides,
                                             dense_rows=dense_rows)
            library = build_library(self._parts[0] + kernel + self._parts[1], "fused-fft-host",
                                    ("-std=c++20", "-pthread"))
            library.run.argtypes = [ctypes.c_void_p] * 2 + [ctypes.c_longlong] * 5 + [ctypes.c_double] + \
                [ctypes.c_void_p] * 2 + [ctypes.c_longlong, ctypes.c_uint, ctypes.c_uint]
            self._libraries[variant] = library
        return self._libraries[variant]

    def run(self, source: np.ndarray, target: np.ndarray, rows: int, in_strides, out_strides, scale=1.0,
            load_info=None, store_info=None, source_offset=0, target_offset=0):
        """Launch over ``rows`` rows of the flat buffers ``source`` and ``target`` (elements from
        ``*_offset``; ``*_strides`` are (row, element) strides in elements), as FusedPlan.run does,
        with the kernel its plan compiles: a unit element stride compiled in where the side has one,
        and the row stride where that side's rows are dense."""
        assert source.flags.c_contiguous and target.flags.c_contiguous
        blocks = -(-rows // self.parameters["ffts_per_block"])
        unit = (in_strides[1] == 1, out_strides[1] == 1)
        lengths = fused_fft.row_elements(self.fft)
        dense = (unit[0] and in_strides[0] == lengths[0], unit[1] and out_strides[0] == lengths[1])
        library = self.library(unit, self.dense_rows if self.dense_rows is not None else dense)
        library.run(source.ctypes.data + source_offset * source.itemsize,
                    target.ctypes.data + target_offset * target.itemsize, rows, *in_strides, *out_strides,
                    scale, _address(load_info), _address(store_info), blocks, self.block_dim[0], self.block_dim[1])


def _address(array):
    return None if array is None else array.ctypes.data
