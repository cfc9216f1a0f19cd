"""One generated kernel per 1-D transform (C2C, R2C or C2R) that fits a thread block: load a row,
transform it with cuFFTDx, scale it, store it, in one pass over memory (the fused engine of
:mod:`nvmathx.fft`, ``FFTOptions(engine="fused")``).

The kernel is CUDA C++ compiled by NVRTC to LTO-IR and linked with nvJitLink beside the cuFFTDx
function that :class:`nvmathx.device_api.FFT` generates (its register API: element
``threadIdx.x + i * stride`` of row ``threadIdx.y`` in ``thread_data[i]``, the block's dynamic shared
memory as scratch), so no Numba is involved. Both the LTO-IR and the linked cubin are kept in the
on-disk code cache, keyed by the source's parameters, the cuFFTDx symbol, the target and NVRTC (and the
linked cubin by the linker's identity too, as every linked image; ``NVMATHX_LINK_CACHE=0`` links every time).

The C signature of kernel ``symbol``::

    void symbol(const TI* in, TO* out, long long rows,
                long long in_row_stride, long long in_element_stride,
                long long out_row_stride, long long out_element_stride, R scale,
                void* load_info, void* store_info)

(``TI``/``TO``: the input and output elements, real on the real side of R2C/C2R; strides in
elements); launch ``ceil(rows / ffts_per_block)`` blocks of ``block_dim`` threads with
the FFT's ``shared_memory_size`` bytes of dynamic shared memory.

A load callback (prolog) and a store callback (epilog) compiled for cuFFT
(:func:`nvmathx.fft.compile_prolog` / ``compile_epilog``) are called with cuFFT's signature and
meaning: ``offset`` counts elements from ``in`` (``out``), ``load_info`` (``store_info``) is the
user data, and the shared-memory pointer is null. The epilog gets the value multiplied by ``scale``.
"""

from __future__ import annotations

import dataclasses
import textwrap

import numpy as np

from .._core.logs import timed_step
from . import cache, descriptors, link, nvrtc

__all__ = ["FORMAT", "FusedKernel", "kernel_parameters", "kernel_source", "fused_kernel", "is_cached",
           "shared_memory_bytes", "row_elements"]

FORMAT = 10  # bump when the generated source changes meaning

_C_TYPES = {"complex64": "float2", "complex128": "double2", "float32": "float", "float64": "double"}

_SOURCE = r"""
extern "C" __device__ void {fft}({element}* thread_data, {element}* shared);
{declarations}
extern "C" __global__ void __launch_bounds__({bounds}) {symbol}(
    const {input}* in, {output}* out, long long rows, long long in_row_stride, long long in_element_stride,
    long long out_row_stride, long long out_element_stride, {real} scale, void* load_info, void* store_info)
{{
    // the launch's block shape: with these, the compiler drops the bounds checks of positions that
    // every thread's registers cover
    __builtin_assume(threadIdx.x < {stride}u);
    __builtin_assume(threadIdx.y < {ffts_per_block}u);
    extern __shared__ __align__(16) unsigned char shared_bytes[];
    {element} thread_data[{storage}];
    const long long row = (long long)blockIdx.x * {ffts_per_block} + threadIdx.y;
    // a unit element stride compiled in makes each thread's offsets constants apart; a dense row
    // stride compiled in lets a callback's position in the row (offset % length) fold to a constant
    const long long in_step = {in_step}, out_step = {out_step};
    const long long in_row = {in_row}, out_row = {out_row};
    // the last block of a ragged batch still takes part in the transform (it synchronises the block)
    const bool active = row < rows;
    // offsets count elements from in / out, as cuFFT's callbacks see them
    auto load_element = [&](long long offset) -> {input} {{ return {load}; }};
    auto store_element = [&](long long offset, {output} value) {{ {store}; }};
{load_loop}
    {fft}(thread_data, reinterpret_cast<{element}*>(shared_bytes));
    if (!active) return;
{store_loop}
}}
"""

