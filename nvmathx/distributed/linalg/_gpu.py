"""The GPU path of the distributed strategy: one ``cublasMpMatmul`` over the ranks' pieces, then the
epilog kernel on this rank's piece, then (for a replicated result) an all-gather of the row blocks
through NCCL. Everything after ``plan()`` is stream-ordered: ``execute()`` allocates the result, calls
cuBLASMp, launches and returns.

The cuBLASMp handle and process grids belong to the distributed context (made once, on every rank
together, and destroyed by :func:`nvmathx.distributed.finalize`); a plan owns its descriptors and
workspace.
"""

from __future__ import annotations

import contextlib

import numpy as np

from ..._core import device
from ..._core.dtypes import numpy_dtype
from ..._core.memory import Workspace
from ._kernels import bias_activation, prepare
from ._layout import cublasmp_call

__all__ = ["CublasMpRunner", "shared_resources"]


class _Shared:
    """The context's cuBLASMp handle and grids (created collectively, released at finalize)."""

    def __init__(self, context):
        self.context = context
        self.handle = None
        self.stream = None  # the handle's current stream
        self.grids = {}

    def handle_on(self, stream_handle: int) -> int:
        from ..._bindings import cublasmp

        if self.handle is None:
            self.handle = cublasmp.create(stream_handle)
            self.stream = stream_handle
        return self.handle

    def use_stream(self, stream_handle: int) -> None:
        if stream_handle != self.stream:
            from ..._bindings import cublasmp

            cublasmp.stream_set(self.handle, stream_handle)
            self.stream = stream_handle

    def grid(self, key) -> int:
        from ..._bindings import cublasmp

        grid = self.grids.get(key)
        if grid is None:
            nprow, npcol, layout, _ = key
            grid = self.grids[key] = cublasmp.grid_create(nprow, npcol, cublasmp.GridLayout[layout],
                                                          self.context.nccl_handle)
        return grid

    def release(self) -> None:
        from ..._bindings import cublasmp

        grids, self.grids = self.grids, {}
        for grid in grids.values():
            cublasmp.grid_destroy(grid)
        if self.handle is not None:
            cublasmp.destroy(self.handle)
        self.handle = None


def shared_resources(context) -> _Shared:
    """The context's cuBLASMp resources (registered for release at finalize on first use)."""
    shared = context.caches.get("cublasmp")
    if shared is None:
        shared = context.caches["cublasmp"] = _Shared(context)
        context.on_finalize(shared.release)
    return shared


