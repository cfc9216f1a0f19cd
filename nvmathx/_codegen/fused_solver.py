"""Generated kernels that solve a batch of small dense systems with cuSOLVERDx, one launch each
(the fused engine of :class:`nvmathx.linalg.DirectSolver`, ``engine="fused"``).

The kernel is CUDA C++ compiled by NVRTC to LTO-IR and linked with nvJitLink beside the
cuSOLVERDx function that :mod:`._codegen.solver` generates (its shared-memory API) and
cuSOLVERDx's universal fatbin; no Numba is involved. Each block takes ``batches_per_block``
systems: it loads their matrices and right-hand sides (dense, column-major, one after the other)
into shared memory, calls the function (``gesv_partial_pivot`` or ``posv``: factor and solve), and
stores the solutions and one ``info`` per system. Systems past the end of the batch (in the last
block) are identities.

The C signature of kernel ``symbol``::

    void symbol(const T* a, T* b, int* info, long long batches)

launched over ``ceil(batches / batches_per_block)`` blocks of ``block_dim`` threads with
``shared_memory_size`` bytes of dynamic shared memory. Kernels are cached on disk like every
generated kernel (LTO-IR and the linked cubin).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from . import cache, descriptors, link, nvrtc
from . import solver as solver_codegen
from .target import Target, max_shared_memory_per_block

__all__ = ["FORMAT", "FusedSolverKernel", "FUSED_FUNCTIONS", "kernel_source", "fused_solver_kernel", "is_cached",
           "shared_memory_bytes"]

FORMAT = 3  # bump when the generated source changes meaning

# structure -> the cuSOLVERDx function that factors and solves
FUSED_FUNCTIONS = {"general": "gesv_partial_pivot", "positive definite": "posv"}
_C_TYPES = {"float32": "float", "float64": "double", "complex64": "float2", "complex128": "double2"}
_ARGUMENTS = {"a": "sa", "ipiv": "sipiv", "b": "sb", "info": "block_info"}

_SOURCE = r"""
extern "C" __device__ void {function}({parameters});
extern "C" __global__ void __launch_bounds__({threads}) {symbol}(const {T}* a, {T}* b, int* info, long long batches)
{{
    extern __shared__ __align__(16) unsigned char shared_bytes[];
    __shared__ int block_info[{bpb}];
    {T}* const sa = reinterpret_cast<{T}*>(shared_bytes);
    {T}* const sb = sa + {a_padded};  // each array on a 16-byte boundary
    int* const sipiv = reinterpret_cast<int*>(sb + {b_padded});
    const unsigned tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
    const long long first = (long long)blockIdx.x * {bpb};
    const long long count = batches - first < {bpb} ? batches - first : {bpb};
    // global memory holds packed column-major matrices; shared memory the same at leading
    // dimensions lda and ldb (padded where cuSOLVERDx suggests it, against bank conflicts)
    for (unsigned i = tid; i < {a_elements}u; i += threads) {{
        const unsigned system = i / {nn}u, within = i % {nn}u, column = within / {n}u, row = within % {n}u;
        sa[system * {a_step}u + column * {lda}u + row] =
            system < count ? a[first * {nn} + i] : (row == column ? {T}{{1}} : {T}{{}});
    }}
    for (unsigned i = tid; i < {b_elements}u; i += threads) {{
        const unsigned system = i / {nk}u, within = i % {nk}u;
        sb[system * {b_step}u + (within / {n}u) * {ldb}u + within % {n}u] =
            system < count ? b[first * {nk} + i] : {T}{{}};
    }}
    __syncthreads();
    {function}({arguments});
    __syncthreads();
    for (unsigned i = tid; i < {b_elements}u; i += threads) {{
        const unsigned system = i / {nk}u, within = i % {nk}u;
        if (system < count) b[first * {nk} + i] = sb[system * {b_step}u + (within / {n}u) * {ldb}u + within % {n}u];
    }}
    for (unsigned i = tid; i < {bpb}u; i += threads) {{
        if (i < count) info[first + i] = block_info[i];
    }}
}}
"""


@dataclasses.dataclass(frozen=True)
class FusedSolverKernel:
    """A linked fused solver kernel: its symbol, cubin and launch shape."""

    symbol: str
    cubin: bytes
    block_dim: tuple[int, int, int]
    batches_per_block: int
    shared_memory_size: int


def _spec(structure: str, n: int, nrhs: int, dtype: str, target: Target, batches_per_block: int, fill_mode: str):
    cholesky_fill = fill_mode if structure == "positive definite" else None
    return solver_codegen.solver_spec(FUSED_FUNCTIONS[structure], (n, n, nrhs), dtype, fill_mode=cholesky_fill,
                                      batches_per_block=batches_per_block,
                                      target=target)


def _padded(elements: int, itemsize: int) -> int:
    """``elements`` rounded up to a whole number of 16-byte units (every itemsize here divides 16)."""
    return -(-elements * itemsize // 16) * 16 // itemsize


def _layout(spec) -> tuple[int, int, int, int]:
    """(a's elements, b's elements) of one block's systems in global memory (packed), and (a's, b's)
    elements in shared memory at the spec's leading dimensions, each rounded up to 16 bytes."""
    itemsize = np.dtype(spec.dtype).itemsize
    lda, ldb = _leading(spec)
    a, b = spec.batches_per_block * spec.n * spec.n, spec.batches_per_block * spec.n * spec.k
    shared_a, shared_b = spec.batches_per_block * lda * spec.n, spec.batches_per_block * ldb * spec.k
    return a, b, _padded(shared_a, itemsize), _padded(shared_b, itemsize)


def _leading(spec) -> tuple[int, int]:
    """(lda, ldb) of the spec's column-major matrices in shared memory."""
    lda, ldb = solver_codegen.leading_dimensions(spec)[:2]
    return lda, ldb