# Register position p of a thread is element threadIdx.x + i * stride of its row; a real side is
# held either as reals (normal mode: consecutive reals in the registers) or as pairs of reals
# (folded mode: register i holds elements 2p and 2p + 1).
_LOAD_ELEMENTS = """\
    {input}* const loaded = reinterpret_cast<{input}*>(thread_data);
#pragma unroll
    for (unsigned i = 0; i < {input_count}u; ++i) {{
        const unsigned position = threadIdx.x + i * {stride}u;
        loaded[i] = active && position < {input_length}u
            ? load_element(row * in_row + position * in_step) : {input}{{}};
    }}"""

_LOAD_PAIRS = """\
    // a pair of adjacent reals in one vector load where the row allows it (unit stride, the pair
    // aligned as the complex type is): read as the complex type, or with a callback through a pointer
    // the compiler is told is so aligned (it merges the callback's two loads of the pair into one)
    const bool aligned_pairs = in_step == 1 && ((row * in_row) & 1) == 0
        && (reinterpret_cast<unsigned long long>(in) & (sizeof({element}) - 1)) == 0;
    if (aligned_pairs) {{
        const {input}* const aligned_in = static_cast<const {input}*>(__builtin_assume_aligned(in, sizeof({element})));
#pragma unroll
        for (unsigned i = 0; i < {input_count}u; ++i) {{
            const unsigned position = threadIdx.x + i * {stride}u;
            const long long offset = row * in_row + 2ll * position;
            thread_data[i] = active && position < {input_length}u
                ? {aligned_pair} : {element}{{}};
        }}
    }} else {{
#pragma unroll
        for (unsigned i = 0; i < {input_count}u; ++i) {{
            const unsigned position = threadIdx.x + i * {stride}u;
            const long long offset = row * in_row + 2ll * position * in_step;
            thread_data[i] = active && position < {input_length}u
                ? {element}{{load_element(offset), load_element(offset + in_step)}} : {element}{{}};
        }}
    }}"""

_LOAD_STAGED = """\
    // consecutive threads read consecutive reals (one coalesced access a warp, callback or not) into
    // shared memory, from which each thread takes its pairs
    {input}* const staging = reinterpret_cast<{input}*>(shared_bytes) + threadIdx.y * {real_length}u;
#pragma unroll
    for (unsigned i = 0; i < {staged_count}u; ++i) {{
        const unsigned position = threadIdx.x + i * {stride}u;
        if (position < {real_length}u)
            staging[position] = active ? load_element(row * in_row + position * in_step) : {input}{{}};
    }}
    __syncthreads();
#pragma unroll
    for (unsigned i = 0; i < {input_count}u; ++i) {{
        const unsigned position = threadIdx.x + i * {stride}u;
        thread_data[i] = position < {input_length}u
            ? reinterpret_cast<const {element}*>(staging)[position] : {element}{{}};
    }}
    __syncthreads();  // the transform reuses the shared memory"""

_STORE_ELEMENTS = """\
    const {output}* const results = reinterpret_cast<const {output}*>(thread_data);
#pragma unroll
    for (unsigned i = 0; i < {output_count}u; ++i) {{
        const unsigned position = threadIdx.x + i * {stride}u;
        if (position < {output_length}u)
            store_element(row * out_row + position * out_step, {scaled});
    }}"""

_STORE_PAIRS = """\
    const bool vector_stores = {vector_stores} && out_step == 1 && ((row * out_row) & 1) == 0
        && (reinterpret_cast<unsigned long long>(out) & (sizeof({element}) - 1)) == 0;
#pragma unroll
    for (unsigned i = 0; i < {output_count}u; ++i) {{
        const unsigned position = threadIdx.x + i * {stride}u;
        if (position < {output_length}u) {{
            const long long offset = row * out_row + 2ll * position * out_step;
            const {element} value{{{pair_scaled}}};
            if (vector_stores) {{
                reinterpret_cast<{element}*>(out)[offset / 2] = value;
            }} else {{
                store_element(offset, value.x);
                store_element(offset + out_step, value.y);
            }}
        }}
    }}"""

_LOAD_DECLARATION = 'extern "C" __device__ {input} {name}(void*, unsigned long long, void*, void*);'
_STORE_DECLARATION = 'extern "C" __device__ void {name}(void*, unsigned long long, {output}, void*, void*);'


