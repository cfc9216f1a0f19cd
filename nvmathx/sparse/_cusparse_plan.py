"""A planned sparse @ dense product on cuSPARSE: descriptors, algorithm and workspace made once, then
:meth:`CusparsePlan.run` per execution.

``run()`` makes these calls and nothing else: allocate the result (the operand library's
stream-ordered allocator), copy ``c`` into it (when ``beta`` is nonzero), ``cusparseSetStream``
(when the stream changed), ``cusparseDnMatSetValues`` / ``cusparseDnVecSetValues`` (when the result
is not where the last one was: a caching allocator mostly hands back the same block), then
``cusparseSpMM`` or ``cusparseSpMV`` (its arguments bound at planning). Nothing synchronises, so a
CUDA graph captures it.

A product that is exactly zero (no stored entry, or a contracted extent of 0) runs as a product of an
``m x 1`` matrix without entries and a zero ``b`` of one row, which cuSPARSE turns into ``beta * c``
(or zeros): one code path, still capturable. A result without elements makes no call at all.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any

import numpy as np

from .._bindings import cuda_driver, cusparse
from .._core import device
from .._core.errors import OptionsError
from .._core.memory import Workspace
from .._core.tensor import Operand, SparseOperand, c_strides, f_strides
from ._problem import SparseMatmulProblem, dense_layout

__all__ = ["CusparsePlan", "result_strides"]

_ORDERS = {"row": cusparse.Order.ROW, "col": cusparse.Order.COL}
_SCALAR_TYPES = {"float32": ctypes.c_float * 1, "float64": ctypes.c_double * 1, "complex64": ctypes.c_float * 2,
                 "complex128": ctypes.c_double * 2}
_handles = threading.local()


def _handle(device_id: int) -> int:
    """This thread's cuSPARSE handle on a device (made once, kept for the process)."""
    handles = getattr(_handles, "handles", None)
    if handles is None:
        handles = _handles.handles = {}
    handle = handles.get(device_id)
    if handle is None:
        device.ensure_device(device_id)
        handle = handles[device_id] = cusparse.create()
    return handle


def _bind_stream(handle: int, stream_handle: int) -> None:
    """Point this thread's handle at ``stream_handle``, with a library call only when it changes
    (the handle is this module's alone, so the last stream set is known)."""
    streams = getattr(_handles, "streams", None)
    if streams is None:
        streams = _handles.streams = {}
    if streams.get(handle) != stream_handle:
        cusparse.set_stream(handle, stream_handle)
        streams[handle] = stream_handle


def _store_scalar(buffer: Any, value, dtype: str) -> None:
    """Write ``value`` into a host buffer of the compute dtype (cuSPARSE reads alpha and beta there,
    at each call)."""
    if dtype.startswith("complex"):
        value = complex(value)
        buffer[0], buffer[1] = value.real, value.imag
    else:
        buffer[0] = float(np.real(value))


def result_strides(problem: SparseMatmulProblem, b: Operand) -> tuple:
    """The result's strides (in elements): C order, or Fortran order when ``b`` is column-major
    (cuSPARSE takes ``b`` and the result in one order)."""
    if problem.is_vector:
        return (1,)
    order, _ = dense_layout(tuple(b.shape), tuple(b.strides), "b")
    shape = problem.result_shape
    return c_strides(shape) if order == "row" else f_strides(shape)


def _algorithm(name: str, problem: SparseMatmulProblem) -> int:
    enum = cusparse.SpMVAlg if problem.is_vector else cusparse.SpMMAlg
    member = getattr(enum, name.upper(), None)
    if member is None:
        raise OptionsError("options.algorithm", f"{name!r} is not an algorithm of sparse @ vector (SpMV): "
                                                f"use 'default', 'csr_alg1' or 'csr_alg2'")
    return int(member)