def kernel_source(symbol: str, function_symbol: str, spec, block_dim) -> str:
    """The CUDA C++ of the kernel ``symbol`` around the cuSOLVERDx function ``function_symbol``."""
    t = _C_TYPES[spec.dtype]
    n, bpb, k = spec.n, spec.batches_per_block, spec.k
    a_elements, b_elements, a_padded, b_padded = _layout(spec)
    lda, ldb = _leading(spec)
    parameters = ", ".join("int*" if name in ("ipiv", "info") else f"{t}*" for name in spec.info.arguments)
    return _SOURCE.format(function=function_symbol, parameters=parameters, symbol=symbol, T=t, bpb=bpb,
                          threads=block_dim[0] * block_dim[1] * block_dim[2], a_elements=a_elements,
                          b_elements=b_elements, a_padded=a_padded, b_padded=b_padded, nn=n * n, n=n,
                          nk=max(n * k, 1), lda=lda, ldb=ldb, a_step=lda * n, b_step=max(ldb * k, 1),
                          arguments=", ".join(_ARGUMENTS[name] for name in spec.info.arguments))


def shared_memory_bytes(spec) -> int:
    """The kernel's dynamic shared memory: the block's matrices, right-hand sides and pivots, each
    on a 16-byte boundary (at least what cuSOLVERDx's SHARED_MEMORY_SIZE asks for)."""
    _, _, a_padded, b_padded = _layout(spec)
    values = (a_padded + b_padded) * np.dtype(spec.dtype).itemsize
    return max(values + 4 * spec.batches_per_block * spec.n, solver_codegen.shared_memory_bytes(spec))


def _kernel_key(structure: str, n: int, nrhs: int, dtype: str, target: Target, fill_mode: str) -> tuple:
    """(disk-cache key, spec, cuSOLVERDx's block shape) of a fused kernel, from cuSOLVERDx's traits
    only (no code generated)."""
    first = _spec(structure, n, nrhs, dtype, target, 1, fill_mode)
    batches = max(1, solver_codegen.solver_traits(first, target)["suggested_batches_per_block"])
    spec = _spec(structure, n, nrhs, dtype, target, batches, fill_mode) if batches != 1 else first
    # cuSOLVERDx's padded leading dimension where it suggests one: a packed 32 x 32 float32 matrix
    # puts every column on the same shared-memory banks, several times slower
    suggested = solver_codegen.suggested_leading_dimension(spec, target)
    if suggested != solver_codegen.packed_leading_dimensions(spec):
        padded = dataclasses.replace(spec, leading_dimension=suggested)
        if solver_codegen.shared_memory_bytes(padded) <= max_shared_memory_per_block(target):
            spec = padded
    block_dim = tuple(solver_codegen.solver_traits(spec, target)["block_dim"])
    function = descriptors.code_symbol(solver_codegen.descriptor(spec, target), target)
    key = {"kind": "fused-solver-kernel", "format": FORMAT, "spec": repr(spec), "function": function,
           "block_dim": list(block_dim), "target": target.name, "nvrtc": nvrtc.nvrtc_version()}
    return key, spec, block_dim


def _image_key(key: dict) -> dict | None:
    identity = link.linker_identity() if link.enabled() else None
    return None if identity is None else {**key, "linker": identity}


def is_cached(structure: str, n: int, nrhs: int, dtype: str, target: Target, fill_mode: str = "lower") -> bool:
    """Whether :func:`fused_solver_kernel` would read the linked kernel from the disk cache (no code
    generated: cuSOLVERDx's traits only). False where cuSOLVERDx does not take the problem."""
    from .._core.errors import OptionsError

    try:
        key, _, _ = _kernel_key(structure, n, nrhs, dtype, target, fill_mode)
    except OptionsError:
        return False
    image_key = _image_key(key)
    return image_key is not None and cache.has_linked(image_key)


def fused_solver_kernel(structure: str, n: int, nrhs: int, dtype: str, target: Target,
                        fill_mode: str = "lower") -> FusedSolverKernel:
    """The fused kernel of one problem shape: generated, compiled and linked once (tens of seconds
    of CPU), then read from the disk cache. ``fill_mode``: the triangle Cholesky reads
    (column-major). An ``OptionsError`` naming ``size`` where cuSOLVERDx does not take the problem
    (or it does not fit the target's shared memory)."""
    key, spec, block_dim = _kernel_key(structure, n, nrhs, dtype, target, fill_mode)
    symbol = cache.symbol_for("nvmathx_fused_solver", key)
    image_key = _image_key(key)
    image = cache.load_linked(image_key) if image_key is not None else None
    if image is None:
        code = solver_codegen.solver_code(spec, target)
        kernel = nvrtc.cached_ltoir(key, symbol, kernel_source(symbol, code.entry.symbol, spec, block_dim),
                                    target.name)
        image = cache.LinkedImage(_link(kernel, code.entry, solver_codegen.universal_fatbin(), target.name), "")
        if image_key is not None:
            cache.store_linked(image_key, image)
    return FusedSolverKernel(symbol, image.cubin, block_dim, spec.batches_per_block, shared_memory_bytes(spec))


def _link(kernel: cache.CodeEntry, function: cache.CodeEntry, fatbin: cache.CodeEntry, arch: str) -> bytes:
    from cuda.core import Linker, LinkerOptions, ObjectCode

    objects = [ObjectCode.from_ltoir(kernel.code, name=kernel.symbol),
               ObjectCode.from_ltoir(function.code, name=function.symbol),
               ObjectCode.from_fatbin(fatbin.code, name="cusolverdx_universal")]
    return bytes(Linker(*objects, options=LinkerOptions(arch=arch, link_time_optimization=True)).link("cubin").code)
