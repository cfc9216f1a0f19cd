"""The GPU engines of the dense solvers: one state object per engine behind one interface.

Every engine works on its own copies: ``factorize()`` copies ``a`` (any strides, broadcast batch
dimensions read with stride 0) into a dense batch of column-major matrices, which the library
factors in place; ``solve()`` copies ``b`` into a dense batch of column-major ``n x nrhs``
blocks, solves there in place and copies the solution into a new C-contiguous array of the
operand's library. With one right-hand side those blocks are the result's own layout, so every
engine copies ``b`` into the result and solves there. Pointers, pointer arrays and workspaces are
fixed at ``plan()``, but for the batched engine's array of right-hand sides, which a kernel refills
on the call's stream where the result lies elsewhere than last time (at every call once a CUDA
graph has captured a refill); so ``solve()`` (and ``factorize()``) queue work without waiting and
can be captured in a CUDA graph when ``check="none"``.

- :class:`CusolverEngine`: cuSOLVER, one call per matrix (the typed ``<t>getrf``/``<t>getrs`` or
  the 64-bit ``Xgetrf``/``Xgetrs``, ``Xpotrf``/``Xpotrs``), cuBLAS ``trsm`` for triangular and
  diagonal systems, and for the solves of a factorization of a large general system with one
  right-hand side (after a gather of ``b``'s rows by the pivots' permutation).
- :class:`BatchedEngine`: one call per batch: cuBLAS ``getrfBatched``/``getrsBatched`` and
  ``trsmBatched``, cuSOLVER ``potrfBatched`` and ``potrsBatched`` (one right-hand side; more take
  two ``trsmBatched``). ``a`` is expanded to the full batch where it is broadcast (the batched
  routines take one pivot array per batch). With one right-hand side the array of right-hand
  side pointers is refilled by ``fill_pointers`` (:mod:`._solver_kernels`) when the result moves.
- :class:`FusedEngine`: one generated cuSOLVERDx kernel (:mod:`nvmathx._codegen.fused_solver`)
  factors and solves every system in shared memory, one launch per solve.
"""

from __future__ import annotations

import ctypes
import functools
from typing import Any, Callable

import numpy as np

from .._bindings import cublas, cuda_driver, cusolver
from .._codegen.elementwise import prepare_copy
from .._codegen.nonfinite import nonfinite_launch
from .._core.device import ensure_device
from .._core.errors import OperandError, OptionsError
from .._core.memory import allocate
from .._core.streams import is_capturing
from .._core.tensor import Operand, allocate_like, c_strides
from ._solver_cpu import singular_error
from ._solver_kernels import ELEMENT_TYPES, PIVOT_TYPES
from ._solver_kernels import launch as launch_check
from ._solver_problem import SolveProblem, batched_column_major_strides, broadcast_strides

__all__ = ["GpuSolverState", "CusolverEngine", "BatchedEngine", "FusedEngine", "ENGINE_CLASSES", "load_fused_kernel",
           "fused_kernels_cached"]

_TRANS = {"N": 0, "T": 1, "C": 2}
_LEFT, _NON_UNIT = cublas.SideMode.LEFT, cublas.DiagType.NON_UNIT
# Above this order, DirectSolver.solve() of a general system with one right-hand side runs as a row
# gather and two cuBLAS triangular solves (CusolverEngine), as torch's lu_solve does for n > 128.
TRIANGULAR_SOLVES_MIN_N = 128


