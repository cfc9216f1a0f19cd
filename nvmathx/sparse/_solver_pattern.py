"""The checksum of a sparse matrix's pattern (its row offsets and column indices), where they live;
and the solver's other small device kernels (the check for non-finite values shared with the dense
solvers, the search for an empty row or column, a copy into columns).

A plan of the direct solver holds the analysis of one pattern. :func:`pattern_checksum` tells a new
matrix of the same shape and number of entries whose pattern differs: ``spsolve``'s plan cache keys
on it and ``DirectSolver.reset_operands`` refuses a new pattern by it. Addresses say nothing (a
memory pool hands the same address to the next array), so the arrays' contents are hashed: on the
host with BLAKE2b, on a GPU by one kernel that folds every element, with its position, into two
64-bit words (a sum and an exclusive or of two different mixes), then 16 bytes copied back.
"""

from __future__ import annotations

import hashlib

import numpy as np

from .._bindings import cuda_driver
from .._codegen.launch import KernelSet, launch
from .._codegen.nonfinite import NONFINITE_NAMES, NONFINITE_SOURCE, nonfinite_launch
from .._core.memory import allocate
from .._core.tensor import SparseOperand, host_array

__all__ = ["pattern_checksum", "any_nonfinite", "empty_line", "gather_columns", "CHECKSUM_SOURCE", "KERNELS"]

CHECKSUM_SOURCE = r"""
typedef unsigned long long u64;

__device__ __forceinline__ u64 mix(u64 z) {  // splitmix64's finaliser
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

__global__ void checksum_clear(u64* out) {
    if (blockIdx.x == 0 && threadIdx.x == 0) { out[0] = 0ull; out[1] = 0ull; }
}

// Folds a[0:n] into out[0] (sum) and out[1] (xor); `salt` tells the two arrays of a matrix apart.
template <typename T>
__global__ void checksum_fold(const T* a, long long n, u64 salt, u64* out) {
    u64 sum = 0ull, other = 0ull;
    const long long step = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        const u64 word = (u64)(long long)a[i] + ((u64)i + salt) * 0x9e3779b97f4a7c15ull;
        sum += mix(word);
        other ^= mix(word ^ 0x5851f42d4c957f2dull);
    }
    atomicAdd(out, sum);
    atomicXor(out + 1, other);
}

// The lines of a square pattern that hold entries: rows[i] = 1 where row i has one, columns[j] = 1
// where column j has one (both zeroed before).
template <typename I>
__global__ void mark_lines(const I* indptr, const I* indices, long long n, long long nnz, unsigned char* rows,
                           unsigned char* columns) {
    const long long step = (long long)gridDim.x * blockDim.x;
    const long long count = n > nnz ? n : nnz;
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < count; t += step) {
        if (t < n && indptr[t + 1] > indptr[t]) rows[t] = 1;
        if (t < nnz) columns[indices[t]] = 1;
    }
}

// first[0] = the first row without entries and first[1] the first such column (both set to ~0 before
// and left so where there is none); with `either`, a line counts as empty where its row and its
// column both are (one stored triangle of a symmetric matrix), in first[0].
__global__ void first_empty_line(const unsigned char* rows, const unsigned char* columns, long long n, int either,
                                 unsigned long long* first) {
    const long long step = (long long)gridDim.x * blockDim.x;
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < n; t += step) {
        if (either) {
            if (!(rows[t] | columns[t])) atomicMin(first, (unsigned long long)t);
        } else {
            if (!rows[t]) atomicMin(first, (unsigned long long)t);
            if (!columns[t]) atomicMin(first + 1, (unsigned long long)t);
        }
    }
}

// Copies a rows x cols matrix with element strides (rs, cs) into column-major dst (ld = rows);
// T is a type of the element's size.
template <typename T>
__global__ void gather_columns(const T* src, long long rows, long long count, long long rs, long long cs, T* dst) {
    const long long step = (long long)gridDim.x * blockDim.x;
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < count; t += step)
        dst[t] = src[(t % rows) * rs + (t / rows) * cs];
}
"""

KERNELS = KernelSet(NONFINITE_SOURCE + CHECKSUM_SOURCE, (
    "checksum_clear", "checksum_fold<int>", "checksum_fold<long long>", *NONFINITE_NAMES, "mark_lines<int>",
    "mark_lines<long long>", "first_empty_line",
    "gather_columns<unsigned int>", "gather_columns<unsigned long long>", "gather_columns<double2>"))
_KERNELS = KERNELS
_SALTS = (0x1, 0x100000001)  # row offsets, column indices


