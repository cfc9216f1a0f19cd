"""Sparse operands: CSR matrices from scipy.sparse, cupyx.scipy.sparse and torch, viewed alike.

:func:`wrap_sparse_operand` views a sparse matrix as a :class:`SparseOperand`: its shape, number of
stored entries, value and index dtypes, device, and its three CSR arrays (row offsets, column
indices, values) as dense :class:`Operand` views in the dense kind of the matrix's library (numpy
for scipy, cupy for cupyx, torch for torch). This module is the only one that knows which library a
sparse matrix came from; the ``sparse`` area works on :class:`SparseOperand` alone.

What it guarantees to every consumer (sparse @ dense, the direct solver):

- the format is CSR, zero-based, with row offsets and column indices of one dtype, int32 or int64
  (where a matrix holds one of each, the int32 array is widened to int64: one copy of it);
- CSC and COO matrices are converted to CSR with one copy (the library's own ``tocsr()`` /
  ``to_sparse_csr()``), recorded in ``converted_from``;
- the column indices are sorted within each row and hold no duplicates (scipy's *canonical format*):
  a matrix that is not canonical is handled as scipy handles it, by a copy in which duplicate
  entries are summed and columns are sorted (``sum_duplicates()``), recorded in ``canonicalized``;
- the three arrays are contiguous and live on ``device_id`` (-1 for host memory).
"""

from __future__ import annotations

import weakref

import numpy as np

from ..errors import OperandError, UnsupportedOperandError
from ._adapter import Adapter
from ._lookup import adapter_named, wrap_operand
from ._operand import Operand
from ._transfer import host_array, stage_to_device

__all__ = ["SparseOperand", "is_sparse", "sparse_package", "wrap_sparse_operand", "check_dense_companion",
           "SPARSE_VALUE_DTYPES"]

SPARSE_VALUE_DTYPES = ("float16", "bfloat16", "float32", "float64", "complex64", "complex128")
"""Value dtypes a sparse operand may hold (scipy.sparse itself holds no float16 or bfloat16)."""

_INDEX_DTYPES = (np.dtype(np.int32), np.dtype(np.int64))
_DENSE_LIBRARY = {"scipy": "numpy", "cupy": "cupy", "torch": "torch"}
_value_dtypes_seen: dict[np.dtype, bool] = {}
_LIBRARY_NAMES = {"scipy": "a scipy.sparse matrix", "cupy": "a cupyx.scipy.sparse matrix",
                  "torch": "a torch sparse tensor"}
_TORCH_LAYOUTS = {"sparse_csr": "csr", "sparse_csc": "csc", "sparse_coo": "coo"}


