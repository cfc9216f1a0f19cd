"""``FFT.load`` / ``FFT.store``: rows of a global array to and from a Block FFT's registers.

The copy is CUDA C++ compiled by NVRTC to LTO-IR (no Numba; cached on disk like the cuFFTDx code)
and linked into kernels beside it. It indexes through a raw row pointer with unsigned positions and
the descriptor's size, stride and elements per thread as constants, so whichever compiler builds
the kernel, the loads and stores are the same vector instructions: numba-cuda-mlir indexes arrays
through run-time strides (its memrefs have dynamic strides even for C-contiguous arrays) and wraps
signed indices, which cost the convolution example 12% of its time on the H200 when the kernel indexed rows itself.

One function per descriptor and direction, with the C signature
``void f(T* array, long long rows, long long length, long long row, T* thread_data)``: ``array``
holds ``rows`` rows of ``length`` elements, C-contiguous; ``load`` reads row ``row`` into
``thread_data`` and ``store`` writes it back.
"""

from __future__ import annotations

from .._codegen.cache import CodeEntry, symbol_for
from .._codegen.nvrtc import cached_ltoir, nvrtc_version

__all__ = ["FORMAT", "source", "row_code"]

FORMAT = 1  # bump when the generated source changes meaning

_ELEMENT = {"complex64": "float2", "complex128": "double2"}

_SOURCE = r"""
extern "C" __device__ void {symbol}({element}* array, long long rows, long long length, long long row,
                                    {element}* thread_data)
{{
    // a row outside the array is neither read nor written (the last block of a ragged batch)
    if (row < 0 || row >= rows) return;
    {element}* data = array + row * length;
    // positions past the row's length read as zero and are not written (numpy's n= semantics)
    const unsigned long long valid = length < {size} ? (unsigned long long)length : {size}ull;
    const unsigned thread = threadIdx.x;
#pragma unroll
    for (unsigned i = 0; i < {elements_per_thread}u; ++i) {{
        const unsigned position = thread + i * {stride}u;
        {body}
    }}
}}
"""

_BODY = {
    "load": "thread_data[i] = position < valid ? data[position] : {element}{{}};",
    "store": "if (position < valid) data[position] = thread_data[i];",
}


def source(kind: str, symbol: str, *, element: str, size: int, stride: int, elements_per_thread: int) -> str:
    """The CUDA C++ of ``kind`` ("load" or "store") for one descriptor."""
    c_element = _ELEMENT[element]
    body = _BODY[kind].format(element=c_element)
    return _SOURCE.format(symbol=symbol, element=c_element, size=size, stride=stride,
                          elements_per_thread=elements_per_thread, body=body)


def row_code(fft, kind: str) -> CodeEntry:
    """The LTO-IR of ``fft.load`` (``kind="load"``) or ``fft.store`` for the Block c2c ``fft``,
    compiled once and cached on disk (keyed by the source's parameters, target and NVRTC)."""
    parameters = {"element": fft.value_dtype.name, "size": fft.size, "stride": fft.stride,
                  "elements_per_thread": fft.elements_per_thread}
    key = {"kind": f"device-rows-{kind}", "format": FORMAT, **parameters, "target": fft.target.name,
           "nvrtc": nvrtc_version()}
    symbol = symbol_for(f"nvmathx_rows_{kind}", key)
    return cached_ltoir(key, symbol, source(kind, symbol, **parameters), fft.target.name)
