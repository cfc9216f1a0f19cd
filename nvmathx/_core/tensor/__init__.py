"""Operands: the one package that knows which array library an array came from.

:func:`wrap_operand` views any DLPack, CUDA Array Interface or array-interface object as an
:class:`Operand` (pointer, shape, strides in elements, numpy dtype, device). Each array library has
a small adapter (one module each), found by a lookup cached on ``type(obj)``, that also keys its
arrays for plan caches, allocates results in that library (torch and cupy use their own
allocators; other DLPack producers such as jax get a :class:`DeviceArray` through their
``from_dlpack``) and reports the library's current stream. See :class:`Adapter` for what the hot
paths use.

Sparse matrices (scipy.sparse, cupyx.scipy.sparse, torch sparse tensors) are viewed as a
:class:`SparseOperand` by :func:`wrap_sparse_operand` (CSR, three dense :class:`Operand` arrays, and
the dense library that its results and companion operands belong to).
"""

from ._adapter import Adapter
from ._lookup import (
    adapter_for,
    adapter_named,
    as_array,
    key_function,
    operand_keys,
    resolve_operand,
    wrap_operand,
)
from ._operand import Operand, c_strides, f_strides, may_overlap
from ._sparse import (
    SPARSE_VALUE_DTYPES,
    SparseOperand,
    check_dense_companion,
    is_sparse,
    sparse_package,
    wrap_sparse_operand,
)
from ._transfer import allocate_like, copy_to_host, host_array, in_place_problem, is_read_only, stage_to_device

__all__ = [
    "Adapter",
    "Operand",
    "wrap_operand",
    "resolve_operand",
    "adapter_for",
    "adapter_named",
    "as_array",
    "key_function",
    "operand_keys",
    "c_strides",
    "f_strides",
    "allocate_like",
    "stage_to_device",
    "copy_to_host",
    "host_array",
    "is_read_only",
    "in_place_problem",
    "may_overlap",
    "SparseOperand",
    "wrap_sparse_operand",
    "is_sparse",
    "sparse_package",
    "check_dense_companion",
    "SPARSE_VALUE_DTYPES",
]
