"""The direct solver's GPU space: one cuDSS configuration, data object and matrix objects.

:class:`CudssPlan` owns them. ``analyze()``, ``factorize()`` and ``solve()`` are one
``cudssExecute`` phase each on the caller's stream. The handle is one per device and thread (cuDSS
handles are heavy, each holds a cuBLAS handle, and not thread-safe); its stream is set before each
phase. After the factorization the plan reads, on the host, what cuDSS reports (``CUDSS_DATA_INFO``
first: a nonzero value is a zero pivot, raised as :class:`~nvmathx.SingularMatrixError`), which
waits for the stream.
"""

from __future__ import annotations

import contextlib
import os
import threading

from .._bindings import cuda_driver, cudss
from .._core.errors import SingularMatrixError
from .._core.tensor import SparseOperand
from ._solver_options import DirectSolverOptions, cudss_settings

__all__ = ["CudssPlan", "VALUE_TYPES", "INDEX_TYPES", "threading_layer"]

VALUE_TYPES = {"float32": cudss.DataType.R_32F, "float64": cudss.DataType.R_64F,
               "complex64": cudss.DataType.C_32F, "complex128": cudss.DataType.C_64F}
INDEX_TYPES = {"int32": cudss.DataType.R_32I, "int64": cudss.DataType.R_64I}

_handles = threading.local()  # per thread, {device_id: handle}: a cuDSS handle is not thread-safe


def _handle(device_id: int) -> int:
    """This thread's cuDSS handle on ``device_id`` (made on first use, with the device current), with
    cuDSS 1.x's cache of compiled kernels in nvmathx's code cache."""
    handles = getattr(_handles, "by_device", None)
    if handles is None:
        handles = _handles.by_device = {}
    handle = handles.get(device_id)
    if handle is None:
        from .._codegen.cache import cache_dir
        from .._core import device

        device.ensure_device(device_id).set_current()  # cudssCreate takes the current device
        handle = cudss.create()
        if cudss.dialect().jit_kernels:
            folder = os.path.join(str(cache_dir()), "cudss-jit")
            os.makedirs(folder, exist_ok=True)
            cudss.set_jit_cache_dir(handle, folder)
        handles[device_id] = handle
    return handle


# What the last attempt to give a handle cuDSS's threading layer found (python -m nvmathx reports the
# layer's presence; this says whether it loaded), and the handles that have it.
threading_layer: dict = {"active": None, "library": None, "error": None}
_threaded_handles: set = set()


def _use_threading_layer(handle: int) -> bool:
    """Put ``handle`` in cuDSS's multi-threaded mode (once per handle): the threading layer named by
    ``CUDSS_THREADING_LIB``, else the one beside libcudss. Where it does not load (no GNU OpenMP
    runtime, say), False: the handle stays single-threaded, and the solver works the same with a
    slower analysis."""
    if handle in _threaded_handles:
        return True
    named = os.environ.get("CUDSS_THREADING_LIB")  # cuDSS reads it itself when given no library
    library = None if named else cudss.threading_layer_path()
    if not named and library is None:
        threading_layer.update(active=False, error="no threading layer beside libcudss")
        return False
    try:
        cudss.set_threading_layer(handle, library)
    except cudss.CudssError as error:
        threading_layer.update(active=False, library=library, error=str(error))
        return False
    threading_layer.update(active=True, library=library or named, error=None)
    _threaded_handles.add(handle)
    return True


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask where the platform has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # (not on every platform)
        return os.cpu_count() or 1


def _host_threads(handle: int, requested: int | None) -> int | None:
    """The HOST_NTHREADS to configure: ``requested`` threads (None: :func:`usable_cores`) on a handle in
    multi-threaded mode (made so when more than one is asked for), 1 on such a handle for a
    single-threaded solver, else none."""
    if requested is None:
        requested = usable_cores()
    if requested > 1 and _use_threading_layer(handle):
        return requested
    return 1 if handle in _threaded_handles else None


