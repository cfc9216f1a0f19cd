"""A host stand-in for cuDSS, its three small kernels and the device, so the GPU code path of
nvmathx.sparse.DirectSolver / spsolve runs on a machine without a GPU.

Device pointers are host addresses (the device is faked as tests/linalg/_fake_cublaslt.py fakes it).
``FakeCudss`` keeps the objects nvmathx creates and models cuDSS as its documentation describes
it: a CSR matrix of a type and a view (``LOWER`` / ``UPPER`` read one triangle, and for a
symmetric or Hermitian type ``FULL`` reads one too), dense matrices in column-major order with a
leading dimension, ANALYSIS before FACTORIZATION before SOLVE, ``CUDSS_DATA_INFO`` nonzero after a
zero pivot, the solve mode of the configuration. The kernels (pattern checksum, non-finite count,
gather into columns) are their own CUDA source compiled as host C++ (tests/helpers/host_kernels.py).
"""

import itertools
import warnings

import numpy as np
import scipy.linalg

from linalg._fake_cublaslt import install as install_fake_device
from linalg._fake_cublaslt import view_at
from nvmathx._bindings import cudss

__all__ = ["FakeCudss", "install", "host_checksum"]

_VALUES = {0: np.float32, 1: np.float64, 4: np.complex64, 5: np.complex128}
_INDICES = {10: np.int32, 24: np.int64}


def _refuse(status, what):
    raise cudss.CudssError(status, cudss.status_name(status), "fake cuDSS", what)