class SparseOperand:
    """A CSR matrix: its size, dtypes, device and three arrays, whatever library it came from.

    Attributes
    ----------
    obj : object
        The matrix as the caller passed it.
    package : str
        The library of the matrix: ``"scipy"``, ``"cupy"`` or ``"torch"``.
    format : str
        Always ``"csr"`` (see ``converted_from``).
    shape : tuple of int
        ``(rows, columns)``.
    nnz : int
        The number of stored entries.
    dtype, index_dtype : numpy.dtype
        The values' dtype (one of :data:`SPARSE_VALUE_DTYPES`) and the indices' (int32 or int64).
    device_id : int
        CUDA device ordinal of the three arrays, or -1 for host memory.
    indptr, indices, values : Operand
        Row offsets (``rows + 1``), column indices (``nnz``) and values (``nnz``): contiguous 1-D
        dense views. They are arrays of the dense library (:attr:`dense_package`), or nvmathx
        DeviceArrays after :meth:`to_device`.
    dense_adapter : Adapter
        The adapter of the matrix's dense library: ``dense_adapter.empty(shape, dtype, device_id,
        stream)`` makes results of that kind (see :meth:`empty_dense`).
    converted_from : str or None
        ``"csc"`` or ``"coo"`` when the matrix was converted to CSR (one copy), else None.
    canonicalized : bool
        Whether duplicates were summed and columns sorted in a copy (the matrix was not canonical).
    """

    format = "csr"
    __slots__ = ("obj", "package", "shape", "nnz", "dtype", "index_dtype", "device_id", "indptr", "indices",
                 "values", "dense_adapter", "converted_from", "canonicalized")

    def __init__(self, obj, package, shape, indptr: Operand, indices: Operand, values: Operand,
                 dense_adapter: Adapter, converted_from=None, canonicalized=False):
        self.obj = obj
        self.package = package
        self.shape = (int(shape[0]), int(shape[1]))
        self.indptr, self.indices, self.values = indptr, indices, values
        self.nnz = int(values.shape[0])
        self.dtype = values.dtype
        self.index_dtype = indices.dtype
        self.device_id = values.device_id
        self.dense_adapter = dense_adapter
        self.converted_from = converted_from
        self.canonicalized = canonicalized

    @property
    def is_device(self) -> bool:
        return self.device_id >= 0

    @property
    def dense_package(self) -> str:
        """The dense library of results and companion operands: ``"numpy"``, ``"cupy"`` or ``"torch"``."""
        return _DENSE_LIBRARY[self.package]

    @property
    def pointers(self) -> tuple[int, int, int]:
        """``(indptr, indices, values)`` addresses."""
        return self.indptr.ptr, self.indices.ptr, self.values.ptr

    def key(self) -> tuple:
        """What a plan for this matrix depends on (everything but the addresses and values)."""
        return (self.package, self.shape, self.nnz, self.dtype.str, self.index_dtype.str, self.device_id)

    def describe(self) -> str:
        """``"a torch sparse tensor"``-style name of the matrix's kind, for messages."""
        return _LIBRARY_NAMES[self.package]

    def same_pattern(self, other: SparseOperand) -> bool:
        """Whether ``other`` has this matrix's shape, index dtype and sparsity pattern (the row offsets
        and column indices compare equal; arrays at the same addresses are taken as equal)."""
        if (self.shape, self.nnz, self.index_dtype, self.device_id) != (other.shape, other.nnz, other.index_dtype,
                                                                        other.device_id):
            return False
        if self.pointers[:2] == other.pointers[:2]:
            return True
        return _arrays_equal(self.indptr, other.indptr) and _arrays_equal(self.indices, other.indices)

    def host_csr(self):
        """A ``scipy.sparse.csr_array`` sharing this host matrix's memory (for the CPU space)."""
        import scipy.sparse

        if self.is_device:
            raise OperandError("a", f"lives on GPU {self.device_id}, not in host memory")
        arrays = (host_array(self.values), host_array(self.indices), host_array(self.indptr))
        return scipy.sparse.csr_array(arrays, shape=self.shape, copy=False)

    def to_device(self, device_id: int, stream, memory_resource=None) -> SparseOperand:
        """A copy of this host matrix on ``device_id`` (three copies ordered on ``stream``, a
        StreamHolder); the copy keeps ``package`` and ``dense_adapter``, so results still come back
        as the matrix's own dense kind (copied to the host)."""
        indptr, indices, values = (stage_to_device(array, device_id, stream, memory_resource)
                                   for array in (self.indptr, self.indices, self.values))
        return SparseOperand(self.obj, self.package, self.shape, indptr, indices, values, self.dense_adapter,
                             self.converted_from, self.canonicalized)

    def empty_dense(self, shape, dtype, stream=None, device_id=None):
        """A new dense array of the matrix's library (on the matrix's device unless ``device_id``
        says otherwise; -1 is host memory)."""
        device_id = self.device_id if device_id is None else device_id
        return self.dense_adapter.empty(tuple(shape), dtype, device_id, stream)

    def __repr__(self):
        return (f"SparseOperand({self.package}, csr, shape={self.shape}, nnz={self.nnz}, dtype={self.dtype}, "
                f"index_dtype={self.index_dtype}, device_id={self.device_id})")


def sparse_package(obj) -> str | None:
    """``"scipy"``, ``"cupy"`` or ``"torch"`` for a sparse matrix of that library, else None."""
    module = type(obj).__module__
    if module.startswith("scipy.sparse"):
        return "scipy" if hasattr(obj, "format") else None
    if module.startswith("cupyx.scipy.sparse"):
        return "cupy" if hasattr(obj, "format") else None
    if module == "torch" and str(getattr(obj, "layout", "")).rpartition(".")[2] in _TORCH_LAYOUTS:
        return "torch"
    return None


def is_sparse(obj) -> bool:
    """Whether ``obj`` is a sparse matrix of scipy.sparse, cupyx.scipy.sparse or torch."""
    return sparse_package(obj) is not None


