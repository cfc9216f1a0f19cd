"""Where a :class:`~nvmathx.sparse.DirectSolver` runs: :class:`CpuSpace` (SuperLU) and
:class:`CudaSpace` (cuDSS). Each takes the checked operands and does one job per method: ``plan``,
``factorize`` (returns what it reports), ``solve`` (returns the result in ``b``'s kind),
``set_matrix`` / ``set_rhs`` (new operands of a checked kind) and ``free``. ``vector_result``
(scipy's ``spsolve``) makes the result of a one-column ``b`` 1-D.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._core.errors import OperandError, SingularMatrixError
from .._core.memory import Workspace
from .._core.streams import resolve_stream
from .._core.tensor import allocate_like, copy_to_host, f_strides, host_array, stage_to_device
from ._solver_cpu import CpuFactorization, check_finite_host
from ._solver_options import superlu_settings
from ._solver_pattern import any_nonfinite, empty_line, gather_columns

__all__ = ["CpuSpace", "CudaSpace"]


class CpuSpace:
    """SuperLU on the host (scipy.sparse.linalg.splu)."""

    def __init__(self, a, b, options):
        self.options = options
        self.csr = a.host_csr()
        self.b = b
        self.factors: CpuFactorization | None = None
        self.vector_result = False

    def checksum_stream(self):
        return None

    def set_stream(self, stream) -> None:
        pass

    def check_finite(self, a, b) -> None:
        if not self.options.check_finite:
            return
        if a is not None:
            check_finite_host(host_array(a.values), "a")
        if b is not None:
            check_finite_host(host_array(b), "b")

    def plan(self) -> None:
        # SuperLU orders and factorizes in one call (in factorize()); what it will be told is fixed here.
        superlu_settings(self.options)
        self.factors = None

    def factorize(self) -> dict:
        self.factors = CpuFactorization(self.csr, self.options)
        return {"factor_nnz": self.factors.factor_nnz, "peak_device_memory": None, "perturbed_pivots": 0,
                "inertia": self.factors.inertia}

    def solve(self):
        assert self.factors is not None
        x = np.asarray(self.factors.solve(np.asarray(host_array(self.b))), dtype=self.b.dtype)
        return self.b.adapter.from_host(x.reshape(_result_shape(self.b.shape, self.vector_result)))

    def set_matrix(self, a) -> None:
        self.csr = a.host_csr()
        self.factors = None

    def set_rhs(self, b) -> None:
        self.b = b

    def free(self) -> None:
        self.csr = self.b = self.factors = None


class CudaSpace:
    """cuDSS on one device; host operands are copied there and results back."""

    def __init__(self, a, b, options, device_id: int, stream):
        self.options = options
        self.device_id = device_id
        self.stream = resolve_stream(stream, device_id, a.dense_adapter.current_stream)
        self.host_operands = not a.is_device
        self.columns = 1 if len(b.shape) == 1 else int(b.shape[1])
        self.staging = Workspace(device_id)
        self.plan_: Any = None
        self.empty_line: tuple[str, int] | None = None  # of the planned pattern
        self.vector_result = False
        self.set_matrix(a)
        self.set_rhs(b)

    def checksum_stream(self):
        return self.stream

    def set_stream(self, stream) -> None:
        self.stream = resolve_stream(stream, self.device_id, self.a.dense_adapter.current_stream)

    def check_finite(self, a, b) -> None:
        if not self.options.check_finite:
            return
        for operand, name in ((None if a is None else a.values, "a"), (b, "b")):
            if operand is None:
                continue
            if operand.device_id < 0:
                check_finite_host(host_array(operand), name)
                continue
            ptr = operand.ptr if name == "a" else self._columns_of(operand)  # (a's arrays are contiguous)
            if any_nonfinite(ptr, int(np.prod(operand.shape, dtype=np.int64)), operand.dtype, self.device_id,
                             self.stream):
                raise OperandError(name, "holds NaN or infinite values (pass options={'check_finite': False} to "
                                         "skip this check)")

    def set_matrix(self, a) -> None:
        self.a = a.to_device(self.device_id, self.stream) if self.host_operands else a
        if self.plan_ is not None:
            self.plan_.set_matrix(self.a)

    def set_rhs(self, b) -> None:
        self.b_like = b
        self.b = stage_to_device(b, self.device_id, self.stream) if b.device_id < 0 else b

    def _rhs_columns(self) -> int:
        """The address of ``b`` in column-major order (gathered into the staging buffer if needed)."""
        return self._columns_of(self.b)

    def _columns_of(self, b) -> int:
        """The address of device array ``b`` (shape (n,) or (n, k)) in column-major order: its own
        where it is laid out so, else a copy in the staging buffer."""
        n = b.shape[0]
        columns = 1 if len(b.shape) == 1 else int(b.shape[1])
        strides = (b.strides[0], 0) if len(b.shape) == 1 else tuple(b.strides)
        if strides[0] == 1 and (columns == 1 or strides[1] == n):
            return b.ptr
        destination = self.staging.ensure(n * columns * b.dtype.itemsize, self.stream)
        gather_columns(b.ptr, n, columns, strides, b.dtype.itemsize, destination, self.device_id, self.stream)
        return destination

    def plan(self) -> None:
        from ._solver_cudss import CudssPlan

        if self.plan_ is not None:
            self.plan_.free()
            self.plan_ = None
        if self.a.shape[0] == 0:  # nothing for cuDSS to do (it refuses empty matrices)
            return
        # cuDSS perturbs a zero pivot instead of reporting it: a pattern with an empty line is
        # singular whatever its values, which factorize() says
        one_triangle = self.options.matrix_type != "general" and self.options.triangle != "full"
        self.empty_line = empty_line(self.a, one_triangle, self.stream)
        plan = CudssPlan(self.a, self.columns, self.options, self.stream)
        try:
            rhs = self._rhs_columns()
            plan.bind(rhs, rhs)  # analysis and factorization read neither
            plan.analyze(self.stream)
        except BaseException:
            plan.free()
            raise
        self.plan_ = plan

    def factorize(self) -> dict:
        if self.plan_ is None:  # a 0 x 0 matrix
            return {"factor_nnz": 0, "peak_device_memory": None, "perturbed_pivots": 0, "inertia": None}
        if self.empty_line is not None:
            line, index = self.empty_line
            raise SingularMatrixError(f"a is singular: its {line} {index} holds no entry", pivot=index)
        return self.plan_.factorize(self.stream)

    def solve(self):
        shape = _result_shape(self.b.shape, self.vector_result)  # (n,) and (n, 1) share a column-major layout
        x = allocate_like(self.b_like, shape, self.b.dtype, self.device_id, self.stream, strides=f_strides(shape))
        if self.plan_ is not None and self.columns > 0:
            self.plan_.bind(self._rhs_columns(), x.ptr)
            self.plan_.solve(self.stream)
        if self.host_operands:
            return copy_to_host(x, self.b_like, self.stream)
        return x.obj

    def free(self) -> None:
        if self.plan_ is not None:
            plan, self.plan_ = self.plan_, None
            plan.free()
        self.staging.release()
        self.a = self.b = self.b_like = None


def _result_shape(shape, vector_result: bool) -> tuple:
    """``x``'s shape for ``b`` of ``shape``: ``b``'s own, or (n,) for (n, 1) with ``vector_result``."""
    shape = tuple(shape)
    return shape[:1] if vector_result and len(shape) == 2 and shape[1] == 1 else shape
