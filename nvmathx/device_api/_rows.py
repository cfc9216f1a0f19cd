"""``FFT.load`` / ``FFT.store``: rows of a global array to and from a Block FFT's registers.

The copy is CUDA C++ compiled by NVRTC to LTO-IR (no Numba; cached on disk like the cuFFTDx code)
and linked into kernels beside it. It indexes through a raw row pointer with unsigned positions and
the descriptor's lengths, stride and register counts as constants, so whichever compiler builds
the kernel, the loads and stores are the same vector instructions: numba-cuda-mlir indexes arrays
through run-time strides (its memrefs have dynamic strides even for C-contiguous arrays) and wraps
signed indices, which made the convolution example slower when the kernel indexed rows itself
(docs/guide/device_api.rst, "Performance notes").

One function per descriptor and direction, with the C signature
``void f(T* array, long long rows, long long length, long long row, V* thread_data)``: ``array``
holds ``rows`` rows of ``length`` elements ``T``, C-contiguous; ``load`` reads row ``row`` into
``thread_data`` (registers of the value type ``V``) and ``store`` writes it back. ``T`` is the
side of the transform the call touches: complex for c2c, reals for the real side of r2c (load) and
c2r (store), held one per register position (normal) or two per complex register (folded).
"""

from __future__ import annotations

from .._codegen.cache import CodeEntry, symbol_for
from .._codegen.nvrtc import cached_ltoir, nvrtc_version

__all__ = ["FORMAT", "source", "row_parameters", "row_code"]

FORMAT = 4  # bump when the generated source changes meaning

_C_TYPES = {"complex64": "float2", "complex128": "double2", "float32": "float", "float64": "double"}

_SOURCE = r"""
extern "C" __device__ void {symbol}({array}* array, long long rows, long long length, long long row,
                                    {element}* thread_data)
{{
    // a row outside the array is neither read nor written (the last block of a ragged batch)
    if (row < 0 || row >= rows) return;
    {array}* data = array + row * length;
    {array}* const registers = reinterpret_cast<{array}*>(thread_data);
    // the block is cuFFTDx's: with this, positions that every thread's registers cover need no check
    __builtin_assume(threadIdx.x < {stride}u);
    const unsigned thread = threadIdx.x;
    auto copy = [&](const unsigned long long valid) {{
#pragma unroll
        for (unsigned i = 0; i < {count}u; ++i) {{
            const unsigned position = thread + i * {stride}u;
            {body}
        }}
    }};
    // a whole row takes the copy with its bounds a compile-time constant (no check survives);
    // positions past a shorter row's length read as zero and are not written (numpy's n= semantics)
    if (length >= {length})
        copy({length}ull);
    else
        copy((unsigned long long)length);
}}
"""

_BODY = {
    ("load", False): "registers[i] = position < valid ? data[position] : {array}{{}};",
    ("store", False): "if (position < valid) data[position] = registers[i];",
    # folded: register i holds reals 2p and 2p + 1 of position p
    ("load", True): "const unsigned long long first = 2ull * position;\n"
                    "        thread_data[i] = {element}{{first < valid ? data[first] : {array}{{}}, "
                    "first + 1 < valid ? data[first + 1] : {array}{{}}}};",
    ("store", True): "const unsigned long long first = 2ull * position;\n"
                     "        if (first < valid) data[first] = thread_data[i].x;\n"
                     "        if (first + 1 < valid) data[first + 1] = thread_data[i].y;",
}


def source(kind: str, symbol: str, *, array: str, element: str, length: int, stride: int, count: int,
           pairs: bool = False) -> str:
    """The CUDA C++ of ``kind`` ("load" or "store") for one descriptor: rows of ``length`` elements of
    ``array`` (a numpy dtype name), registers of ``element``, ``count`` register positions per
    thread ``stride`` apart; ``pairs`` when two reals share a complex register (folded)."""
    c_array, c_element = _C_TYPES[array], _C_TYPES[element]
    body = _BODY[kind, pairs].format(array=c_array, element=c_element)
    return _SOURCE.format(symbol=symbol, array=c_array, element=c_element, length=length, stride=stride, count=count,
                          body=body)


def row_parameters(fft, kind: str) -> dict:
    """The :func:`source` keywords of ``fft.load`` (``kind="load"``) or ``fft.store`` for the Block ``fft``."""
    array = fft._row_dtype(kind)
    real_side = array.kind == "f"
    pairs = real_side and fft.real_mode == "folded"
    positions, per_thread = ((fft.input_length, fft.input_elements_per_thread) if kind == "load"
                             else (fft.output_length, fft.output_elements_per_thread))
    return {"array": array.name, "element": fft.value_dtype.name, "length": 2 * positions if pairs else positions,
            "stride": fft.stride, "count": max(per_thread, -(-positions // fft.stride)), "pairs": pairs}


def row_code(fft, kind: str) -> CodeEntry:
    """The LTO-IR of ``fft.load`` (``kind="load"``) or ``fft.store`` for the Block ``fft``, compiled
    once and cached on disk (keyed by the source's parameters, target and NVRTC)."""
    parameters = row_parameters(fft, kind)
    key = {"kind": f"device-rows-{kind}", "format": FORMAT, **parameters, "target": fft.target.name,
           "nvrtc": nvrtc_version()}
    symbol = symbol_for(f"nvmathx_rows_{kind}", key)
    return cached_ltoir(key, symbol, source(kind, symbol, **parameters), fft.target.name)
