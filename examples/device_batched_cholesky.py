"""Solve a batch of small symmetric positive definite systems, each by one CUDA block (several per
block), with cuSOLVERDx's Cholesky factor-and-solve (posv) called from a Numba kernel. Checked
against numpy.linalg.solve (numba-cuda-mlir, or numba-cuda where it is not installed).

Run: python examples/device_batched_cholesky.py
"""

import sys

import numpy as np

SKIPPED = 77  # the exit status of an example that could not run its check (automake's convention)


def numba_cuda():
    """The ``cuda`` module of numba-cuda-mlir, the Numba compiler NVIDIA recommends. numba-cuda's
    (``from numba import cuda``, in maintenance mode) takes the same kernel code."""
    try:
        from numba_cuda_mlir import cuda
    except ImportError:
        from numba import cuda
    return cuda


def gpu_available() -> bool:
    try:
        return numba_cuda().is_available()
    except Exception:
        return False


def make_solver(n, dtype=np.float32, batches_per_block=4):
    from nvmathx.device_api import Solver

    return Solver("posv", (n, n, 1), dtype, batches_per_block=batches_per_block)


def build_kernel(solver, cuda=None):
    """Block ``j`` solves systems ``j * batches_per_block ...``: ``a`` holds the matrices (column
    major, one after another), ``b`` the right-hand sides, overwritten by the solutions. Returns the
    kernel and the bytes of dynamic shared memory to launch it with."""
    cuda = cuda or numba_cuda()
    matrix, vector = solver.m * solver.n, solver.n
    # One dynamic shared array holds a, b and then the 32-bit statuses (viewed as int32): with
    # numba-cuda-mlir 0.6 a dynamic shared array overlaps any static one in the same kernel.
    values = solver.a_size + solver.b_size
    status_slots = -(-4 * solver.info_size // np.dtype(solver.value_type).itemsize)

    @cuda.jit
    def solve(a, b, info):
        first = cuda.blockIdx.x * solver.batches_per_block
        thread = cuda.threadIdx.x + cuda.threadIdx.y * solver.block_dim[0]
        smem = cuda.shared.array(0, dtype=solver.value_type, alignment=16)
        sa = smem[: solver.a_size]
        sb = smem[solver.a_size : solver.a_size + solver.b_size]
        sinfo = smem[values : values + status_slots].view(np.int32)
        count = min(solver.batches_per_block, a.shape[0] - first)  # the last block may hold fewer
        for i in range(thread, count * matrix, solver.block_size):
            sa[i] = a[first + i // matrix, i % matrix]
        for i in range(thread, count * vector, solver.block_size):
            sb[i] = b[first + i // vector, i % vector]
        for i in range(count * matrix + thread, solver.a_size, solver.block_size):
            sa[i] = 1.0 if (i % matrix) % (solver.m + 1) == 0 else 0.0  # identity in unused slots
        cuda.syncthreads()
        solver.execute(sa, sb, sinfo)
        cuda.syncthreads()
        for i in range(thread, count * vector, solver.block_size):
            b[first + i // vector, i % vector] = sb[i]
        for i in range(thread, count, solver.block_size):
            info[first + i] = sinfo[i]

    return solve, (values + status_slots) * np.dtype(solver.value_type).itemsize


def main(batch=10_000, n=32) -> int:
    if not gpu_available():
        print("SKIPPED: device_batched_cholesky needs an NVIDIA GPU; nothing was checked.")
        return SKIPPED
    cuda = numba_cuda()
    solver = make_solver(n)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, n, n))
    matrices = x @ np.swapaxes(x, 1, 2) + n * np.eye(n)  # symmetric positive definite
    rhs = rng.standard_normal((batch, n))
    a = np.ascontiguousarray(np.swapaxes(matrices, 1, 2)).reshape(batch, n * n).astype(np.float32)  # column major
    b = cuda.to_device(rhs.astype(np.float32))
    info = cuda.device_array(batch, np.int32)
    kernel, shared_bytes = build_kernel(solver)
    blocks = -(-batch // solver.batches_per_block)
    kernel[blocks, solver.block_dim, 0, shared_bytes](cuda.to_device(a), b, info)
    solutions = b.copy_to_host().astype(np.float64)
    reference = np.linalg.solve(matrices, rhs[..., None])[..., 0]
    error = np.linalg.norm(solutions - reference) / np.linalg.norm(reference)
    failed = int(np.count_nonzero(info.copy_to_host()))
    print(f"{solver}\n{batch} systems of {n} x {n}: {failed} reported a failure, relative error {error:.2e}")
    if failed or not error < 1e-4:
        print("MISMATCH against numpy", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