def wrap_sparse_operand(obj, argument: str) -> SparseOperand:
    """View a sparse matrix as a :class:`SparseOperand` (see the module's guarantees).

    Raises
    ------
    UnsupportedOperandError
        ``obj`` is no sparse matrix of scipy.sparse, cupyx.scipy.sparse or torch; or its format
        (other than CSR, CSC, COO), its value dtype or its index dtype is not supported; or a torch
        tensor is batched or hybrid. The message starts with ``argument``.
    """
    package = sparse_package(obj)
    if package is None:
        raise UnsupportedOperandError(
            argument, f"expected a sparse matrix (scipy.sparse, cupyx.scipy.sparse or a torch sparse tensor) in CSR, "
                      f"CSC or COO format (got {type(obj).__module__}.{type(obj).__name__})")
    csr, converted_from = _as_csr(obj, package, argument)
    indptr_obj, indices_obj, values_obj = _csr_arrays(csr, package)
    adapter = adapter_named(_DENSE_LIBRARY[package])
    values = wrap_operand(values_obj, argument)
    if not _supported_values(values.dtype):
        raise UnsupportedOperandError(argument, f"values of dtype {values.dtype.name} are not supported "
                                                f"(expected {', '.join(SPARSE_VALUE_DTYPES)})")
    indptr, indices = wrap_operand(indptr_obj, argument), wrap_operand(indices_obj, argument)
    for array in (indptr, indices):
        if array.dtype not in _INDEX_DTYPES:
            raise UnsupportedOperandError(argument, f"indices of dtype {array.dtype} are not supported "
                                                    f"(expected int32 or int64)")
    if indptr.dtype != indices.dtype:  # widen the int32 one: cuSPARSE and cuDSS take one index type
        indptr, indices = (_widened(array, adapter, argument) for array in (indptr, indices))
    if not values.is_c_contiguous():
        values = adapter.view(_contiguous(values.obj, package), argument)
    operand = SparseOperand(obj, package, tuple(csr.shape), indptr, indices, values, adapter, converted_from)
    if not _is_canonical(csr, operand):
        operand = wrap_sparse_operand(_canonical_copy(csr, package), argument)
        operand.obj, operand.converted_from, operand.canonicalized = obj, converted_from, True
    return operand


def check_dense_companion(sparse: SparseOperand, operand: Operand, argument: str, sparse_argument: str = "a"):
    """Raise unless a dense operand belongs with ``sparse``: the same library's dense kind, on the
    same device. ``argument`` names the dense operand, ``sparse_argument`` the sparse one."""
    expected = sparse.dense_package
    if operand.package != expected:
        raise UnsupportedOperandError(
            argument, f"is a {operand.package} array but {sparse_argument} is {sparse.describe()}: pass a "
                      f"{expected} array (the dense kind of {sparse_argument}'s library)")
    if operand.device_id != sparse.device_id:
        where = lambda device_id: f"GPU {device_id}" if device_id >= 0 else "host memory"  # noqa: E731
        raise OperandError(argument, f"lives in {where(operand.device_id)} but {sparse_argument} lives in "
                                     f"{where(sparse.device_id)}")


def _as_csr(obj, package: str, argument: str):
    """``(csr_matrix, converted_from)``: CSR as it is, CSC and COO converted with one copy."""
    if package == "torch":
        layout = _TORCH_LAYOUTS[str(obj.layout).rpartition(".")[2]]
        dense_dims = obj.dense_dim()
        if obj.dim() != 2 or dense_dims:
            raise UnsupportedOperandError(argument, f"expected a 2-D torch sparse tensor without dense dimensions "
                                                    f"(got {obj.dim()}-D with {dense_dims} dense)")
        return (obj, None) if layout == "csr" else (obj.to_sparse_csr(), layout)
    layout = obj.format
    if layout not in ("csr", "csc", "coo"):
        raise UnsupportedOperandError(argument, f"{layout.upper()} matrices are not supported: convert to CSR "
                                                f"with .tocsr()")
    if len(obj.shape) != 2:
        raise UnsupportedOperandError(argument, f"expected a 2-D sparse matrix (got shape {tuple(obj.shape)})")
    return (obj, None) if layout == "csr" else (obj.tocsr(), layout)


def _csr_arrays(csr, package: str) -> tuple:
    if package == "torch":
        return csr.crow_indices(), csr.col_indices(), csr.values()
    return csr.indptr, csr.indices, csr.data