class FakeCudss:
    def __init__(self, release=(1, 0, 0)):
        self.dialect = cudss.dialect_for(release)
        self.ids = itertools.count(0x100)
        self.live = {}  # object -> (kind, fields)
        self.phases = []  # the phases executed, in order
        self.jit_folders = []

    def _new(self, kind, **fields):
        key = next(self.ids)
        self.live[key] = [kind, fields]
        return key

    def _get(self, key, kind):
        if key not in self.live or self.live[key][0] != kind:
            _refuse(3, f"not a live {kind}: {key}")
        return self.live[key][1]

    def create(self):
        return self._new("handle")

    def destroy(self, handle):
        self._get(handle, "handle")
        del self.live[handle]

    def set_stream(self, handle, stream):
        self._get(handle, "handle")

    def set_jit_cache_dir(self, handle, folder):
        self.jit_folders.append(folder)
        return self.dialect.jit_kernels

    def config_create(self):
        return self._new("config", values={})

    def config_destroy(self, config):
        self._get(config, "config")
        del self.live[config]

    def config_set(self, config, param, value):
        if param == cudss.ConfigParam.SOLVE_MODE and int(value) and not self.dialect.transposed_solves:
            _refuse(4, "transposed solves (cuDSS 0.8)")
        self._get(config, "config")["values"][cudss.ConfigParam(param)] = value

    def config_get(self, config, param):
        return self._get(config, "config")["values"].get(cudss.ConfigParam(param), 0)

    def data_create(self, handle):
        self._get(handle, "handle")
        return self._new("data", state="new", info=0, lu=None, analysed=None)

    def data_destroy(self, handle, data):
        self._get(data, "data")
        del self.live[data]

    def data_get(self, handle, data, param, index_bytes=4):
        fields = self._get(data, "data")
        param = cudss.DataParam(param)
        if param == cudss.DataParam.INFO:
            return fields["info"]
        if fields["lu"] is None:
            _refuse(3, f"{param.name} before a factorization")
        if param == cudss.DataParam.LU_NNZ:
            return int(np.count_nonzero(fields["lu"][0]))
        if param == cudss.DataParam.NPIVOTS:
            return 0
        if param == cudss.DataParam.INERTIA:
            eigenvalues = np.linalg.eigvalsh(fields["matrix"])
            return (int((eigenvalues > 0).sum()), int((eigenvalues < 0).sum()))
        if param == cudss.DataParam.MEMORY_ESTIMATES:
            return (0, 8 * fields["lu"][0].size) + (0,) * 14
        _refuse(3, f"{param.name} is not modelled")

    def matrix_create_csr(self, rows, columns, nnz, indptr, indices, values, index_type, value_type, matrix_type,
                          view):
        if rows != columns or rows <= 0:
            _refuse(3, f"{rows} x {columns}")
        if cudss.MatrixType(matrix_type) == cudss.MatrixType.GENERAL and view != cudss.MatrixView.FULL:
            _refuse(3, "a general matrix is read in full")
        return self._new("csr", n=rows, nnz=nnz, pointers=(indptr, indices, values), index=_INDICES[int(index_type)],
                         value=_VALUES[int(value_type)], type=cudss.MatrixType(matrix_type),
                         view=cudss.MatrixView(view))

    def matrix_create_dn(self, rows, columns, ld, values, value_type, layout=cudss.Layout.COL_MAJOR):
        if ld < rows or layout != cudss.Layout.COL_MAJOR:
            _refuse(3, f"ld {ld} for {rows} rows, layout {layout}")
        return self._new("dense", rows=rows, columns=columns, ld=ld, ptr=values, value=_VALUES[int(value_type)])

    def matrix_set_values(self, matrix, values):
        self._get(matrix, "dense")["ptr"] = values

    def matrix_set_csr_pointers(self, matrix, indptr, indices, values):
        self._get(matrix, "csr")["pointers"] = (indptr, indices, values)

    def matrix_destroy(self, matrix):
        if matrix not in self.live:
            _refuse(3, "no such matrix")
        del self.live[matrix]

    # -- the phases ----------------------------------------------------------------------------

    def _dense_of(self, csr):
        n, nnz = csr["n"], csr["nnz"]
        indptr_ptr, indices_ptr, values_ptr = csr["pointers"]
        indptr = view_at(indptr_ptr, (n + 1,), (1,), csr["index"])
        indices = view_at(indices_ptr, (nnz,), (1,), csr["index"])
        values = view_at(values_ptr, (nnz,), (1,), csr["value"])
        rows = np.repeat(np.arange(n), np.diff(indptr))
        dense = np.zeros((n, n), csr["value"])
        np.add.at(dense, (rows, indices), values)
        if csr["type"] == cudss.MatrixType.GENERAL:
            return dense
        part = np.triu(dense) if csr["view"] == cudss.MatrixView.UPPER else np.tril(dense)
        strict = part - np.diag(np.diag(part))
        hermitian = csr["type"] in (cudss.MatrixType.HERMITIAN, cudss.MatrixType.HPD)
        return part + (strict.conj().T if hermitian else strict.T)

    def execute(self, handle, phase, config, data, matrix, solution, rhs):
        self._get(handle, "handle")
        fields, csr = self._get(data, "data"), self._get(matrix, "csr")
        x, b = self._get(solution, "dense"), self._get(rhs, "dense")
        phase = cudss.Phase(phase)
        self.phases.append(phase.name)
        pattern = tuple(np.array(view_at(p, (n,), (1,), csr["index"]))
                        for p, n in zip(csr["pointers"][:2], (csr["n"] + 1, csr["nnz"])))
        if phase == cudss.Phase.ANALYSIS:
            fields["analysed"], fields["state"] = pattern, "analysed"
            return
        if fields["state"] == "new" or any(not np.array_equal(p, q) for p, q in zip(pattern, fields["analysed"])):
            _refuse(3, f"{phase.name} of a matrix not analysed")
        if phase == cudss.Phase.FACTORIZATION:
            matrix_values = self._dense_of(csr)
            with warnings.catch_warnings():  # a zero pivot is reported below, as cuDSS reports it
                warnings.simplefilter("ignore", scipy.linalg.LinAlgWarning)
                lu, pivots = scipy.linalg.lu_factor(matrix_values.astype(np.complex128), check_finite=False)
            zero = np.flatnonzero(np.diag(lu) == 0)
            fields["info"] = int(zero[0]) + 1 if zero.size else 0
            fields["lu"], fields["matrix"], fields["state"] = (lu, pivots), matrix_values, "factorized"
            return
        if phase != cudss.Phase.SOLVE or fields["state"] != "factorized":
            _refuse(3, f"{phase.name} out of order")
        mode = int(self._get(config, "config")["values"].get(cudss.ConfigParam.SOLVE_MODE, 0))
        n, k = b["rows"], b["columns"]
        rhs_values = np.array(view_at(b["ptr"], (n, k), (1, b["ld"]), b["value"]), dtype=np.complex128)
        result = scipy.linalg.lu_solve(fields["lu"], rhs_values, trans=mode)
        out = view_at(x["ptr"], (n, k), (1, x["ld"]), x["value"])
        out[...] = result if np.dtype(x["value"]).kind == "c" else result.real