class GpuSolverState:
    """What every GPU engine shares: the dense copies of ``a`` and ``b``, ``info``, the checks and the
    result. Subclasses factor ``factor_count`` matrices and solve ``problem.batch_count`` systems."""

    name = ""
    # whether _solve reads the systems' address each call (else it is fixed at plan time)
    solves_anywhere = True

    def __init__(self, problem: SolveProblem, *, device_id: int, stream, memory_resource=None, check: str = "raise",
                 check_finite: bool = True):
        ensure_device(device_id)
        self.problem = problem
        self.device_id = device_id
        self.memory_resource = memory_resource
        self.raise_singular = check == "raise"
        self.check_finite = check_finite and check == "raise"
        self.itemsize = np.dtype(problem.dtype).itemsize
        self._buffers: list = []
        self._bytes = 0
        self._copies: dict = {}  # (role, operand strides) -> prepared copy
        self._copy_out: Callable[[int, int, Any], None] | None = None
        self._stream = stream
        n, nrhs = problem.n, problem.nrhs
        self.matrix_bytes = n * n * self.itemsize
        self.a_work = self._allocate(self.factor_count * self.matrix_bytes)
        # One right-hand side per system: the column-major work layout is the result's (C order), so
        # engines that take the address per call solve in the result itself (one copy fewer).
        self.in_result = self.solves_anywhere and (nrhs == 1 or n == 1)
        self.x_work = 0 if self.in_result else self._allocate(problem.batch_count * n * nrhs * self.itemsize)
        self.x = self.x_work  # where the systems are solved: x_work, or this call's result
        # info: one int32 per factored matrix, the non-finite flags of a and b, then the solve's own info
        self.info = self._allocate((self.factor_count + 3) * 4)
        self.flag = self.info + self.factor_count * 4
        self.b_flag = self.flag + 4
        self.solve_info = self.b_flag + 4
        self.host_info = np.zeros(self.factor_count + 2, np.int32)
        # x_work holds column-major n x nrhs blocks; the result is C-contiguous (what numpy makes)
        self.work_strides = batched_column_major_strides(problem.batch, n, nrhs)

    # -- what engines define -------------------------------------------------------------------

    @property
    def factor_batch(self) -> tuple:
        """The batch of matrices factored: a's own (the broadcast batch where an engine expands a)."""
        return self.problem.a_batch

    @functools.cached_property
    def factor_count(self) -> int:
        # (read on every call: the batch is fixed, so the product is taken once)
        return int(np.prod(self.factor_batch, dtype=np.int64))

    def _factor(self, stream) -> None:
        raise NotImplementedError

    def _factor_before_solve(self, stream) -> None:
        """The factorization :meth:`factorize_and_solve` runs before ``_solve`` (engines whose solve
        factors as well run none)."""
        self._factor(stream)

    def _solve(self, stream) -> None:
        raise NotImplementedError

    def _prepare_solves(self, stream) -> None:
        """What :meth:`factorize` (a factorization that may serve many solves, unlike the function
        form's one) prepares for the solves after ``_factor``: nothing, unless an engine says."""

    def _release(self) -> None:
        """Destroy the engine's handles."""

    # -- memory --------------------------------------------------------------------------------

    def _allocate(self, nbytes: int) -> int:
        buffer = allocate(nbytes, self._stream, self.device_id, self.memory_resource)
        self._buffers.append(buffer)
        self._bytes += nbytes
        return int(buffer.handle)

    def _upload(self, values: np.ndarray) -> int:
        """A device copy of a small host array (pointer arrays), made at plan time."""
        pointer = self._allocate(values.nbytes)
        if values.nbytes:
            cuda_driver.memcpy_async(pointer, values.ctypes.data, values.nbytes, self._stream.handle)
            cuda_driver.stream_synchronize(self._stream.handle)  # (values is pageable host memory)
        return pointer

    @property
    def workspace_bytes(self) -> int:
        return self._bytes

    def free(self) -> None:
        self._release()
        stream = self._stream.core if self._stream is not None else None
        for buffer in self._buffers:
            buffer.close(stream)
        self._buffers = []
        self._bytes = 0

    # -- the calls -----------------------------------------------------------------------------

    def matrix(self, index: int) -> int:
        return self.a_work + index * self.matrix_bytes

    def system(self, index: int) -> int:
        return self.x + index * self.problem.n * self.problem.nrhs * self.itemsize

    def factorize(self, a: Operand, stream) -> None:
        """Copy ``a`` into the factors' memory, factor it, and (check="raise") read the status."""
        problem = self.problem
        self._stream = stream
        if problem.n == 0 or self.factor_count == 0:
            return
        self._copy_a(a, stream)
        self._check_a(stream)
        self._factor(stream)
        self._prepare_solves(stream)
        self._check_diagonal(stream)
        if self.raise_singular:
            self._read_info(stream)

    def factorize_and_solve(self, a: Operand, b: Operand, like: Operand, stream):
        """:meth:`factorize` then :meth:`solve` with the statuses read once, at the end (one
        synchronisation with ``check="raise"``, none without): the function form's call. The errors
        are :meth:`factorize`'s, then :meth:`solve`'s, in that order."""
        problem = self.problem
        self._stream = stream
        result = allocate_like(like, problem.result_shape, np.dtype(problem.dtype), self.device_id, stream,
                               memory_resource=self.memory_resource)
        if problem.empty:  # no solve, but a's status still counts (as in factorize())
            self.factorize(a, stream)
            return result
        self._copy_a(a, stream)
        self._check_a(stream)
        self._copy_b(b, result, stream)
        self._check_b(stream)
        self._factor_before_solve(stream)
        self._check_diagonal(stream)
        self._solve(stream)
        self._copy_x(result, stream)
        if self.raise_singular:
            self._read_info(stream, b_checked=True)
        return result

    def _check_a(self, stream) -> None:
        """Queue the finiteness check of a's copy (its flag and b's cleared first)."""
        if self.check_finite:
            problem = self.problem
            cuda_driver.memset_async(self.flag, 0, 8, stream.handle)
            self._launch_nonfinite(stream, self.a_work, self.factor_count * problem.n * problem.n, self.flag)

    def _check_b(self, stream) -> None:
        """Queue the finiteness check of b's copy (its flag cleared first)."""
        if self.check_finite:
            problem = self.problem
            cuda_driver.memset_async(self.b_flag, 0, 4, stream.handle)
            self._launch_nonfinite(stream, self.x, problem.batch_count * problem.n * problem.nrhs, self.b_flag)

    def _check_diagonal(self, stream) -> None:
        """Triangular and diagonal systems: a zero on the diagonal is the singular status."""
        problem = self.problem
        if problem.structure in ("lower triangular", "upper triangular", "diagonal") and self.raise_singular:
            launch_check(stream, self.device_id, f"zero_diagonal<{ELEMENT_TYPES[problem.dtype]}>", self.factor_count,
                         self.a_work, self.factor_count, problem.n, self.info)

    def _launch_nonfinite(self, stream, pointer: int, elements: int, flag: int) -> None:
        launch_check(stream, self.device_id, *nonfinite_launch(self.problem.dtype, pointer, elements, flag))

    def _copy_a(self, a: Operand, stream) -> None:
        if self.problem.structure == "diagonal":
            cuda_driver.memset_async(self.a_work, 0, self.factor_count * self.matrix_bytes, stream.handle)
        self._prepared("a", a)(a.ptr, self.a_work, stream)

    def _prepared(self, role: str, operand: Operand):
        """The copy of ``operand`` (``"a"`` into the factors, ``"b"`` into the systems), prepared once
        per layout: a cached plan copies the same layout every call (the plan key has its strides)."""
        key = (role, operand.strides)
        copy = self._copies.get(key)
        if copy is None:
            if len(self._copies) >= 16:  # (a stateful solver fed ever new layouts)
                self._copies.clear()
            copy = self._copies[key] = self._prepare_copy_a(operand) if role == "a" else self._prepare_copy_b(operand)
        return copy

    def _prepare_copy_a(self, a: Operand):
        problem, n, batch = self.problem, self.problem.n, self.factor_batch
        source_batch = broadcast_strides(problem.a_batch, tuple(a.strides[:-2]), batch)
        target = batched_column_major_strides(batch, n, n)
        row, col, conj = self._matrix_view(a)
        if problem.structure == "diagonal":
            return prepare_copy(batch + (n,), source_batch + (row + col,), target[:-2] + (n + 1,), problem.dtype,
                                problem.dtype, 1.0, False, self.device_id)
        return prepare_copy(batch + (n, n), source_batch + (row, col), target, problem.dtype, problem.dtype, 1.0, conj,
                            self.device_id)

    def _matrix_view(self, a: Operand) -> tuple:
        """(row stride, column stride, conjugate) with which ``a`` is copied into the factors' memory."""
        conj = self.problem.structure == "positive definite" and self.problem.operation == "T" \
            and self.problem.dtype.startswith("complex")  # aᵀ = conj(a) for a Hermitian a
        return a.strides[-2], a.strides[-1], conj

    def _read_info(self, stream, *, b_checked: bool = False) -> None:
        host = self.host_info
        cuda_driver.memcpy_async(host.ctypes.data, self.info, host.nbytes, stream.handle)
        cuda_driver.stream_synchronize(stream.handle)
        if self.check_finite and host[-2]:
            raise OperandError("a", "contains NaN or Inf (pass check_finite=False to skip this check)")
        failed = np.flatnonzero(host[:-2] > 0)
        if failed.size:
            index = self.a_index(int(failed.min()))
            raise singular_error(self.problem, index, int(host[failed.min()]) - 1)
        if b_checked and self.check_finite and host[-1]:
            raise OperandError("b", "contains NaN or Inf (pass check_finite=False to skip this check)")

    def a_index(self, factor_index: int) -> int:
        """The matrix of a's flattened batch that factored matrix ``factor_index`` is."""
        return factor_index

    def solve(self, b: Operand, like: Operand, stream):
        """Copy ``b`` in, solve, and return the solution as a new array of ``like``'s library."""
        problem = self.problem
        self._stream = stream
        result = allocate_like(like, problem.result_shape, np.dtype(problem.dtype), self.device_id, stream,
                               memory_resource=self.memory_resource)
        if problem.empty:
            return result
        self._copy_b(b, result, stream)
        if self.check_finite:
            self._check_b(stream)
            flag = self.host_info[-1:]
            cuda_driver.memcpy_async(flag.ctypes.data, self.b_flag, 4, stream.handle)
            cuda_driver.stream_synchronize(stream.handle)
            if flag[0]:
                raise OperandError("b", "contains NaN or Inf (pass check_finite=False to skip this check)")
        self._solve(stream)
        self._copy_x(result, stream)
        return result

    def _copy_x(self, result: Operand, stream) -> None:
        """The solutions (column-major blocks) into the C-contiguous result (unless solved there)."""
        if self.in_result:
            return
        copy = self._copy_out
        if copy is None:
            problem = self.problem
            shape = problem.batch + (problem.n, problem.nrhs)
            copy = self._copy_out = prepare_copy(shape, self.work_strides, c_strides(shape), problem.dtype,
                                                 problem.dtype, 1.0, False, self.device_id)
        copy(self.x_work, result.ptr, stream)

    def _copy_b(self, b: Operand, result: Operand, stream) -> None:
        """``b`` into the column-major blocks the engine solves in: x_work, or the result itself."""
        self.x = result.ptr if self.in_result else self.x_work
        self._prepared("b", b)(b.ptr, self.x, stream)

    def _prepare_copy_b(self, b: Operand):
        problem = self.problem
        if problem.b_vector:
            shape = problem.batch + (problem.n, 1)
            source = (0,) * len(problem.batch) + (b.strides[0], 0)
        else:
            shape = problem.batch + (problem.n, problem.nrhs)
            source = broadcast_strides(problem.b_batch, tuple(b.strides[:-2]), problem.batch) + tuple(b.strides[-2:])
        return prepare_copy(shape, source, self.work_strides, problem.dtype, problem.dtype, 1.0, False, self.device_id)

    def _a_of_system(self) -> list:
        """Per system of the flattened batch, the index of its matrix in a's flattened batch."""
        problem = self.problem
        strides = broadcast_strides(problem.a_batch, _c_steps(problem.a_batch), problem.batch)
        return [sum(i * s for i, s in zip(index, strides)) for index in np.ndindex(*problem.batch)]