class CudssPlan:
    """cuDSS objects for one pattern: ``a`` (a device SparseOperand), and dense ``b`` / ``x`` of
    ``rows x columns`` (column-major, leading dimension ``rows``)."""

    def __init__(self, a: SparseOperand, columns: int, options: DirectSolverOptions, stream):
        settings = cudss_settings(options, cudss.dialect())
        self.device_id = a.device_id
        self.n = a.shape[0]
        self.columns = columns
        self.index_bytes = a.index_dtype.itemsize
        self.value_type = VALUE_TYPES[a.dtype.name]
        self.matrix_type = settings["matrix_type"]
        self.handle = _handle(a.device_id)
        self.config = self.data = self.matrix = self.b = self.x = 0
        with contextlib.ExitStack() as undo:
            self.config = cudss.config_create()
            undo.callback(cudss.config_destroy, self.config)
            for name, value in settings["config"].items():
                cudss.config_set(self.config, cudss.ConfigParam[name], value)
            threads = _host_threads(self.handle, options.host_threads)
            if threads is not None:
                cudss.config_set(self.config, cudss.ConfigParam.HOST_NTHREADS, threads)
            cudss.set_stream(self.handle, stream.handle)
            self.data = cudss.data_create(self.handle)
            undo.callback(cudss.data_destroy, self.handle, self.data)
            self.matrix = cudss.matrix_create_csr(self.n, self.n, a.nnz, a.indptr.ptr, a.indices.ptr, a.values.ptr,
                                                  INDEX_TYPES[a.index_dtype.name], self.value_type,
                                                  self.matrix_type, settings["view"])
            undo.callback(cudss.matrix_destroy, self.matrix)
            undo.pop_all()

    def bind(self, b_ptr: int, x_ptr: int) -> None:
        """Point the dense objects at new ``b`` and ``x`` (made on first use)."""
        if not self.b:
            self.b = cudss.matrix_create_dn(self.n, self.columns, self.n, b_ptr, self.value_type)
            self.x = cudss.matrix_create_dn(self.n, self.columns, self.n, x_ptr, self.value_type)
        else:
            cudss.matrix_set_values(self.b, b_ptr)
            cudss.matrix_set_values(self.x, x_ptr)

    def set_matrix(self, a: SparseOperand) -> None:
        """New arrays of the same pattern for ``a`` (its values, possibly at other addresses)."""
        cudss.matrix_set_csr_pointers(self.matrix, a.indptr.ptr, a.indices.ptr, a.values.ptr)

    def _execute(self, phase, stream) -> None:
        cudss.set_stream(self.handle, stream.handle)
        cudss.execute(self.handle, phase, self.config, self.data, self.matrix, self.x, self.b)

    def analyze(self, stream) -> None:
        """Reordering and symbolic factorization."""
        self._execute(cudss.Phase.ANALYSIS, stream)

    def factorize(self, stream) -> dict:
        """The numerical factorization; waits for it and returns what cuDSS reports.

        Raises
        ------
        SingularMatrixError
            When cuDSS reports a zero pivot (``CUDSS_DATA_INFO`` nonzero).
        """
        self._execute(cudss.Phase.FACTORIZATION, stream)
        cuda_driver.stream_synchronize(stream.handle)
        info = cudss.data_get(self.handle, self.data, cudss.DataParam.INFO)
        if info != 0:
            raise SingularMatrixError(f"a is singular: cuDSS reports a zero pivot (CUDSS_DATA_INFO = {info})",
                                      pivot=info - 1 if info > 0 else None)
        return self.report()

    def report(self) -> dict:
        """Factor non-zeros, peak device memory, perturbed pivots and (symmetric and Hermitian
        indefinite types) the inertia; a figure cuDSS does not give is None."""
        def read(param):
            try:
                return cudss.data_get(self.handle, self.data, param, self.index_bytes)
            except cudss.CudssError:
                return None

        estimates = read(cudss.DataParam.MEMORY_ESTIMATES)
        indefinite = self.matrix_type in (cudss.MatrixType.SYMMETRIC, cudss.MatrixType.HERMITIAN)
        inertia = read(cudss.DataParam.INERTIA) if indefinite else None
        return {"factor_nnz": read(cudss.DataParam.LU_NNZ),
                "peak_device_memory": None if estimates is None else int(estimates[1]),
                "perturbed_pivots": read(cudss.DataParam.NPIVOTS),
                "inertia": None if inertia is None else (int(inertia[0]), int(inertia[1]))}

    def solve(self, stream) -> None:
        """Forward and backward substitution (and refinement) into ``x``, ordered on ``stream``."""
        self._execute(cudss.Phase.SOLVE, stream)

    def free(self) -> None:
        """Release the cuDSS objects (the per-device handle stays). Safe to call twice."""
        for attribute, destroy in (("b", cudss.matrix_destroy), ("x", cudss.matrix_destroy),
                                   ("matrix", cudss.matrix_destroy), ("config", cudss.config_destroy)):
            value = getattr(self, attribute)
            if value:
                setattr(self, attribute, 0)
                destroy(value)
        if self.data:
            data, self.data = self.data, 0
            cudss.data_destroy(self.handle, data)