def _load_call(load: str, c_input: str, pointer: str, offset: str) -> str:
    """The call of the load callback ``load`` on element ``offset`` of ``pointer``, as cuFFT makes it."""
    return f"{load}(const_cast<{c_input}*>({pointer}), (unsigned long long)({offset}), load_info, nullptr)"


def _aligned_pair(c_element: str, c_input: str, load: str | None) -> str:
    """The expression of a folded pair read at ``offset`` (even) from ``aligned_in``: one vector load
    of the complex type, or the callback ``load`` called on both reals."""
    if load is None:
        return f"reinterpret_cast<const {c_element}*>(aligned_in)[offset / 2]"
    first, second = (_load_call(load, c_input, "aligned_in", offset) for offset in ("offset", "offset + 1"))
    return f"{c_element}{{{first}, {second}}}"


def kernel_source(symbol: str, fft_symbol: str, *, element: str, input: str, output: str, input_length: int,
                  output_length: int, stride: int, input_count: int, output_count: int, storage: int,
                  ffts_per_block: int, threads: int, input_pairs: bool = False, output_pairs: bool = False,
                  load: str | None = None, store: str | None = None, min_blocks: int | None = None,
                  staged_loads: bool = False, unit_strides: tuple[bool, bool] = (False, False),
                  dense_rows: tuple[bool, bool] = (False, False)) -> str:
    """The CUDA C++ of one fused kernel: registers of ``element`` (``"complex64"``/``"complex128"``),
    ``input_length`` register positions read per row (``input_count`` per thread) from elements of
    ``input``, ``output_length`` positions written as ``output``; ``input_pairs`` / ``output_pairs``
    when a real side is folded (two reals per position); the load callback ``load`` and store
    callback ``store`` (symbols) where given; ``min_blocks`` blocks per SM asked of the compiler
    (``__launch_bounds__``' second bound: it caps the registers per thread so that many fit);
    ``staged_loads`` reads a folded real side through shared memory (:func:`shared_memory_bytes`);
    ``unit_strides`` (input, output) compiles an element stride of 1 in, where the plan has one (the
    ``*_element_stride`` arguments are then not read); ``dense_rows`` (input, output) compiles a row
    stride equal to the row's length in elements in, on sides with a unit element stride (the
    ``*_row_stride`` arguments are then not read). The kernel assumes ``stride`` threads in x and
    ``ffts_per_block`` in y, the launch cuFFTDx's ``block_dim`` gives."""
    if staged_loads and not input_pairs:
        raise ValueError("staged loads are made for a folded real input")
    c_element, c_input, c_output = _C_TYPES[element], _C_TYPES[input], _C_TYPES[output]
    declarations = []
    load_expression = "in[offset]"
    if load is not None:
        declarations.append(_LOAD_DECLARATION.format(input=c_input, name=load))
        load_expression = _load_call(load, c_input, "in", "offset")
    store_statement = "out[offset] = value"
    if store is not None:
        declarations.append(_STORE_DECLARATION.format(output=c_output, name=store))
        store_statement = f"{store}(out, (unsigned long long)offset, value, store_info, nullptr)"
    fields = dict(element=c_element, input=c_input, output=c_output, input_length=input_length,
                  output_length=output_length, stride=stride, input_count=input_count, output_count=output_count,
                  aligned_pair=_aligned_pair(c_element, c_input, load),
                  vector_stores="false" if store is not None else "true", real_length=2 * input_length,
                  staged_count=-(-2 * input_length // stride))
    load_loop = (_LOAD_STAGED if staged_loads else _LOAD_PAIRS if input_pairs else _LOAD_ELEMENTS).format(**fields)
    store = _STORE_PAIRS if output_pairs else _STORE_ELEMENTS
    # a unit scale (no norm) is stored without its multiplies: a branch uniform over the grid
    unscaled = store.format(**fields, scaled="results[i]", pair_scaled="thread_data[i].x, thread_data[i].y")
    scaled = store.format(**fields, pair_scaled="thread_data[i].x * scale, thread_data[i].y * scale",
                          scaled=f"{c_output}{{results[i].x * scale, results[i].y * scale}}"
                          if output.startswith("complex") else "results[i] * scale")
    store_loop = (f"    if (scale == 1) {{\n{textwrap.indent(unscaled, '    ')}\n    }} else {{\n"
                  f"{textwrap.indent(scaled, '    ')}\n    }}")
    return _SOURCE.format(symbol=symbol, fft=fft_symbol, element=c_element, input=c_input, output=c_output,
                          real=c_element[:-1], storage=storage, ffts_per_block=ffts_per_block, stride=stride,
                          bounds=threads if min_blocks is None else f"{threads}, {min_blocks}",
                          declarations="\n".join(declarations), load=load_expression, store=store_statement,
                          load_loop=load_loop, store_loop=store_loop,
                          in_step="1" if unit_strides[0] else "in_element_stride",
                          out_step="1" if unit_strides[1] else "out_element_stride",
                          in_row=f"{2 * input_length if input_pairs else input_length}ll"
                          if dense_rows[0] and unit_strides[0] else "in_row_stride",
                          out_row=f"{2 * output_length if output_pairs else output_length}ll"
                          if dense_rows[1] and unit_strides[1] else "out_row_stride")


@dataclasses.dataclass(frozen=True)
class FusedKernel:
    """A linked fused kernel: its name in ``cubin``, and how to launch it."""

    symbol: str
    cubin: bytes
    block_dim: tuple[int, int, int]
    ffts_per_block: int
    shared_memory_size: int


def kernel_parameters(fft, load: str | None = None, store: str | None = None) -> dict:
    """The :func:`kernel_source` keywords of the Block :class:`nvmathx.device_api.FFT` ``fft`` (c2c,
    r2c or c2r, either real mode), calling the callback symbols ``load`` and ``store`` where given."""
    element = np.dtype(fft.value_type).name
    real = np.dtype(fft.precision).name
    folded = fft.real_mode == "folded"

    def count(length, per_thread):
        # every register the layout defines, and at least the positions the length needs (a
        # folded complex side has one position more than its elements per thread say)
        return max(per_thread, -(-length // fft.stride))

    return {"element": element, "input": real if fft.fft_type == "r2c" else element,
            "output": real if fft.fft_type == "c2r" else element, "input_length": fft.input_length,
            "output_length": fft.output_length, "stride": fft.stride,
            "input_count": count(fft.input_length, fft.input_elements_per_thread),
            "output_count": count(fft.output_length, fft.output_elements_per_thread),
            "storage": fft.storage_size, "ffts_per_block": fft.ffts_per_block,
            "threads": fft.block_dim[0] * fft.block_dim[1] * fft.block_dim[2],
            "input_pairs": folded and fft.fft_type == "r2c", "output_pairs": folded and fft.fft_type == "c2r",
            "load": load, "store": store}


def row_elements(fft) -> tuple[int, int]:
    """The elements of one input row and one output row of the fused kernel of ``fft`` (reals on a
    real side): the row strides :func:`kernel_source`'s ``dense_rows`` compiles in."""
    parameters = kernel_parameters(fft)
    return ((2 if parameters["input_pairs"] else 1) * parameters["input_length"],
            (2 if parameters["output_pairs"] else 1) * parameters["output_length"])


def shared_memory_bytes(fft, staged_loads: bool = False) -> int:
    """The dynamic shared memory a block of the fused kernel of ``fft`` takes: cuFFTDx's, or the
    block's real rows where staged loads of a folded R2C need more."""
    staging = fft.ffts_per_block * 2 * fft.input_length * np.dtype(fft.precision).itemsize if staged_loads else 0
    return max(fft.shared_memory_size, staging)


def _kernel_key(fft, prolog, epilog, fft_symbol: str, min_blocks: int | None, staged_loads: bool,
                unit_strides: tuple[bool, bool], dense_rows: tuple[bool, bool]) -> tuple[dict, dict]:
    """The disk-cache key of a fused kernel and its :func:`kernel_source` parameters."""
    parameters = kernel_parameters(fft, prolog.symbol if prolog is not None else None,
                                   epilog.symbol if epilog is not None else None)
    parameters.update(min_blocks=min_blocks, staged_loads=staged_loads, unit_strides=tuple(unit_strides),
                      dense_rows=tuple(dense_rows))
    callbacks = [callback.key for callback in (prolog, epilog) if callback is not None]
    key = {"kind": "fused-fft-kernel", "format": FORMAT, **parameters, "fft": fft_symbol, "callbacks": callbacks,
           "target": fft.target.name, "nvrtc": nvrtc.nvrtc_version()}
    return key, parameters


def is_cached(fft, prolog=None, epilog=None, min_blocks: int | None = None, staged_loads: bool = False,
              unit_strides: tuple[bool, bool] = (False, False),
              dense_rows: tuple[bool, bool] = (False, False)) -> bool:
    """Whether :func:`fused_kernel` would read the kernel from the disk cache (no code generated)."""
    key, _ = _kernel_key(fft, prolog, epilog, descriptors.code_symbol(fft.descriptor("registers"), fft.target),
                         min_blocks, staged_loads, unit_strides, dense_rows)
    image_key = _image_key(key)
    return image_key is not None and cache.has_linked(image_key)


def _image_key(key: dict) -> dict | None:
    """The disk-cache key of the linked image of the kernel keyed ``key``: with the linker's
    identity (nvJitLink, driver, cuda.core), as every linked image's; None where images are not
    cached (``NVMATHX_LINK_CACHE=0``, or a linker that cannot be identified)."""
    identity = link.linker_identity() if link.enabled() else None
    return None if identity is None else {**key, "linker": identity}


def fused_kernel(fft, prolog=None, epilog=None, min_blocks: int | None = None, staged_loads: bool = False,
                 unit_strides: tuple[bool, bool] = (False, False),
                 dense_rows: tuple[bool, bool] = (False, False)) -> FusedKernel:
    """The fused kernel of the Block :class:`nvmathx.device_api.FFT` ``fft`` (c2c, r2c or c2r), calling the
    :class:`~nvmathx.fft.CompiledCallback` ``prolog`` on each load and ``epilog`` on each store where
    given, compiled for ``min_blocks`` resident blocks per SM where given, a folded real input read
    through shared memory with ``staged_loads``, an element stride of 1 compiled in on the sides
    ``unit_strides`` says and the dense row stride on the sides ``dense_rows`` says: compiled and
    linked once, then read from the disk cache (the link is made every time under
    ``NVMATHX_LINK_CACHE=0``)."""
    # the cuFFTDx code (megabytes of LTO-IR) is read only when the linked kernel is not cached
    fft_symbol = descriptors.code_symbol(fft.descriptor("registers"), fft.target)
    key, parameters = _kernel_key(fft, prolog, epilog, fft_symbol, min_blocks, staged_loads, unit_strides,
                                  dense_rows)
    symbol = cache.symbol_for("nvmathx_fused_fft", key)
    image_key = _image_key(key)
    image = cache.load_linked(image_key) if image_key is not None else None
    if image is None:
        fft_code = fft.code("registers")
        kernel = nvrtc.cached_ltoir(key, symbol, kernel_source(symbol, fft_code.symbol, **parameters),
                                    fft.target.name)
        objects = [(kernel.symbol, kernel.code), (fft_code.symbol, fft_code.code)]
        objects += [(callback.symbol, callback.ltoir) for callback in (prolog, epilog) if callback is not None]
        image = cache.LinkedImage(_link(objects, fft.target.name), "")
        if image_key is not None:
            cache.store_linked(image_key, image)
    return FusedKernel(symbol, image.cubin, tuple(fft.block_dim), fft.ffts_per_block,
                       shared_memory_bytes(fft, staged_loads))


def _link(entries, arch: str) -> bytes:
    """The cubin of ``entries`` (``(name, LTO-IR)`` pairs) linked with link-time optimization by nvJitLink."""
    from cuda.core import Linker, LinkerOptions, ObjectCode

    objects = [ObjectCode.from_ltoir(code, name=name) for name, code in entries]
    with timed_step(f"nvJitLink link of {len(entries)} object(s) for {arch}"):
        return bytes(Linker(*objects, options=LinkerOptions(arch=arch, link_time_optimization=True)).link("cubin").code)