def _c_steps(shape: tuple) -> tuple:
    steps: list[int] = []
    step = 1
    for extent in reversed(shape):
        steps.insert(0, step)
        step *= extent
    return tuple(steps)


class _Handles:
    """A cuSOLVER and a cuBLAS handle (made on demand) following the stream of each call."""

    def __init__(self):
        self.solver = self.params = self.blas = 0
        self._solver_stream = self._blas_stream = None

    def cusolver(self, stream) -> int:
        if not self.solver:
            self.solver = cusolver.create()
            self.params = cusolver.create_params()
        if self._solver_stream != stream.handle:
            cusolver.set_stream(self.solver, stream.handle)
            self._solver_stream = stream.handle
        return self.solver

    def cublas(self, stream) -> int:
        if not self.blas:
            self.blas = cublas.create()
        if self._blas_stream != stream.handle:
            cublas.set_stream(self.blas, stream.handle)
            self._blas_stream = stream.handle
        return self.blas

    def release(self) -> None:
        if self.params:
            cusolver.destroy_params(self.params)
        if self.solver:
            cusolver.destroy(self.solver)
        if self.blas:
            cublas.destroy(self.blas)
        self.solver = self.params = self.blas = 0


def _uplo(problem: SolveProblem) -> int:
    """The triangle the library reads of the column-major copy of a (the same matrix)."""
    if problem.structure == "positive definite":
        return cusolver.FillMode.LOWER if problem.lower else cusolver.FillMode.UPPER
    return cusolver.FillMode.UPPER if problem.structure == "upper triangular" else cusolver.FillMode.LOWER


