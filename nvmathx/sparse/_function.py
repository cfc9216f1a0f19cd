"""The function form: sparse.matmul(a, b, ...) looks its plan up in a per-device LRU cache and runs it."""

from __future__ import annotations

from typing import overload

import numpy as np

from .._core.execution import normalize_execution
from .._core.options import check_or_create_options
from .._core.plan_cache import PlanCache
from .._core.tensor import as_array, key_function, operand_keys, wrap_sparse_operand
from ..typing import (
    AnyArray,
    ArrayLike,
    ArrayT,
    ExecutionLike,
    HostArrayLike,
    NumpyArrayT,
    OptionsLike,
    SparseArrayLike,
    StreamLike,
)
from ._matmul import Matmul, rebind_call, release_call, wrap_dense
from ._options import MatmulOptions
from ._problem import check_transpose

__all__ = ["matmul", "plan_key", "plan_cache"]

plan_cache = PlanCache("nvmathx.sparse", max_size=64, max_memory_bytes=1 << 30)
"""The per-device LRU cache of cuSPARSE plans used by :func:`matmul` (``info()``, ``clear()``,
``set_limits(max_size=, max_memory_bytes=)``), keyed by :func:`plan_key`."""


def plan_key(a: SparseArrayLike, b: ArrayLike, c: ArrayLike | None = None, *, transpose_a: bool = False,
             options: OptionsLike = None, execution: ExecutionLike = None) -> tuple:
    """The plan-cache key of a :func:`matmul` call: everything that changes the plan.

    A hashable tuple: ``a``'s library, shape, number of entries, dtypes and device (not its
    sparsity pattern: the function form's plans do not depend on it, see :func:`matmul`);
    ``b``'s and ``c``'s library, shape, strides, dtype and device; ``transpose_a``; the options and
    execution space. Values (``a``'s values, ``b``, ``c``, ``alpha``, ``beta``) are not part of it.
    """
    return _key(wrap_sparse_operand(a, "a"), as_array(b, "b"), None if c is None else as_array(c, "c"), transpose_a,
                options, execution)


def _key(a_op, b, c, transpose_a, options, execution) -> tuple:
    sig_b = (operand_keys.get(type(b)) or key_function(b, "b"))(b)[0]
    sig_c = None if c is None else (operand_keys.get(type(c)) or key_function(c, "c"))(c)[0]
    if options is not None:
        options = check_or_create_options(MatmulOptions, options, "options")
    if execution is not None:
        execution = normalize_execution(execution, a_op.device_id)
    return (a_op.key(), sig_b, sig_c, check_transpose(transpose_a), options, execution)


@overload
def matmul(a: SparseArrayLike, b: NumpyArrayT, c: NumpyArrayT | None = None, *, alpha: complex = 1,
           beta: complex = 0, transpose_a: bool = False, options: OptionsLike = None, execution: ExecutionLike = None,
           stream: StreamLike = None) -> np.ndarray: ...
@overload
def matmul(a: SparseArrayLike, b: HostArrayLike, c: HostArrayLike | None = None, *, alpha: complex = 1,
           beta: complex = 0, transpose_a: bool = False, options: OptionsLike = None, execution: ExecutionLike = None,
           stream: StreamLike = None) -> np.ndarray: ...
@overload
def matmul(a: SparseArrayLike, b: ArrayT, c: ArrayT | None = None, *, alpha: complex = 1, beta: complex = 0,
           transpose_a: bool = False, options: OptionsLike = None, execution: ExecutionLike = None,
           stream: StreamLike = None) -> ArrayT: ...
def matmul(a: SparseArrayLike, b: ArrayLike, c: ArrayLike | None = None, *, alpha: complex = 1, beta: complex = 0,
           transpose_a: bool = False, options: OptionsLike = None, execution: ExecutionLike = None,
           stream: StreamLike = None) -> AnyArray:
    """``alpha * op(a) @ b + beta * c`` for a sparse ``a`` and a dense vector or matrix ``b``.

    The arguments and result are those of :class:`Matmul` (``op(a)`` is ``a``, or ``a.T`` with
    ``transpose_a=True``). The plan is looked up in :data:`plan_cache` by :func:`plan_key`, so a
    repeated call with operands of the same kind reuses the cuSPARSE descriptors and workspace.
    Unlike :meth:`Matmul.plan`, the function form does not run ``cusparseSpMM_preprocess`` (whose
    analysis holds for one sparsity pattern): its plans serve any matrix of the key's shape, number of
    entries and dtypes, and it keeps no reference to the operands of a call.

    Parameters
    ----------
    a : sparse matrix
        CSR (or CSC, COO: converted) of scipy.sparse, cupyx.scipy.sparse or torch.
    b : array
        A vector or matrix of ``a``'s dense library (numpy, cupy or torch).
    c : array, optional
        The addend, of the result's shape.
    alpha, beta : number
        Scalars; ``beta`` needs ``c``.
    transpose_a : bool
        Multiply by ``a.T``.
    options : MatmulOptions, dict or None
        See :class:`MatmulOptions`.
    execution : "cuda", "cpu", ExecutionCUDA, ExecutionCPU or None
        Where to run (default: where ``a`` lives).
    stream : stream-like, optional
        The stream (default: the operand library's current stream).

    Returns
    -------
    array
        ``(M,)`` or ``(M, N)``, of ``a``'s dense library and dtype.

    Raises
    ------
    OperandError, UnsupportedOperandError, UnsupportedLayoutError, OptionsError
        For bad operands or options; the message names the argument.

    See Also
    --------
    Matmul : the stateful form.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> import nvmathx
    >>> a = sp.csr_array(np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]]))
    >>> nvmathx.sparse.matmul(a, np.arange(6.0).reshape(3, 2))
    array([[ 8., 11.],
           [ 6.,  9.]])
    >>> nvmathx.sparse.matmul(a, np.ones(2), transpose_a=True)
    array([1., 3., 2.])
    """
    a_op = wrap_sparse_operand(a, "a")
    b, c = as_array(b, "b"), None if c is None else as_array(c, "c")
    key = _key(a_op, b, c, transpose_a, options, execution)
    device_id = a_op.device_id
    plan = plan_cache.get(device_id, key)
    if plan is None:
        plan = Matmul(a, b, c, alpha=alpha, beta=beta, transpose_a=transpose_a, options=options, execution=execution)
        plan.plan(preprocess=False)
        plan_cache.put(device_id, key, plan)
    else:
        b_op = wrap_dense(b, "b", a_op)
        c_op = None if c is None else wrap_dense(c, "c", a_op)
        rebind_call(plan, a_op, b_op, c_op, alpha, beta)
    try:
        return plan.execute(stream=stream)
    finally:
        release_call(plan)
