"""Host stand-ins for cuSOLVER, cuBLAS and the device, so the GPU engines of the dense solvers run
on a machine without a GPU.

Device pointers are addresses of host buffers. Each routine reads and writes column-major matrices
at the pointers it is given (pointer arrays included) with LAPACK through scipy, as the C library
documents it: LU factors in place with 1-based pivots (int64 for the 64-bit API, int32 for
the legacy and batched ones), ``info`` > 0 at the first zero pivot, Cholesky of one triangle (the
other left as it was), triangular solves of ``op(A) X = B``. The layouts, pointers, broadcasting and status
handling of the engines are checked against this model; the real libraries by the ``gpu`` tests.
"""

import ctypes

import numpy as np
import scipy.linalg as sl
from scipy.linalg import lapack

from nvmathx._bindings import cublas, cusolver

from ._fake_cublaslt import view_at

__all__ = ["install", "FakeSolverLibraries"]

_DTYPES = {0: "float32", 1: "float64", 4: "complex64", 5: "complex128"}


def _matrix(pointer, rows, cols, ld, dtype):
    return view_at(pointer, (rows, cols), (1, ld), dtype)


def _write_int(pointer, value, ctype=ctypes.c_int32):
    ctype.from_address(pointer).value = int(value)


def _pointers(array_pointer, count):
    return [int(p) for p in view_at(array_pointer, (count,), (1,), np.uint64)]


def _lapack(name, dtype):
    return lapack.get_lapack_funcs((name,), dtype=np.dtype(dtype))[0]