# The legacy typed LU takes 32-bit sizes: it serves matrices whose elements a 32-bit int counts.
LEGACY_LU_ELEMENTS = 2**31 - 1


def uses_legacy_lu(problem: SolveProblem) -> bool:
    """Whether a general system runs on cuSOLVER's legacy LU (``<t>getrf``/``<t>getrs``), whose solve
    is faster than the 64-bit ``Xgetrs``; the 64-bit API is kept for matrices too large for 32-bit
    sizes."""
    return problem.structure == "general" and problem.n * max(problem.n, problem.nrhs) <= LEGACY_LU_ELEMENTS


class CusolverEngine(GpuSolverState):
    """cuSOLVER, one call per matrix: the legacy LU (:func:`uses_legacy_lu`) or the 64-bit API's;
    the 64-bit Cholesky; cuBLAS trsm for triangular and diagonal systems. After ``factorize()``, a
    general system above :data:`TRIANGULAR_SOLVES_MIN_N` with one right-hand side solves by a row
    gather and two trsm instead of getrs (see ``triangular_solves``)."""

    name = "cusolver"

    def __init__(self, problem: SolveProblem, **kwargs):
        super().__init__(problem, **kwargs)
        self.handles = _Handles()
        self.systems = self._a_of_system()
        self.pivots = 0
        self.device_workspace = self.host_bytes = self.device_bytes = 0
        self.host_workspace = None
        self.legacy_lu = uses_legacy_lu(problem)
        # DirectSolver's solves of one factorization with one right-hand side each: the pivots become
        # a permutation once (at factorize()), then each solve gathers b's rows by it and runs two
        # cuBLAS triangular solves instead of getrs, which applies the pivots as n interchanges
        # every call. (The function form's one solve per factorization keeps getrs.)
        self.triangular_solves = (problem.structure == "general" and problem.operation == "N" and problem.nrhs == 1
                                  and problem.n > TRIANGULAR_SOLVES_MIN_N)
        self.permutation = self.gathered = 0
        self.permutation_current = False  # whether the permutation is the current factorization's
        self.gather_kernel = f"permute_rows<{ELEMENT_TYPES[problem.dtype]}, {PIVOT_TYPES[self.pivot_bytes]}>"
        stream = self._stream
        if problem.n and self.factor_count and problem.structure in ("general", "positive definite"):
            handle = self.handles.cusolver(stream)
            if self.legacy_lu:
                self.pivots = self._allocate(self.factor_count * problem.n * 4)
                sizes = cusolver.getrf_buffer_size(handle, problem.n, problem.dtype, self.a_work, problem.n), 0
            elif problem.structure == "general":
                self.pivots = self._allocate(self.factor_count * problem.n * 8)
                sizes = cusolver.xgetrf_buffer_size(handle, self.handles.params, problem.n, problem.dtype,
                                                    self.a_work, problem.n)
            else:
                sizes = cusolver.xpotrf_buffer_size(handle, self.handles.params, _uplo(problem), problem.n,
                                                    problem.dtype, self.a_work, problem.n)
            self.device_bytes, self.host_bytes = sizes
            self.device_workspace = self._allocate(self.device_bytes) if self.device_bytes else 0
            self.host_workspace = ctypes.create_string_buffer(max(self.host_bytes, 1))
            if self.triangular_solves:
                self.permutation = self._allocate(self.factor_count * problem.n * self.pivot_bytes)
                self.gathered = self._allocate(problem.n * self.itemsize)

    @property
    def pivot_bytes(self) -> int:
        """Bytes per pivot: the legacy LU's int32, the 64-bit API's int64."""
        return 4 if self.legacy_lu else 8

    def _factor(self, stream) -> None:
        problem, n = self.problem, self.problem.n
        if problem.structure not in ("general", "positive definite"):
            return
        handle, params = self.handles.cusolver(stream), self.handles.params
        host = ctypes.addressof(self.host_workspace) if self.host_workspace is not None else 0
        self.permutation_current = False
        for i in range(self.factor_count):
            if self.legacy_lu:
                cusolver.getrf(handle, n, problem.dtype, self.matrix(i), n, self.device_workspace,
                               self.pivots + i * n * self.pivot_bytes, self.info + 4 * i)
            elif problem.structure == "general":
                cusolver.xgetrf(handle, params, n, problem.dtype, self.matrix(i), n,
                                self.pivots + i * n * self.pivot_bytes,
                                self.device_workspace, self.device_bytes, host, self.host_bytes, self.info + 4 * i)
            else:
                cusolver.xpotrf(handle, params, _uplo(problem), n, problem.dtype, self.matrix(i), n,
                                self.device_workspace, self.device_bytes, host, self.host_bytes, self.info + 4 * i)

    def _prepare_solves(self, stream) -> None:
        if self.triangular_solves and self.factor_count:
            launch_check(stream, self.device_id, f"pivots_to_permutation<{PIVOT_TYPES[self.pivot_bytes]}>",
                         self.factor_count, self.pivots, self.factor_count, self.problem.n, self.permutation)
            self.permutation_current = True

    def _solve(self, stream) -> None:
        problem, n, nrhs = self.problem, self.problem.n, self.problem.nrhs
        if self.permutation_current:
            self._gather_and_triangular_solves(stream)
        elif self.legacy_lu:
            handle = self.handles.cusolver(stream)
            for j, i in enumerate(self.systems):
                cusolver.getrs(handle, _TRANS[problem.operation], n, nrhs, problem.dtype, self.matrix(i), n,
                               self.pivots + i * n * 4, self.system(j), n, self.solve_info)
        elif problem.structure == "general":
            handle, params = self.handles.cusolver(stream), self.handles.params
            for j, i in enumerate(self.systems):
                cusolver.xgetrs(handle, params, _TRANS[problem.operation], n, nrhs, problem.dtype, self.matrix(i), n,
                                self.pivots + i * n * 8, self.system(j), n, self.solve_info)
        elif problem.structure == "positive definite":
            handle, params = self.handles.cusolver(stream), self.handles.params
            for j, i in enumerate(self.systems):
                cusolver.xpotrs(handle, params, _uplo(problem), n, nrhs, problem.dtype, self.matrix(i), n,
                                self.system(j), n, self.solve_info)
        else:
            handle = self.handles.cublas(stream)
            for j, i in enumerate(self.systems):
                cublas.trsm(handle, _LEFT, _uplo(problem), _TRANS[problem.operation], _NON_UNIT, n, nrhs,
                            problem.dtype, self.matrix(i), n, self.system(j), n)

    def _gather_and_triangular_solves(self, stream) -> None:
        """Per system: the gathered ``P^T b``, ``L^-1`` and ``U^-1`` (cuBLAS trsm) applied to it in
        place, then copied back into the system (a column of ``n``)."""
        problem, n = self.problem, self.problem.n
        handle = self.handles.cublas(stream)
        nbytes = n * self.itemsize
        for j, i in enumerate(self.systems):
            system, factors = self.system(j), self.matrix(i)
            launch_check(stream, self.device_id, self.gather_kernel, n, system,
                         self.permutation + i * n * self.pivot_bytes, n, self.gathered)
            cublas.trsm(handle, _LEFT, cublas.FillMode.LOWER, cublas.Operation.N, cublas.DiagType.UNIT, n, 1,
                        problem.dtype, factors, n, self.gathered, n)
            cublas.trsm(handle, _LEFT, cublas.FillMode.UPPER, cublas.Operation.N, _NON_UNIT, n, 1, problem.dtype,
                        factors, n, self.gathered, n)
            cuda_driver.memcpy_async(system, self.gathered, nbytes, stream.handle)

    def _release(self) -> None:
        self.handles.release()


