"""A host stand-in for cuSPARSE's generic API and the device, so the GPU code path of
nvmathx.sparse.matmul runs on a machine without a GPU.

Device pointers are host addresses. ``FakeCusparse`` keeps the descriptors nvmathx creates and, on
``cusparseSpMV`` / ``cusparseSpMM``, computes ``alpha * op(A) @ X + beta * Y`` with numpy from the
memory they describe, as cuSPARSE documents it: zero-based CSR, dense matrices of an order and a
leading dimension, alpha and beta read from host memory in the compute type, Y not read when beta
is 0. It refuses what cuSPARSE refuses (a leading dimension too small, dense arrays not 16-byte
aligned, sizes that do not chain, a compute type that is not the value type or float32 for half
precision, an unknown algorithm),
and it is an independent model of the library: nvmathx's descriptors, orders, scalars and
workspace are checked against it, and the real library by the ``gpu`` tests.
"""

import ctypes
import itertools
import threading

import numpy as np

from linalg._fake_cublaslt import install as install_fake_device
from linalg._fake_cublaslt import view_at
from nvmathx._bindings import cusparse
from nvmathx._core.dtypes import numpy_dtype

__all__ = ["FakeCusparse", "install"]

_DTYPES = {0: "float32", 1: "float64", 2: "float16", 4: "complex64", 5: "complex128", 14: "bfloat16"}
_SCALARS = {0: (ctypes.c_float, 1), 1: (ctypes.c_double, 1), 4: (ctypes.c_float, 2), 5: (ctypes.c_double, 2)}
_INDEX = {2: np.int32, 3: np.int64}


def _invalid(what):
    return cusparse.CusparseError(3, "CUSPARSE_STATUS_INVALID_VALUE", "fake cuSPARSE", what)