def host_checksum(a):
    """The device checksum's arithmetic as its docstring states it (splitmix64 of value + (position +
    salt) * golden ratio, summed and exclusive-or'ed), in numpy: an independent model of the kernel."""
    golden = np.uint64(0x9E3779B97F4A7C15)

    def mix(z):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))

    total, other = np.uint64(0), np.uint64(0)
    with np.errstate(over="ignore"):
        for array, salt in zip((a.indptr, a.indices), (1, 0x100000001)):
            values = view_at(array.ptr, array.shape, (1,), array.dtype).astype(np.int64).view(np.uint64)
            word = values + (np.arange(len(values), dtype=np.uint64) + np.uint64(salt)) * golden
            total = total + mix(word).sum(dtype=np.uint64)
            other = other ^ np.bitwise_xor.reduce(mix(word ^ np.uint64(0x5851F42D4C957F2D)), initial=np.uint64(0))
    return np.asarray(a.shape, dtype=np.int64).tobytes() + np.array([total, other], dtype=np.uint64).tobytes()


_HOST_PRELUDE = r"""
#define __forceinline__ inline
static inline unsigned long long atomicAdd(unsigned long long* address, unsigned long long value) {
    unsigned long long old = *address; *address = old + value; return old;
}
static inline unsigned int atomicAdd(unsigned int* address, unsigned int value) {
    unsigned int old = *address; *address = old + value; return old;
}
static inline unsigned long long atomicMin(unsigned long long* address, unsigned long long value) {
    unsigned long long old = *address; if (value < old) *address = value; return old;
}
static inline unsigned long long atomicXor(unsigned long long* address, unsigned long long value) {
    unsigned long long old = *address; *address = old ^ value; return old;
}
"""


class _HostKernelSet:
    """The solver's KernelSet compiled as host C++ (tests/helpers/host_kernels.py): ``kernel()`` names
    the kernel, ``launch()`` runs it as one thread over the whole grid-stride loop."""

    def __init__(self):
        from helpers.host_kernels import HostKernels
        from nvmathx.sparse._solver_pattern import KERNELS

        self.host = HostKernels(_HOST_PRELUDE + KERNELS.source, KERNELS.names, "sparse-solver")

    def kernel(self, device_id, name):
        return name

    def launch(self, stream, kernel, count, *args):
        self.host.launch(stream, 0, kernel, count, *args)


def install(monkeypatch, release=(1, 0, 0)):
    """Swap cuDSS, the solver's kernels and the device for host fakes; returns the FakeCudss."""
    from nvmathx.sparse import _solver_cudss, _solver_pattern, spsolve_plan_cache

    install_fake_device(monkeypatch)
    fake = FakeCudss(release)
    for name in ("create", "destroy", "set_stream", "set_jit_cache_dir", "config_create", "config_destroy",
                 "config_set", "config_get", "data_create", "data_destroy", "data_get", "matrix_create_csr",
                 "matrix_create_dn", "matrix_set_values", "matrix_set_csr_pointers", "matrix_destroy", "execute"):
        monkeypatch.setattr(cudss, name, getattr(fake, name))
    monkeypatch.setattr(cudss, "dialect", lambda: fake.dialect)
    monkeypatch.setattr(cudss, "threading_layer_path", lambda: None)  # a cuDSS without its threading layer
    monkeypatch.delenv("CUDSS_THREADING_LIB", raising=False)
    handle = fake.create()
    monkeypatch.setattr(_solver_cudss, "_handle", lambda device_id: handle)
    kernels = _HostKernelSet()
    monkeypatch.setattr(_solver_pattern, "_KERNELS", kernels)
    monkeypatch.setattr(_solver_pattern, "launch", kernels.launch)
    spsolve_plan_cache.clear()
    return fake