class BatchedEngine(GpuSolverState):
    """One call per batch: cuBLAS getrfBatched/getrsBatched/trsmBatched, cuSOLVER potrf/potrsBatched."""

    name = "batched"

    def __init__(self, problem: SolveProblem, **kwargs):
        super().__init__(problem, **kwargs)
        self.handles = _Handles()
        self._a_indices = self._a_of_system()
        count, n = problem.batch_count, problem.n
        self.a_pointers = self._upload(np.array([self.matrix(i) for i in range(count)], np.uint64))
        # system(i) of the dense batch at self.x: x_work's addresses are uploaded once; a result's
        # are written by fill_pointers before the solve (x_base: the address last filled, None where
        # the host does not know what the array holds; graph_fills: a CUDA graph captured a fill)
        self.system_bytes = n * problem.nrhs * self.itemsize
        self.graph_fills = False
        if self.in_result:
            self.x_pointers = self._allocate(count * 8)
            self.x_base: int | None = None
        else:
            self.x_pointers = self._upload(np.array([self.system(i) for i in range(count)], np.uint64))
            self.x_base = self.x_work
        self.pivots = self._allocate(count * n * 4) if problem.structure == "general" else 0

    @property
    def factor_batch(self) -> tuple:
        return self.problem.batch

    def a_index(self, factor_index: int) -> int:
        return self._a_indices[factor_index]

    def _factor(self, stream) -> None:
        problem, n, count = self.problem, self.problem.n, self.problem.batch_count
        if problem.structure == "general":
            cublas.getrf_batched(self.handles.cublas(stream), n, problem.dtype, self.a_pointers, n, self.pivots,
                                 self.info, count)
        elif problem.structure == "positive definite":
            cusolver.potrf_batched(self.handles.cusolver(stream), _uplo(problem), n, problem.dtype, self.a_pointers, n,
                                   self.info, count)

    def _point_x(self, stream) -> None:
        """Queue the refill of x_pointers where the systems lie elsewhere than the array says. Once a
        CUDA graph has captured a fill, each of its replays rewrites the array behind the host's back,
        so from then on every call fills it."""
        if not self.graph_fills:
            if is_capturing(stream.handle):
                self.graph_fills = True
            elif self.x == self.x_base:
                return
        count = self.problem.batch_count
        launch_check(stream, self.device_id, "fill_pointers", count, self.x_pointers, count, self.x, self.system_bytes)
        self.x_base = None if self.graph_fills else self.x

    def _solve(self, stream) -> None:
        problem, n, nrhs, count = self.problem, self.problem.n, self.problem.nrhs, self.problem.batch_count
        trans = _TRANS[problem.operation]
        if self.in_result:
            self._point_x(stream)
        if problem.structure == "general":
            cublas.getrs_batched(self.handles.cublas(stream), trans, n, nrhs, problem.dtype, self.a_pointers, n,
                                 self.pivots, self.x_pointers, n, count)
        elif problem.structure == "positive definite" and nrhs == 1:
            cusolver.potrs_batched(self.handles.cusolver(stream), _uplo(problem), n, problem.dtype, self.a_pointers, n,
                                   self.x_pointers, n, self.solve_info, count)
        elif problem.structure == "positive definite":
            # A = L Lᴴ: L y = b, then Lᴴ x = y; A = Uᴴ U: Uᴴ y = b, then U x = y
            uplo, handle = _uplo(problem), self.handles.cublas(stream)
            first, second = (cublas.Operation.N, cublas.Operation.C) if uplo == cusolver.FillMode.LOWER \
                else (cublas.Operation.C, cublas.Operation.N)
            for op in (first, second):
                cublas.trsm_batched(handle, _LEFT, uplo, op, _NON_UNIT, n, nrhs, problem.dtype, self.a_pointers, n,
                                    self.x_pointers, n, count)
        else:
            cublas.trsm_batched(self.handles.cublas(stream), _LEFT, _uplo(problem), trans, _NON_UNIT, n, nrhs,
                                problem.dtype, self.a_pointers, n, self.x_pointers, n, count)

    def _release(self) -> None:
        self.handles.release()