class FakeSolverLibraries:
    """Counts the calls of each routine (tests check which engine ran)."""

    def __init__(self):
        self.calls: dict = {}
        self.next = 0x1000

    def _count(self, name):
        self.calls[name] = self.calls.get(name, 0) + 1

    def handle(self, *args):
        self.next += 16
        return self.next

    def nothing(self, *args):
        return None

    # -- LU --------------------------------------------------------------------------------------

    def _getrf(self, pointer, n, lda, dtype, pivots, pivot_type, info):
        a = _matrix(pointer, n, n, lda, dtype)
        lu, piv, status = _lapack("getrf", dtype)(np.array(a, order="F"))
        a[...] = lu
        view = view_at(pivots, (n,), (1,), pivot_type)
        view[...] = piv + 1
        _write_int(info, status)

    def _getrs(self, pointer, pivots, pivot_type, trans, n, nrhs, lda, b_pointer, ldb, dtype):
        lu = np.array(_matrix(pointer, n, n, lda, dtype), order="F")
        piv = np.array(view_at(pivots, (n,), (1,), pivot_type)) - 1
        b = _matrix(b_pointer, n, nrhs, ldb, dtype)
        x, status = _lapack("getrs", dtype)(lu, piv, np.array(b, order="F"), trans=int(trans))
        assert status == 0
        b[...] = x

    def xgetrf_buffer_size(self, handle, params, n, dtype, a, lda):
        return 64, 8

    def xgetrf(self, handle, params, n, dtype, a, lda, ipiv, device_buffer, device_bytes, host_buffer, host_bytes,
               info):
        self._count("xgetrf")
        assert device_bytes == 64 and host_bytes == 8 and device_buffer and host_buffer
        self._getrf(a, n, lda, dtype, ipiv, np.int64, info)

    def xgetrs(self, handle, params, trans, n, nrhs, dtype, a, lda, ipiv, b, ldb, info):
        self._count("xgetrs")
        self._getrs(a, ipiv, np.int64, trans, n, nrhs, lda, b, ldb, dtype)
        _write_int(info, 0)

    def getrf_buffer_size(self, handle, n, dtype, a, lda):
        return 96

    def getrf(self, handle, n, dtype, a, lda, workspace, ipiv, info):
        self._count("getrf")
        assert workspace
        self._getrf(a, n, lda, dtype, ipiv, np.int32, info)

    def getrs(self, handle, trans, n, nrhs, dtype, a, lda, ipiv, b, ldb, info):
        self._count("getrs")
        self._getrs(a, ipiv, np.int32, trans, n, nrhs, lda, b, ldb, dtype)
        _write_int(info, 0)

    def getrf_batched(self, handle, n, dtype, a_array, lda, pivots, info_array, batch):
        self._count("getrf_batched")
        for i, pointer in enumerate(_pointers(a_array, batch)):
            self._getrf(pointer, n, lda, dtype, pivots + 4 * n * i, np.int32, info_array + 4 * i)

    def getrs_batched(self, handle, trans, n, nrhs, dtype, a_array, lda, pivots, b_array, ldb, batch):
        self._count("getrs_batched")
        for i, (a, b) in enumerate(zip(_pointers(a_array, batch), _pointers(b_array, batch))):
            self._getrs(a, pivots + 4 * n * i, np.int32, trans, n, nrhs, lda, b, ldb, dtype)

    # -- Cholesky --------------------------------------------------------------------------------

    def _potrf(self, pointer, uplo, n, lda, dtype, info):
        a = _matrix(pointer, n, n, lda, dtype)
        c, status = _lapack("potrf", dtype)(np.array(a, order="F"), lower=uplo == cusolver.FillMode.LOWER, clean=False)
        if status == 0:
            a[...] = c
        _write_int(info, status)

    def _potrs(self, pointer, uplo, n, nrhs, lda, b_pointer, ldb, dtype):
        c = np.array(_matrix(pointer, n, n, lda, dtype), order="F")
        b = _matrix(b_pointer, n, nrhs, ldb, dtype)
        x, status = _lapack("potrs", dtype)(c, np.array(b, order="F"), lower=uplo == cusolver.FillMode.LOWER)
        assert status == 0
        b[...] = x

    def xpotrf_buffer_size(self, handle, params, uplo, n, dtype, a, lda):
        return 32, 0

    def xpotrf(self, handle, params, uplo, n, dtype, a, lda, device_buffer, device_bytes, host_buffer, host_bytes,
               info):
        self._count("xpotrf")
        self._potrf(a, uplo, n, lda, dtype, info)

    def xpotrs(self, handle, params, uplo, n, nrhs, dtype, a, lda, b, ldb, info):
        self._count("xpotrs")
        self._potrs(a, uplo, n, nrhs, lda, b, ldb, dtype)
        _write_int(info, 0)

    def potrf_batched(self, handle, uplo, n, dtype, a_array, lda, info_array, batch):
        self._count("potrf_batched")
        for i, pointer in enumerate(_pointers(a_array, batch)):
            self._potrf(pointer, uplo, n, lda, dtype, info_array + 4 * i)

    def potrs_batched(self, handle, uplo, n, dtype, a_array, lda, b_array, ldb, info, batch):
        self._count("potrs_batched")
        for a, b in zip(_pointers(a_array, batch), _pointers(b_array, batch)):
            self._potrs(a, uplo, n, 1, lda, b, ldb, dtype)
        _write_int(info, 0)

    # -- triangular --------------------------------------------------------------------------------

    def _trsm(self, side, uplo, trans, diag, m, n, dtype, a, lda, b, ldb):
        assert side == cublas.SideMode.LEFT
        matrix = np.array(_matrix(a, m, m, lda, dtype))
        rhs = _matrix(b, m, n, ldb, dtype)
        with np.errstate(all="ignore"):
            try:
                rhs[...] = sl.solve_triangular(matrix, np.array(rhs), lower=uplo == cublas.FillMode.LOWER,
                                               trans=int(trans), unit_diagonal=diag == cublas.DiagType.UNIT,
                                               check_finite=False)
            except np.linalg.LinAlgError:  # a zero on the diagonal: the library divides by it
                rhs[...] = np.nan

    def trsm(self, handle, side, uplo, trans, diag, m, n, dtype, a, lda, b, ldb):
        self._count("trsm")
        self._trsm(side, uplo, trans, diag, m, n, dtype, a, lda, b, ldb)

    def trsm_batched(self, handle, side, uplo, trans, diag, m, n, dtype, a_array, lda, b_array, ldb, batch):
        self._count("trsm_batched")
        for a, b in zip(_pointers(a_array, batch), _pointers(b_array, batch)):
            self._trsm(side, uplo, trans, diag, m, n, dtype, a, lda, b, ldb)