def pattern_checksum(a: SparseOperand, stream=None) -> bytes:
    """A 16-byte checksum of ``a``'s row offsets and column indices, computed where they live.

    On a GPU the kernel is ordered on ``stream`` (a StreamHolder) and the call waits for its 16
    bytes. Host and device checksums of one pattern differ (each is compared only with its kind).
    """
    if not a.is_device:
        digest = hashlib.blake2b(digest_size=16)
        digest.update(np.asarray(a.shape, dtype=np.int64).tobytes())
        for array in (a.indptr, a.indices):
            digest.update(np.ascontiguousarray(host_array(array)).tobytes())
        return digest.digest()
    return _device_checksum(a, stream)


def _device_checksum(a: SparseOperand, stream) -> bytes:
    device_id = a.device_id
    buffer = allocate(16, stream, device_id)
    out = int(buffer.handle)
    fold = _KERNELS.kernel(device_id, "checksum_fold<int>" if a.index_dtype.itemsize == 4 else
                           "checksum_fold<long long>")
    launch(stream, _KERNELS.kernel(device_id, "checksum_clear"), 1, out)
    for array, salt in zip((a.indptr, a.indices), _SALTS):
        count = int(array.shape[0])
        if count:
            launch(stream, fold, count, array.ptr, count, salt, out)
    host = np.zeros(2, dtype=np.uint64)
    cuda_driver.memcpy_async(host.ctypes.data, out, 16, stream.handle)
    cuda_driver.stream_synchronize(stream.handle)
    buffer.close(stream.core)
    return np.asarray(a.shape, dtype=np.int64).tobytes() + host.tobytes()


def empty_line(a: SparseOperand, one_triangle: bool, stream) -> tuple[str, int] | None:
    """``("row", i)`` or ``("column", j)``: the first line of square device matrix ``a`` without a
    stored entry (the matrix is then structurally singular), or None; waits for the answer. With
    ``one_triangle`` (a symmetric matrix stored as one triangle), line i is empty where row i and
    column i both are, and is named a row."""
    n = a.shape[0]
    if n == 0:
        return None
    device_id = a.device_id
    buffer = allocate(16 + 2 * n, stream, device_id)
    first, rows = int(buffer.handle), int(buffer.handle) + 16
    columns = rows + n
    cuda_driver.memset_async(first, 0xFF, 16, stream.handle)
    cuda_driver.memset_async(rows, 0, 2 * n, stream.handle)
    mark = _KERNELS.kernel(device_id, "mark_lines<int>" if a.index_dtype.itemsize == 4 else "mark_lines<long long>")
    launch(stream, mark, max(n, a.nnz), a.indptr.ptr, a.indices.ptr, n, a.nnz, rows, columns)
    launch(stream, _KERNELS.kernel(device_id, "first_empty_line"), n, rows, columns, n, np.int32(one_triangle), first)
    host = np.zeros(2, dtype=np.uint64)
    cuda_driver.memcpy_async(host.ctypes.data, first, 16, stream.handle)
    cuda_driver.stream_synchronize(stream.handle)
    buffer.close(stream.core)
    if host[0] < n:
        return "row", int(host[0])
    return ("column", int(host[1])) if host[1] < n else None


def any_nonfinite(ptr: int, size: int, dtype, device_id: int, stream) -> bool:
    """Whether ``size`` contiguous device elements of ``dtype`` at ``ptr`` hold a NaN or an infinite
    number (the check the dense solvers run, :mod:`nvmathx._codegen.nonfinite`); waits for the answer."""
    if size == 0:
        return False
    buffer = allocate(4, stream, device_id)
    flag = int(buffer.handle)
    cuda_driver.memset_async(flag, 0, 4, stream.handle)
    name, items, *arguments = nonfinite_launch(np.dtype(dtype).name, ptr, int(size), flag)
    launch(stream, _KERNELS.kernel(device_id, name), items, *arguments)
    host = np.zeros(1, dtype=np.int32)
    cuda_driver.memcpy_async(host.ctypes.data, flag, 4, stream.handle)
    cuda_driver.stream_synchronize(stream.handle)
    buffer.close(stream.core)
    return bool(host[0])


_WORDS = {4: "unsigned int", 8: "unsigned long long", 16: "double2"}


def gather_columns(source: int, rows: int, columns: int, strides: tuple, itemsize: int, destination: int,
                   device_id: int, stream) -> None:
    """Copy a ``rows x columns`` device matrix at ``source`` with element ``strides`` into
    column-major memory at ``destination``, ordered on ``stream``."""
    count = rows * columns
    if count:
        kernel = _KERNELS.kernel(device_id, f"gather_columns<{_WORDS[itemsize]}>")
        launch(stream, kernel, count, source, rows, count, int(strides[0]), int(strides[1]), destination)