def _fused_arguments(problem: SolveProblem, device_id: int) -> tuple:
    """(target, fill mode) of the fused kernels of ``problem`` on a device."""
    from .._codegen.target import Target

    major, minor = ensure_device(device_id).compute_capability
    return Target(major, minor), "lower" if _uplo(problem) == cusolver.FillMode.LOWER else "upper"


def fused_kernels_cached(problem: SolveProblem, check: str, device_id: int) -> bool:
    """Whether the fused kernel ``problem`` needs (the solve's: ``factorize()`` runs it too, for the
    status) is in the disk cache: ``engine="auto"`` takes the fused engine only then (a call never
    waits on code generation it did not ask for; ``engine="fused"`` builds it)."""
    from .._codegen.fused_solver import is_cached

    target, fill_mode = _fused_arguments(problem, device_id)
    return is_cached(problem.structure, problem.n, problem.nrhs, problem.dtype, target, fill_mode)


def load_fused_kernel(problem: SolveProblem, device_id: int):
    """(the linked kernel's launch function, its FusedSolverKernel) for ``problem`` on a device."""
    from cuda.core import LaunchConfig, ObjectCode

    from .._codegen.fused_solver import fused_solver_kernel

    target, fill_mode = _fused_arguments(problem, device_id)
    kernel = fused_solver_kernel(problem.structure, problem.n, problem.nrhs, problem.dtype, target, fill_mode)
    function = ObjectCode.from_cubin(kernel.cubin).get_kernel(kernel.symbol)
    if kernel.shared_memory_size > 48 * 1024:
        cuda_driver.kernel_set_max_dynamic_shared_memory(function.handle, kernel.shared_memory_size, device_id)
    blocks = -(-problem.batch_count // kernel.batches_per_block)
    config = LaunchConfig(grid=blocks, block=kernel.block_dim, shmem_size=kernel.shared_memory_size)

    def run(stream, a: int, b: int, info: int, batches: int) -> None:
        from cuda.core import launch

        from .._codegen.launch import core_stream

        launch(core_stream(stream), config, function, a, b, info, batches)

    return run, kernel


class FusedEngine(GpuSolverState):
    """One generated cuSOLVERDx kernel per solve: every system of the batch factored and solved in
    shared memory, one launch (``gesv_partial_pivot`` or ``posv``); with ``check="raise"``,
    ``factorize()`` runs the same kernel on scratch right-hand sides for the status (the function
    form's call runs it once, for both). ``a`` is expanded to the full batch and copied as
    ``op(a)``, so the kernel solves ``op(a) x = b`` without a transpose of its own."""

    name = "fused"

    def __init__(self, problem: SolveProblem, **kwargs):
        super().__init__(problem, **kwargs)
        self._a_indices = self._a_of_system()
        self.solve_kernel = None
        # factorize()'s status comes from the solve kernel run on scratch right-hand sides
        self.scratch = self._allocate(problem.batch_count * problem.n * problem.nrhs * self.itemsize) \
            if self.raise_singular and not problem.empty else 0
        if problem.empty:
            return
        try:
            self.solve_kernel, _ = load_fused_kernel(problem, self.device_id)
        except OptionsError as error:  # cuSOLVERDx does not take the problem (size, shared memory)
            self.free()
            raise OptionsError("options.engine", f"the fused engine cannot solve this problem ({error})") from None

    @property
    def factor_batch(self) -> tuple:
        return self.problem.batch

    def a_index(self, factor_index: int) -> int:
        return self._a_indices[factor_index]

    def _matrix_view(self, a: Operand) -> tuple:
        row, col, conj = super()._matrix_view(a)
        if self.problem.structure == "general" and self.problem.operation != "N":
            return col, row, self.problem.operation == "C"  # op(a) itself, column-major
        return row, col, conj

    def _factor(self, stream) -> None:
        if self.scratch and self.solve_kernel is not None:
            self.solve_kernel(stream, self.a_work, self.scratch, self.info, self.problem.batch_count)

    def _factor_before_solve(self, stream) -> None:
        """None: the solve kernel factors too, and writes the same status."""

    def _solve(self, stream) -> None:
        if self.solve_kernel is not None:
            self.solve_kernel(stream, self.a_work, self.x, self.info, self.problem.batch_count)


ENGINE_CLASSES = {"cusolver": CusolverEngine, "batched": BatchedEngine, "fused": FusedEngine}