class CusparsePlan:
    """cuSPARSE descriptors, scalars, algorithm and workspace of one problem on one device.

    ``allocate(stream)`` makes each result (``(array, pointer)``, the operand library's allocator).
    """

    def __init__(self, problem: SparseMatmulProblem, a: SparseOperand, b: Operand, c: Operand | None, alpha, beta,
                 *, algorithm: str, allocate, stream, memory_resource=None, preprocess: bool = True):
        self.problem = problem
        self.device_id = a.device_id
        self.allocate = allocate
        self.algorithm = _algorithm(algorithm, problem)
        self.dtype = cusparse.DTYPE_NAMES[problem.dtype]
        self.compute = cusparse.DTYPE_NAMES[problem.compute_dtype]
        self.result_nbytes = int(np.prod(problem.result_shape)) * a.dtype.itemsize
        self.workspace = Workspace(self.device_id, memory_resource)
        self.scratch = Workspace(self.device_id, memory_resource)
        self.descriptors: list[tuple] = []  # (destroy function, descriptor)
        self.pending = None  # the result the descriptors were made with, handed out by the first run()
        self.c_ptr = c.ptr if c is not None else 0
        compute_buffer: Any = _SCALAR_TYPES[problem.compute_dtype]
        self.alpha, self.beta = compute_buffer(), compute_buffer()
        self.alpha_ptr, self.beta_ptr = ctypes.addressof(self.alpha), ctypes.addressof(self.beta)
        self.set_scalars(alpha, beta)
        if problem.is_empty:
            self.handle = 0
            return
        self.handle = _handle(self.device_id)
        try:
            self._make(a, b, stream, preprocess)
        except BaseException:
            self.free()
            raise

    def set_scalars(self, alpha, beta) -> None:
        """New alpha and beta, written where the prepared call reads them."""
        compute = self.problem.compute_dtype
        _store_scalar(self.alpha, alpha, compute)
        _store_scalar(self.beta, beta, compute)
        self.copy_c = self.problem.has_c and beta != 0

    # -- descriptors ---------------------------------------------------------------------------

    def _keep(self, destroy, descriptor: int) -> int:
        self.descriptors.append((destroy, descriptor))
        return descriptor

    def _make(self, a: SparseOperand, b: Operand, stream, preprocess: bool) -> None:
        problem = self.problem
        _bind_stream(self.handle, stream.handle)
        self.op = cusparse.Operation.TRANSPOSE if problem.transpose else cusparse.Operation.NON_TRANSPOSE
        index_type = cusparse.INDEX_TYPES[problem.index_dtype]
        order, ld = dense_layout(tuple(b.shape), tuple(b.strides), "b")
        result, ptr = self.pending = self.allocate(stream)
        if problem.is_zero_product:
            # An m x 1 matrix without entries times a zero row: the product is 0, the result beta * c.
            m, n = problem.m, problem.n or 1
            nbytes = max((m + 1) * a.index_dtype.itemsize, n * a.dtype.itemsize, 16)
            zeros = self.scratch.ensure(nbytes, stream)
            cuda_driver.memset_async(zeros, 0, nbytes, stream.handle)
            self.op = cusparse.Operation.NON_TRANSPOSE
            self.mat_a = self._keep(cusparse.destroy_sp_mat,
                                    cusparse.create_csr(m, 1, 0, zeros, zeros, zeros, index_type, self.dtype))
            self.mat_b = self._dense((1, n), order, 1 if order == "col" else n, zeros)
        else:
            self.mat_a = self._keep(cusparse.destroy_sp_mat, cusparse.create_csr(
                a.shape[0], a.shape[1], a.nnz, *a.pointers, index_type, self.dtype))
            self.mat_b = self._dense(tuple(b.shape), order, ld, b.ptr)
            self.a_pointers, self.b_values = a.pointers, b.ptr  # where mat_a and mat_b point
        m, n = problem.m, problem.n or 1
        self.mat_c = self._dense(problem.result_shape, order, max(m if order == "col" else n, 1), ptr)
        self.c_values = ptr  # where mat_c points
        self._size_workspace(stream, preprocess)

    def _dense(self, shape: tuple, order: str, ld: int, ptr: int) -> int:
        if order == "vector":
            return self._keep(cusparse.destroy_dn_vec, cusparse.create_dn_vec(shape[-1], ptr, self.dtype))
        return self._keep(cusparse.destroy_dn_mat, cusparse.create_dn_mat(shape[0], shape[1], ld, ptr, self.dtype,
                                                                          _ORDERS[order]))

    def _size_workspace(self, stream, preprocess: bool) -> None:
        args = (self.alpha_ptr, self.mat_a, self.mat_b, self.beta_ptr, self.mat_c, self.compute, self.algorithm)
        if self.problem.is_vector:
            nbytes = cusparse.spmv_buffer_size(self.handle, self.op, *args)
        else:
            nbytes = cusparse.spmm_buffer_size(self.handle, self.op, cusparse.Operation.NON_TRANSPOSE, *args)
        self.buffer = self.workspace.ensure(nbytes, stream)
        self.workspace_bytes = nbytes
        if preprocess and not self.problem.is_vector:
            cusparse.spmm_preprocess(self.handle, self.op, cusparse.Operation.NON_TRANSPOSE, *args, self.buffer)
        self._prepare_product()

    def _prepare_product(self) -> None:
        """The SpMV / SpMM call of every run, its arguments bound once (the descriptors, the scalars'
        buffers and the workspace stay where they are; only the result's address changes, in its
        descriptor)."""
        args = (self.alpha_ptr, self.mat_a, self.mat_b, self.beta_ptr, self.mat_c, self.compute, self.algorithm,
                self.buffer)
        if self.problem.is_vector:
            self.product = cusparse.spmv_prepared(self.handle, self.op, *args)
        else:
            self.product = cusparse.spmm_prepared(self.handle, self.op, cusparse.Operation.NON_TRANSPOSE, *args)

    # -- new operands --------------------------------------------------------------------------

    # (a descriptor is told only of addresses that changed: the function form rebinds every call,
    # mostly to the arrays of the call before)

    def set_a(self, a: SparseOperand) -> None:
        if self.handle and not self.problem.is_zero_product and a.pointers != self.a_pointers:
            cusparse.csr_set_pointers(self.mat_a, *a.pointers)
            self.a_pointers = a.pointers

    def set_b(self, b: Operand) -> None:
        if self.handle and not self.problem.is_zero_product and b.ptr != self.b_values:
            setter = cusparse.dn_vec_set_values if self.problem.is_vector else cusparse.dn_mat_set_values
            setter(self.mat_b, b.ptr)
            self.b_values = b.ptr

    def set_c(self, c: Operand) -> None:
        self.c_ptr = c.ptr

    # -- execution -----------------------------------------------------------------------------

    def run(self, stream):
        """The result array, computed on ``stream`` (a StreamHolder)."""
        pending = self.pending
        if pending is not None:
            self.pending = None
            result, ptr = pending
        else:
            result, ptr = self.allocate(stream)
        if self.copy_c and self.result_nbytes:
            cuda_driver.memcpy_async(ptr, self.c_ptr, self.result_nbytes, stream.handle)
        if not self.handle:
            return result
        _bind_stream(self.handle, stream.handle)
        if ptr != self.c_values:
            set_values = cusparse.dn_vec_set_values if self.problem.is_vector else cusparse.dn_mat_set_values
            set_values(self.mat_c, ptr)
            self.c_values = ptr
        self.product()  # cusparseSpMV or cusparseSpMM
        return result

    def free(self) -> None:
        descriptors, self.descriptors = self.descriptors, []
        for destroy, descriptor in reversed(descriptors):
            destroy(descriptor)
        self.pending = None
        self.workspace.release()
        self.scratch.release()