def _supported_values(dtype: np.dtype) -> bool:
    # (a dtype's name is built at each access: a few microseconds a call, so the answer is kept)
    supported = _value_dtypes_seen.get(dtype)
    if supported is None:
        supported = _value_dtypes_seen[dtype] = dtype.name in SPARSE_VALUE_DTYPES
    return supported


def _contiguous(obj, package: str):
    if package == "torch":
        return obj.contiguous()
    return obj.copy()  # numpy and cupy copy in C order


def _widened(array: Operand, adapter: Adapter, argument: str) -> Operand:
    if array.dtype == np.int64:
        return array
    obj = array.obj
    widened = obj.long() if adapter.name == "torch" else obj.astype(np.int64)
    return adapter.view(widened, argument)


# id(torch CSR tensor) -> (weak reference to it, the state of its index arrays, the answer)
_torch_canonical: dict[int, tuple] = {}


def _is_canonical(csr, operand: SparseOperand) -> bool:
    """Sorted columns within each row and no duplicates. scipy and cupy cache this answer on the
    matrix; torch's is computed: ``row * columns + column`` must increase strictly along the stored
    entries (with numpy on the host; on a device, three element-wise kernels and one synchronisation),
    then kept for that tensor until its index arrays change (their addresses or torch's version
    counters, which every in-place write bumps)."""
    if operand.nnz <= 1:
        return True
    if operand.package != "torch":
        return bool(csr.has_canonical_format)
    crow, col = csr.crow_indices(), csr.col_indices()
    state = (crow.data_ptr(), col.data_ptr(), crow._version, col._version)
    known = _torch_canonical.get(id(csr))
    if known is not None and known[0]() is csr and known[1] == state:
        return known[2]
    answer = _torch_is_canonical(csr, operand)
    if len(_torch_canonical) >= 1024:  # tensors that died leave entries behind: start afresh
        _torch_canonical.clear()
    _torch_canonical[id(csr)] = (weakref.ref(csr), state, answer)
    return answer


def _torch_is_canonical(csr, operand: SparseOperand) -> bool:
    rows, columns = operand.shape
    if not operand.is_device:
        indptr = np.asarray(host_array(operand.indptr), dtype=np.int64)
        counts = indptr[1:] - indptr[:-1]
        keys = np.repeat(np.arange(rows, dtype=np.int64), counts) * columns + host_array(operand.indices)
        return bool(np.all(keys[1:] > keys[:-1]))
    import torch

    crow, col = csr.crow_indices(), csr.col_indices()
    row_ids = torch.repeat_interleave(torch.arange(rows, device=crow.device), torch.diff(crow.to(torch.int64)),
                                      output_size=operand.nnz)  # (output_size: no synchronisation here)
    keys = row_ids * columns + col.to(torch.int64)
    return bool((keys[1:] > keys[:-1]).all())


def _canonical_copy(csr, package: str):
    """A copy of a CSR matrix with duplicates summed and columns sorted (scipy's sum_duplicates)."""
    if package != "torch":
        copy = csr.copy()
        copy.sum_duplicates()
        if copy.indices.dtype != csr.indices.dtype:  # scipy narrows indices where they fit
            copy.indptr, copy.indices = copy.indptr.astype(csr.indptr.dtype), copy.indices.astype(csr.indices.dtype)
        return copy
    import torch

    crow, col = csr.crow_indices(), csr.col_indices()
    rows = torch.repeat_interleave(torch.arange(csr.shape[0], device=crow.device), torch.diff(crow.to(torch.int64)))
    coo = torch.sparse_coo_tensor(torch.stack([rows, col.to(torch.int64)]), csr.values(), csr.shape).coalesce()
    result = coo.to_sparse_csr()
    if crow.dtype == torch.int32:
        result = torch.sparse_csr_tensor(result.crow_indices().to(torch.int32), result.col_indices().to(torch.int32),
                                         result.values(), csr.shape)
    return result


def _arrays_equal(first: Operand, second: Operand) -> bool:
    """Element-wise equality of two index arrays of one library and device."""
    if first.device_id < 0 and second.device_id < 0:
        return bool(np.array_equal(host_array(first), host_array(second)))
    a, b = first.obj, second.obj
    if first.package == "torch":
        return bool(a.equal(b))
    return bool((a == b).all())
