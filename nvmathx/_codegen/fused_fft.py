"""One generated kernel per complex-to-complex transform that fits a thread block: load a row,
transform it with cuFFTDx, scale it, store it, in one pass over memory (groundwork of the fused
FFT engine; nothing in :mod:`nvmathx.fft` launches it yet).

The kernel is CUDA C++ compiled by NVRTC to LTO-IR and linked with nvJitLink beside the cuFFTDx
function that :class:`nvmathx.device_api.FFT` generates (its register API: element
``threadIdx.x + i * stride`` of row ``threadIdx.y`` in ``thread_data[i]``, the block's dynamic shared
memory as scratch), so no Numba is involved. Both the LTO-IR and the linked cubin are kept in the
on-disk code cache, keyed by the source's parameters, the cuFFTDx symbol, the target and NVRTC.

The C signature of kernel ``symbol``::

    void symbol(const T* in, T* out, long long rows,
                long long in_row_stride, long long in_element_stride,
                long long out_row_stride, long long out_element_stride, R scale,
                void* load_info, void* store_info)

(strides in elements); launch ``ceil(rows / ffts_per_block)`` blocks of ``block_dim`` threads with
the FFT's ``shared_memory_size`` bytes of dynamic shared memory.

A load callback (prolog) and a store callback (epilog) compiled for cuFFT
(:func:`nvmathx.fft.compile_prolog` / ``compile_epilog``) are called with cuFFT's signature and
meaning: ``offset`` counts elements from ``in`` (``out``), ``load_info`` (``store_info``) is the
user data, and the shared-memory pointer is null. The epilog gets the value multiplied by ``scale``.
"""

from __future__ import annotations

import dataclasses

from . import cache, nvrtc

__all__ = ["FORMAT", "FusedKernel", "kernel_source", "fused_kernel"]

FORMAT = 2  # bump when the generated source changes meaning

_TYPES = {"complex64": ("float2", "float"), "complex128": ("double2", "double")}

_SOURCE = r"""
extern "C" __device__ void {fft}({element}* thread_data, {element}* shared);
{declarations}
extern "C" __global__ void __launch_bounds__({threads}) {symbol}(
    const {element}* in, {element}* out, long long rows, long long in_row_stride, long long in_element_stride,
    long long out_row_stride, long long out_element_stride, {real} scale, void* load_info, void* store_info)
{{
    extern __shared__ __align__(16) unsigned char shared_bytes[];
    {element} thread_data[{storage}];
    const long long row = (long long)blockIdx.x * {ffts_per_block} + threadIdx.y;
    // the last block of a ragged batch still takes part in the transform (it synchronises the block)
    const bool active = row < rows;
#pragma unroll
    for (unsigned i = 0; i < {elements_per_thread}u; ++i) {{
        const unsigned position = threadIdx.x + i * {stride}u;
        const long long offset = row * in_row_stride + position * in_element_stride;
        thread_data[i] = active && position < {size}u ? {load} : {element}{{}};
    }}
    {fft}(thread_data, reinterpret_cast<{element}*>(shared_bytes));
    if (!active) return;
#pragma unroll
    for (unsigned i = 0; i < {elements_per_thread}u; ++i) {{
        const unsigned position = threadIdx.x + i * {stride}u;
        if (position < {size}u) {{
            const {element} value = thread_data[i];
            const long long offset = row * out_row_stride + position * out_element_stride;
            {store};
        }}
    }}
}}
"""

_LOAD_DECLARATION = 'extern "C" __device__ {element} {name}(void*, unsigned long long, void*, void*);'
_STORE_DECLARATION = 'extern "C" __device__ void {name}(void*, unsigned long long, {element}, void*, void*);'