class FakeCusparse:
    def __init__(self):
        self.ids = itertools.count(1)
        self.live = {}  # descriptor -> ("csr" | "dnmat" | "dnvec", fields)
        self.calls = []  # (function name, algorithm)
        self.handles = set()

    # -- handles and descriptors ---------------------------------------------------------------

    def create(self):
        handle = next(self.ids)
        self.handles.add(handle)
        return handle

    def destroy(self, handle):
        self.handles.remove(handle)

    def set_stream(self, handle, stream):
        assert handle in self.handles

    def _new(self, kind, **fields):
        desc = next(self.ids)
        self.live[desc] = (kind, fields)
        return desc

    def _destroy(self, desc, kind):
        assert self.live.pop(desc)[0] == kind

    def create_csr(self, rows, cols, nnz, indptr, indices, values, index_type, value_type):
        if min(rows, cols, nnz) < 0 or int(index_type) not in _INDEX or int(value_type) not in _DTYPES:
            raise _invalid(f"csr {rows} x {cols}, nnz {nnz}, types {index_type}, {value_type}")
        return self._new("csr", rows=rows, cols=cols, nnz=nnz, indptr=indptr, indices=indices, values=values,
                         index=_INDEX[int(index_type)], dtype=_DTYPES[int(value_type)])

    def destroy_sp_mat(self, desc):
        self._destroy(desc, "csr")

    def csr_set_pointers(self, desc, indptr, indices, values):
        self.live[desc][1].update(indptr=indptr, indices=indices, values=values)

    @staticmethod
    def _aligned(pointer):
        if pointer % 16:
            raise _invalid(f"values at {pointer:#x}: not 16-byte aligned")

    def create_dn_mat(self, rows, cols, ld, values, value_type, order):
        self._aligned(values)
        order = int(order)
        if order not in (1, 2) or ld < (cols if order == 2 else rows) or ld < 1:
            raise _invalid(f"dense {rows} x {cols}, ld {ld}, order {order}")
        return self._new("dnmat", rows=rows, cols=cols, ld=ld, values=values, dtype=_DTYPES[int(value_type)],
                         order=order)

    def destroy_dn_mat(self, desc):
        self._destroy(desc, "dnmat")

    def dn_mat_set_values(self, desc, values):
        self._aligned(values)
        self.live[desc][1]["values"] = values

    def create_dn_vec(self, size, values, value_type):
        self._aligned(values)
        return self._new("dnvec", size=size, values=values, dtype=_DTYPES[int(value_type)])

    def destroy_dn_vec(self, desc):
        self._destroy(desc, "dnvec")

    def dn_vec_set_values(self, desc, values):
        self._aligned(values)
        self.live[desc][1]["values"] = values

    # -- reading what descriptors describe -----------------------------------------------------

    def _csr(self, desc):
        kind, f = self.live[desc]
        assert kind == "csr"
        rows, cols, nnz = f["rows"], f["cols"], f["nnz"]
        indptr = view_at(f["indptr"], (rows + 1,), (1,), f["index"]).astype(np.int64)
        indices = view_at(f["indices"], (nnz,), (1,), f["index"]).astype(np.int64)
        values = view_at(f["values"], (nnz,), (1,), numpy_dtype(f["dtype"]))
        if indptr[0] != 0 or indptr[-1] != nnz or np.any(np.diff(indptr) < 0) or np.any(indices >= cols):
            raise _invalid("a CSR matrix whose arrays are not a zero-based CSR matrix")
        dense = np.zeros((rows, cols), np.complex128)
        np.add.at(dense, (np.repeat(np.arange(rows), np.diff(indptr)), indices), values.astype(np.complex128))
        return dense, f["dtype"]

    def _dense(self, desc):
        """(a writable view, dtype name, order or None for a vector)."""
        kind, f = self.live[desc]
        dtype = numpy_dtype(f["dtype"])
        if kind == "dnvec":
            return view_at(f["values"], (f["size"],), (1,), dtype), f["dtype"], None
        strides = (f["ld"], 1) if f["order"] == 2 else (1, f["ld"])
        return view_at(f["values"], (f["rows"], f["cols"]), strides, dtype), f["dtype"], f["order"]

    def _scalar(self, pointer, compute):
        ctype, count = _SCALARS[compute]
        parts = (ctype * count).from_address(pointer)
        return complex(parts[0], parts[1]) if count == 2 else float(parts[0])

    def _product(self, op, alpha, mat_a, x, beta, y, compute, buffer, size, vector):
        dense, a_dtype = self._csr(mat_a)
        x_view, x_dtype, x_order = self._dense(x)
        y_view, y_dtype, y_order = self._dense(y)
        if len({a_dtype, x_dtype, y_dtype}) != 1 or x_order != y_order:
            raise _invalid(f"types {a_dtype}, {x_dtype}, {y_dtype} / orders {x_order}, {y_order}")
        wanted = "float32" if a_dtype in ("float16", "bfloat16") else a_dtype
        if _DTYPES.get(int(compute)) != wanted:
            raise _invalid(f"compute type {compute} for values of {a_dtype}")
        if size and not buffer:
            raise _invalid("no workspace")
        op = int(op)
        matrix = {0: dense, 1: dense.T, 2: dense.conj().T}[op]
        if matrix.shape[1] != x_view.shape[0] or matrix.shape[0] != y_view.shape[0]:
            raise _invalid(f"op(A) {matrix.shape}, X {x_view.shape}, Y {y_view.shape}")
        if not vector and x_view.shape[1] != y_view.shape[1]:
            raise _invalid(f"B {x_view.shape}, C {y_view.shape}")
        alpha, beta = self._scalar(alpha, int(compute)), self._scalar(beta, int(compute))
        result = alpha * (matrix @ x_view.astype(np.complex128))
        if beta != 0:
            result = result + beta * y_view.astype(np.complex128)
        y_view[...] = (result if y_view.dtype.kind == "c" else result.real).astype(y_view.dtype)

    # -- SpMV and SpMM ------------------------------------------------------------------------

    def spmv_buffer_size(self, handle, op, alpha, mat_a, x, beta, y, compute, alg):
        if int(alg) not in (0, 2, 3):
            raise _invalid(f"SpMV algorithm {alg}")
        return 64

    def spmv(self, handle, op, alpha, mat_a, x, beta, y, compute, alg, buffer):
        self.calls.append(("spmv", int(alg)))
        self._product(op, alpha, mat_a, x, beta, y, compute, buffer, 64, True)

    def spmm_buffer_size(self, handle, op_a, op_b, alpha, mat_a, b, beta, c, compute, alg):
        if int(alg) not in (0, 4, 6, 12) or int(op_b) != 0:
            raise _invalid(f"SpMM algorithm {alg}, opB {op_b}")
        return 128

    def spmm_preprocess(self, handle, op_a, op_b, alpha, mat_a, b, beta, c, compute, alg, buffer):
        self.calls.append(("spmm_preprocess", int(alg)))
        if not buffer:
            raise _invalid("no workspace")

    def spmm(self, handle, op_a, op_b, alpha, mat_a, b, beta, c, compute, alg, buffer):
        self.calls.append(("spmm", int(alg)))
        self._product(op_a, alpha, mat_a, b, beta, c, compute, buffer, 128, False)


    def spmv_prepared(self, *args):
        return lambda: self.spmv(*args)

    def spmm_prepared(self, *args):
        return lambda: self.spmm(*args)


def install(monkeypatch):
    """Swap cuSPARSE and the device for host fakes (the device's as tests/linalg/_fake_cublaslt.py
    fakes it for cuBLASLt); returns (fake cuSPARSE, default memory resource)."""
    from nvmathx.sparse import _cusparse_plan, plan_cache

    _, resource = install_fake_device(monkeypatch)
    fake = FakeCusparse()
    for name in ("create", "destroy", "set_stream", "create_csr", "destroy_sp_mat", "csr_set_pointers",
                 "create_dn_mat", "destroy_dn_mat", "dn_mat_set_values", "create_dn_vec", "destroy_dn_vec",
                 "dn_vec_set_values", "spmv_buffer_size", "spmv", "spmm_buffer_size", "spmm_preprocess", "spmm",
                 "spmv_prepared", "spmm_prepared"):
        monkeypatch.setattr(cusparse, name, getattr(fake, name))
    monkeypatch.setattr(_cusparse_plan, "_handles", threading.local())
    plan_cache.clear()
    return fake, resource