class CublasMpRunner:
    """A planned distributed product on this rank.

    Built in two steps so that every rank agrees between them: :meth:`prepare` (local: the handle,
    the epilog kernel) and :meth:`finish` (collective: grids, then descriptors and workspace).
    """

    def __init__(self, problem, context, operands, bias, epilog, alpha, beta, options, stream):
        from ..._matmulcore.epilogs import epilog_spec

        self._problem = problem
        self._context = context
        self._options = options
        self._stream = stream  # a StreamHolder: planning's stream
        self._call = cublasmp_call(problem.layout, problem.rank)
        self._spec = epilog_spec(epilog)
        self._itemsize = numpy_dtype(problem.dtype).itemsize
        self._alpha = np.zeros(1, dtype=problem.scale_dtype)
        self._beta = np.zeros(1, dtype=problem.scale_dtype)
        self._undo = contextlib.ExitStack()
        self._kernel = None
        self._workspace = None
        self.bind(operands, bias, alpha, beta)

    # -- planning -------------------------------------------------------------------------------------

    def prepare(self) -> None:
        """The local steps: the context's handle, the epilog kernel (compiled once per device)."""
        device_id = self._context.device_id
        device.ensure_device(device_id)
        self._shared = shared_resources(self._context)
        self._shared.handle_on(self._stream.handle)
        if self._spec is not None:
            self._kernel = prepare(device_id, self._problem.dtype)

    def finish(self) -> None:
        """The collective steps: the grids (every rank creates the same ones, in the same order),
        then this plan's descriptors, workspace sizes and workspace."""
        from ..._bindings import cublasmp
        from ..._bindings.cublaslt import DTYPE_NAMES

        call, problem = self._call, self._problem
        grids = {key: self._shared.grid(key) for key in call.grid_keys}
        undo = self._undo
        desc = cublasmp.matmul_descriptor_create(cublasmp.ComputeType[f"COMPUTE_{problem.compute_type}"])
        undo.callback(cublasmp.matmul_descriptor_destroy, desc)
        cublasmp.matmul_descriptor_set(desc, cublasmp.MatmulDescAttribute.TRANSA, cublasmp.Operation[call.transa])
        cublasmp.matmul_descriptor_set(desc, cublasmp.MatmulDescAttribute.TRANSB, cublasmp.Operation[call.transb])
        if self._options.algorithm == "no_overlap":
            cublasmp.matmul_descriptor_set(desc, cublasmp.MatmulDescAttribute.ALGO_TYPE, cublasmp.AlgoType.NO_OVERLAP)
        data_type = DTYPE_NAMES[problem.dtype]
        descriptors = []
        for matrix in (call.a, call.b, call.d, call.d):  # cuBLASMp's A, B, C and D
            handle = cublasmp.matrix_descriptor_create(matrix.m, matrix.n, matrix.mb, matrix.nb, matrix.rsrc,
                                                       matrix.csrc, matrix.lld, data_type, grids[matrix.grid_key])
            undo.callback(cublasmp.matrix_descriptor_destroy, handle)
            descriptors.append(handle)
        self._desc, self._descriptors = desc, tuple(descriptors)
        handle = self._shared.handle
        device_bytes, host_bytes = cublasmp.matmul_buffer_size(
            handle, desc, call.m, call.n, call.k, self._alpha.ctypes.data, self._pointers[0], descriptors[0],
            self._pointers[1], descriptors[1], self._beta.ctypes.data, self._pointers[2], descriptors[2], 0,
            descriptors[3])
        self._workspace = Workspace(self._context.device_id, self._options.memory_resource)
        undo.callback(self._workspace.release)
        self._device_bytes = device_bytes
        self._workspace.ensure(device_bytes, self._stream)
        self._host_work = np.empty(max(1, host_bytes), np.uint8)
        self._host_bytes = host_bytes
        shape = (problem.m, problem.n) if problem.layout.gather else problem.result_shape
        self._allocate = self._adapter.result_allocator(shape, problem.dtype, self._context.device_id,
                                                        memory_resource=self._options.memory_resource)

    # -- operands -------------------------------------------------------------------------------------

    def bind(self, operands, bias, alpha, beta) -> None:
        """Use these operands (checked against the plan's), bias, alpha and beta from now on."""
        call, size = self._call, self._itemsize
        a, b, c = operands["a"], operands["b"], operands["c"]
        self._adapter = a.adapter
        self._operands = operands  # keeps the arrays alive while the plan may read them
        c_pointer = c.ptr + call.d.offset * size if c is not None else 0
        self._pointers = (b.ptr + call.a.offset * size, a.ptr + call.b.offset * size, c_pointer)
        self._bias = bias
        self._bias_pointer = bias.ptr if bias is not None else 0
        self._alpha[0] = alpha
        self._beta[0] = beta

    # -- execution ------------------------------------------------------------------------------------

    def execute(self, stream) -> object:
        """Run on ``stream`` (a StreamHolder); the rank's piece of the result (the whole result when it
        is replicated), without synchronising unless ``blocking`` is True."""
        from ..._bindings import cublasmp

        call, problem = self._call, self._problem
        guard = self._context.blas_guard
        guard.check("matmul")
        work = self._workspace.ensure(self._device_bytes, stream)
        result, pointer = self._allocate(stream)
        d_pointer = pointer + call.d.offset * self._itemsize
        self._shared.use_stream(stream.handle)
        a_desc, b_desc, c_desc, d_desc = self._descriptors
        # Without c, C is a null pointer (as nvmath-python passes it): the new result is never read.
        cublasmp.matmul(self._shared.handle, self._desc, call.m, call.n, call.k, self._alpha.ctypes.data,
                        self._pointers[0], a_desc, self._pointers[1], b_desc, self._beta.ctypes.data,
                        self._pointers[2], c_desc, d_pointer, d_desc, work, self._device_bytes,
                        self._host_work.ctypes.data, self._host_bytes)
        guard.watch("matmul", stream.handle)  # cuBLASMp's communication, bounded by the timeout
        if self._kernel is not None:
            self._epilog(stream, d_pointer)
        if problem.layout.gather and problem.world_size > 1:
            self._all_gather(stream, pointer)
        if self._options.blocking is True:
            guard.synchronize("matmul", stream.handle)
            self._context.nccl_guard.check("all_gather")
        return result

    def _epilog(self, stream, d_pointer: int) -> None:
        problem, spec = self._problem, self._spec
        d = problem.layout.d
        rows, cols = d.piece_shape(problem.rank)
        columns = (d.cols.block, d.cols.procs, d.coords(problem.rank)[1])
        bias = self._bias_pointer if spec.bias else 0
        bias_activation(self._kernel, stream, d_pointer, bias, rows, cols, self._call.d.lld, columns, spec.activation)

    def _all_gather(self, stream, pointer: int) -> None:
        """Every rank's row block into every other rank's whole result (NCCL, on ``stream``)."""
        from ..._bindings import nccl

        problem = self._problem
        row_bytes = problem.n * self._itemsize
        guard = self._context.nccl_guard
        rank, comm = problem.rank, guard.comm
        start, stop = problem.layout.gather[rank]

        def enqueue() -> None:
            for peer, (first, last) in enumerate(problem.layout.gather):
                if peer == rank:
                    continue
                if stop > start:
                    nccl.send_bytes(pointer + start * row_bytes, (stop - start) * row_bytes, peer, comm, stream.handle)
                if last > first:
                    nccl.recv_bytes(pointer + first * row_bytes, (last - first) * row_bytes, peer, comm, stream.handle)

        guard.exchange("all_gather", enqueue, stream.handle)

    def free(self) -> None:
        """Release the descriptors and the workspace (ordered after the last use); safe twice."""
        undo, self._undo = self._undo, contextlib.ExitStack()
        undo.close()
        self._operands = self._bias = None