def kernel_source(symbol: str, fft_symbol: str, *, element: str, size: int, stride: int, elements_per_thread: int,
                  storage: int, ffts_per_block: int, threads: int, load: str | None = None,
                  store: str | None = None) -> str:
    """The CUDA C++ of one fused kernel (``element``: ``"complex64"`` or ``"complex128"``), calling
    the load callback ``load`` and the store callback ``store`` (their symbols) where given."""
    c_element, c_real = _TYPES[element]
    declarations = []
    load_expression = "in[offset]"
    if load is not None:
        declarations.append(_LOAD_DECLARATION.format(element=c_element, name=load))
        load_expression = f"{load}(const_cast<{c_element}*>(in), (unsigned long long)offset, load_info, nullptr)"
    scaled = f"{c_element}{{value.x * scale, value.y * scale}}"
    store_statement = f"out[offset] = {scaled}"
    if store is not None:
        declarations.append(_STORE_DECLARATION.format(element=c_element, name=store))
        store_statement = f"{store}(out, (unsigned long long)offset, {scaled}, store_info, nullptr)"
    return _SOURCE.format(symbol=symbol, fft=fft_symbol, element=c_element, real=c_real, size=size, stride=stride,
                          elements_per_thread=elements_per_thread, storage=storage, ffts_per_block=ffts_per_block,
                          threads=threads, declarations="\n".join(declarations), load=load_expression,
                          store=store_statement)


@dataclasses.dataclass(frozen=True)
class FusedKernel:
    """A linked fused kernel: its name in ``cubin``, and how to launch it."""

    symbol: str
    cubin: bytes
    block_dim: tuple[int, int, int]
    ffts_per_block: int
    shared_memory_size: int


def fused_kernel(fft, prolog=None, epilog=None) -> FusedKernel:
    """The fused kernel of the Block c2c :class:`nvmathx.device_api.FFT` ``fft``, calling the
    :class:`~nvmathx.fft.CompiledCallback` ``prolog`` on each load and ``epilog`` on each store where
    given: compiled and linked once, then read from the disk cache."""
    fft_code = fft.code("registers")
    threads = fft.block_dim[0] * fft.block_dim[1] * fft.block_dim[2]
    parameters = {"element": fft.value_dtype.name, "size": fft.size, "stride": fft.stride,
                  "elements_per_thread": fft.elements_per_thread, "storage": fft.storage_size,
                  "ffts_per_block": fft.ffts_per_block, "threads": threads,
                  "load": prolog.symbol if prolog is not None else None,
                  "store": epilog.symbol if epilog is not None else None}
    callbacks = [callback for callback in (prolog, epilog) if callback is not None]
    key = {"kind": "fused-fft-kernel", "format": FORMAT, **parameters, "fft": fft_code.symbol,
           "callbacks": [callback.key for callback in callbacks], "target": fft.target.name,
           "nvrtc": nvrtc.nvrtc_version()}
    symbol = cache.symbol_for("nvmathx_fused_fft", key)
    image = cache.load_linked(key)
    if image is None:
        kernel = nvrtc.cached_ltoir(key, symbol, kernel_source(symbol, fft_code.symbol, **parameters),
                                    fft.target.name)
        objects = [(kernel.symbol, kernel.code), (fft_code.symbol, fft_code.code)]
        objects += [(callback.symbol, callback.ltoir) for callback in callbacks]
        image = cache.LinkedImage(_link(objects, fft.target.name), "")
        cache.store_linked(key, image)
    return FusedKernel(symbol, image.cubin, tuple(fft.block_dim), fft.ffts_per_block, fft.shared_memory_size)


def _link(entries, arch: str) -> bytes:
    """The cubin of ``entries`` (``(name, LTO-IR)`` pairs) linked with link-time optimization by nvJitLink."""
    from cuda.core import Linker, LinkerOptions, ObjectCode

    objects = [ObjectCode.from_ltoir(code, name=name) for name, code in entries]
    return bytes(Linker(*objects, options=LinkerOptions(arch=arch, link_time_optimization=True)).link("cubin").code)