def fake_check_launch(stream, device_id, name, count, *args):
    """The solvers' kernels (nonfinite, zero_diagonal, fill_pointers) with numpy, from a launch's
    arguments (as the GPU gets them: Python ints for pointers and 64-bit integers)."""
    if name == "fill_pointers":
        pointers, entries, base, stride = args
        assert all(type(arg) is int for arg in args) and entries == count > 0 and 0 <= base < 1 << 63
        view_at(pointers, (entries,), (1,), np.uint64)[...] = base + stride * np.arange(entries, dtype=np.uint64)
        return
    kernel, _, c_type = name.partition("<")
    pivot_dtypes = {"int": np.int32, "long long": np.int64}
    if kernel == "pivots_to_permutation":
        pivots, matrices, n, permutation = args
        index = pivot_dtypes[c_type[:-1]]
        assert matrices == count
        for i in range(matrices):  # LAPACK's interchanges, in order, applied to 0..n-1
            order = np.arange(n, dtype=index)
            for row, pivot in enumerate(view_at(pivots + i * n * order.itemsize, (n,), (1,), index)):
                order[[row, pivot - 1]] = order[[pivot - 1, row]]
            view_at(permutation + i * n * order.itemsize, (n,), (1,), index)[...] = order
        return
    if kernel == "permute_rows":
        source, permutation, n, target = args
        element, _, pivot = c_type[:-1].partition(", ")
        dtype = {"float": np.float32, "double": np.float64, "float2": np.complex64, "double2": np.complex128}[element]
        assert count == n
        order = view_at(permutation, (n,), (1,), pivot_dtypes[pivot])
        view_at(target, (n,), (1,), dtype)[...] = view_at(source, (n,), (1,), dtype)[order]
        return
    dtype = {"float": np.float32, "double": np.float64, "float2": np.complex64, "double2": np.complex128}[c_type[:-1]]
    if kernel == "nonfinite":
        from nvmathx._codegen.nonfinite import nonfinite_items

        data, n, flag = args
        assert count == nonfinite_items(n, c_type[:-1])
        if not np.isfinite(view_at(data, (n,), (1,), dtype)).all():
            _write_int(flag, 1)
        return
    assert kernel == "zero_diagonal"
    a, matrices, n, info = args
    assert matrices == count
    for i in range(matrices):
        diagonal = view_at(a + i * n * n * np.dtype(dtype).itemsize, (n,), (n + 1,), dtype)
        zeros = np.flatnonzero(diagonal == 0)
        _write_int(info + 4 * i, zeros[0] + 1 if zeros.size else 0)


def fake_load_fused_kernel(problem, device_id):
    """The fused engine's kernel with LAPACK: per system of the dense batch, factor and solve a copy
    of the matrix (the kernel works in shared memory: the factors are not written back)."""
    from nvmathx.linalg._solver_gpu import _uplo

    n, k, dtype = problem.n, problem.nrhs, problem.dtype
    itemsize = np.dtype(dtype).itemsize
    lower = _uplo(problem) == cusolver.FillMode.LOWER

    def run(stream, a, b, info, batches):
        assert batches == problem.batch_count
        for i in range(batches):
            matrix = np.array(_matrix(a + i * n * n * itemsize, n, n, n, dtype), order="F")
            rhs = _matrix(b + i * n * k * itemsize, n, k, n, dtype)
            if problem.structure == "general":
                lu, piv, status = _lapack("getrf", dtype)(matrix)
                if status == 0:
                    rhs[...] = _lapack("getrs", dtype)(lu, piv, np.array(rhs, order="F"))[0]
            else:
                c, status = _lapack("potrf", dtype)(matrix, lower=lower, clean=False)
                if status == 0:
                    rhs[...] = _lapack("potrs", dtype)(c, np.array(rhs, order="F"), lower=lower)[0]
            _write_int(info + 4 * i, status)

    return run, None


def install(monkeypatch, fused_available=False):
    """The fake device of tests/linalg/_fake_cublaslt.py (memory, streams, copies) plus host cuSOLVER,
    cuBLAS, check kernels and fused kernels (``fused_available``: whether "auto" may choose them);
    returns the FakeSolverLibraries (its ``calls``) and the memory resource."""
    from fft._fake_device import fake_launch
    from nvmathx._codegen import elementwise
    from nvmathx.linalg import _solver, _solver_gpu

    from ._fake_cublaslt import install as install_device

    _, resource = install_device(monkeypatch)
    fake = FakeSolverLibraries()
    for name in ("getrf_buffer_size", "getrf", "getrs", "xgetrf_buffer_size", "xgetrf", "xgetrs", "xpotrf_buffer_size",
                 "xpotrf", "xpotrs", "potrf_batched", "potrs_batched"):
        monkeypatch.setattr(cusolver, name, getattr(fake, name))
    for name in ("getrf_batched", "getrs_batched", "trsm", "trsm_batched"):
        monkeypatch.setattr(cublas, name, getattr(fake, name))
    for module in (cusolver, cublas):
        monkeypatch.setattr(module, "create", fake.handle)
        monkeypatch.setattr(module, "destroy", fake.nothing)
        monkeypatch.setattr(module, "set_stream", fake.nothing)
    monkeypatch.setattr(cusolver, "create_params", fake.handle)
    monkeypatch.setattr(cusolver, "destroy_params", fake.nothing)
    monkeypatch.setattr(elementwise, "_launch", fake_launch)
    monkeypatch.setattr(_solver_gpu, "launch_check", fake_check_launch)
    monkeypatch.setattr(_solver_gpu, "load_fused_kernel", fake_load_fused_kernel)
    monkeypatch.setattr(_solver, "fused_available", lambda: fused_available)
    monkeypatch.setattr(_solver_gpu, "fused_kernels_cached", lambda problem, check, device_id: True)
    monkeypatch.setattr(_solver_gpu, "ensure_device", lambda device_id: None)
    return fake, resource
