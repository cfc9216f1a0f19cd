"""One catalogue of bad calls across the public API: each must raise a typed error (an nvmathx error
that is also a ValueError or TypeError, or a DeviceUnavailableError) whose message starts with the
argument's name; none may crash, hang or return.

Every row runs on the CPU (numpy operands, CPU execution space). Rows that make sense for device
operands run again on the GPU code path with cuBLASLt, cuFFT and the device replaced by the host
stand-ins of tests/linalg/_fake_cublaslt.py and tests/fft/_fake_device.py ("fake-gpu"), and, under
the ``gpu`` marker, with cupy (or torch CUDA) operands on a real GPU. device_api rows run on the
host only (descriptors are validated there); those that need libmathdx skip without it.
"""

import dataclasses
import enum
import gc
import signal
from dataclasses import dataclass, field

import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided

import nvmathx.distributed as distributed
import nvmathx.fft as nfft
from helpers.requirements import mathdx_missing
from nvmathx import (
    DeviceUnavailableError,
    ExecutionCPU,
    InvalidStateError,
    NvmathxError,
    OperandError,
    OptionsError,
    SingularMatrixError,
    UnsupportedOperandError,
)
from nvmathx.linalg import (
    DirectSolver,
    DirectSolverOptions,
    Matmul,
    MatmulOptions,
    MatmulPlanPreferences,
    direct_solver,
    matmul,
    relu_mask,
    solve,
)
from nvmathx.linalg import plan_cache as matmul_plan_cache
from nvmathx.sparse import Matmul as SparseMatmul
from nvmathx.sparse import MatmulOptions as SparseMatmulOptions
from nvmathx.sparse import matmul as sparse_matmul
from nvmathx.sparse import plan_cache as sparse_plan_cache

HANG_SECONDS = 60
_BOX = distributed.Box((0, 0), (4, 6))  # a rank's piece: allocate() then needs no distributed context


class Operands:
    """The operands of one space, made on first use: float32 matrices ``A`` (4x3), ``B`` (3x5),
    ``C`` (4x5), ``BIAS`` (5,), complex ``X`` (4x8) and real ``R`` (4x8)."""

    def __init__(self, space: str):
        self.space = space
        self._made = {}

    @property
    def device(self) -> bool:
        return self.space != "cpu"

    def __call__(self, host: np.ndarray):
        """``host`` as an array of this space."""
        if self.space == "cpu":
            return host
        if self.space == "fake-gpu":
            from linalg._fake_cublaslt import to_device

            return to_device(np.array(host, order="C"))  # (ascontiguousarray makes 0-d arrays 1-d)
        try:
            import cupy
        except ImportError:
            cupy = None
        if cupy is not None and host.dtype.name not in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
            return cupy.asarray(host)
        import torch  # also for the dtypes cupy does not have

        if host.dtype.name.startswith(("bfloat16", "float8")):
            return torch.from_numpy(host.astype(np.float32)).cuda().to(getattr(torch, host.dtype.name))
        return torch.from_numpy(np.array(host, order="C")).cuda()

    def sparse(self, host: np.ndarray):
        """``host`` as a CSR matrix of this space: scipy on the CPU, cupyx (or torch) on the GPU; the
        fake-gpu space has no sparse library, so its rows are skipped."""
        if self.space == "cpu":
            import scipy.sparse

            return scipy.sparse.csr_array(host)
        if self.space == "fake-gpu":
            pytest.skip("no sparse matrices on the fake GPU")
        device = self(host)
        if type(device).__module__.startswith("cupy") and host.dtype.kind in "fc":  # (cupyx: no integer matrices)
            import cupyx.scipy.sparse

            return cupyx.scipy.sparse.csr_matrix(device)
        if type(device).__module__.startswith("cupy"):
            import torch

            device = torch.from_numpy(host).cuda()
        return device.to_sparse_csr()

    @property
    def S(self):
        """A 4x3 float32 CSR matrix of this space."""
        if "S" not in self._made:
            self._made["S"] = self.sparse(np.eye(4, 3, dtype=np.float32) * 2)
        return self._made["S"]

    def _make(self, name, build):
        if name not in self._made:
            self._made[name] = self(build())
        return self._made[name]

    A = property(lambda o: o._make("A", lambda: np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)))
    B = property(lambda o: o._make("B", lambda: np.linspace(-1, 1, 15, dtype=np.float32).reshape(3, 5)))
    C = property(lambda o: o._make("C", lambda: np.linspace(-1, 1, 20, dtype=np.float32).reshape(4, 5)))
    BIAS = property(lambda o: o._make("BIAS", lambda: np.linspace(-1, 1, 5, dtype=np.float32)))
    X = property(lambda o: o._make("X", lambda: np.exp(1j * np.arange(32.0)).reshape(4, 8)))
    R = property(lambda o: o._make("R", lambda: np.cos(np.arange(32.0)).reshape(4, 8)))


@dataclass(frozen=True)
class Row:
    label: str
    call: object  # Operands -> anything; must raise
    error: type
    argument: str
    device: bool = True  # also run with device operands
    needs_mathdx: bool = False
    tags: tuple = field(default=())


def _planned_matmul(o, **kwargs):
    mm = Matmul(o.A, o.B, **kwargs)
    mm.plan()
    return mm


_REAL_INPUT = ("rfft", "ihfft", "rfft2", "ihfft2", "rfftn", "ihfftn")  # the transforms of real operands


def _planned_sparse(o, **kwargs):
    mm = SparseMatmul(o.S, o.B, **kwargs)
    mm.plan()
    return mm


def _dia(host):
    import scipy.sparse

    return scipy.sparse.dia_array(host)


def _planned_fft(x, **kwargs):
    f = nfft.FFT(x, **kwargs)
    f.plan()
    return f


def _read_only(x):
    x = x.copy()
    x.flags.writeable = False
    return x


def _torch_cpu(host):
    torch = pytest.importorskip("torch")
    return torch.from_numpy(host)


def _neg_view(host):
    torch = pytest.importorskip("torch")
    return torch._neg_view(torch.from_numpy(host))


def _unsupported(dtype):
    values = np.arange(1, 9)
    if dtype == "float8":
        import ml_dtypes

        return values.astype(ml_dtypes.float8_e4m3fn)
    return values.astype(dtype)


def _device_fft(**kwargs):
    from nvmathx.device_api import FFT

    arguments = {"size": 64, "precision": np.float32, "direction": "forward", "sm": (9, 0)}
    arguments.update(kwargs)
    return FFT(**arguments)


def _device_matmul(**kwargs):
    from nvmathx.device_api import Matmul as DeviceMatmul

    arguments = {"size": (32, 32, 32), "precision": np.float32, "sm": (9, 0)}
    arguments.update(kwargs)
    return DeviceMatmul(**arguments)


def _device_solver(**kwargs):
    from nvmathx.device_api import Solver

    arguments = {"function": "gesv_partial_pivot", "size": (16, 16, 1), "dtype": np.float64, "sm": (9, 0)}
    arguments.update(kwargs)
    return Solver(**arguments)


def _device_random(generator="sobol32"):
    from nvmathx.device_api import Random

    return Random(generator, "uniform", np.float32, sm=(9, 0))


class _ForeignCodes(enum.IntEnum):
    """Another library's enum whose RELU has cuBLASLt's RELU code."""

    RELU = 2


O, U, P = OptionsError, UnsupportedOperandError, OperandError  # noqa: E741 (short names keep the table rows short)

MATMUL = [
    Row("matmul 0-d a", lambda o: matmul(o(np.ones((), np.float32)), o.B), P, "a"),
    Row("matmul inner extents differ", lambda o: matmul(o.A, o(np.ones((4, 5), np.float32))), P, "b"),
    Row("matmul int32 a", lambda o: matmul(o(np.ones((4, 3), np.int32)), o(np.ones((3, 5), np.int32))), U, "a"),
    Row("matmul a is a string", lambda o: matmul("not an array", o.B), U, "a"),
    Row("matmul a is an object", lambda o: matmul(object(), o.B), U, "a"),
    Row("matmul b is a dict", lambda o: matmul(o.A, {"b": 1}), U, "b"),
    Row("matmul b float64, a float32", lambda o: matmul(o.A, o(np.ones((3, 5)))), P, "b"),
    Row("matmul c of the wrong shape", lambda o: matmul(o.A, o.B, o(np.ones((4, 4), np.float32)), beta=1), P, "c"),
    Row("matmul c float64", lambda o: matmul(o.A, o.B, o(np.ones((4, 5))), beta=1), P, "c"),
    Row("matmul beta without c", lambda o: matmul(o.A, o.B, beta=1.0), O, "beta"),
    Row("matmul alpha a string", lambda o: matmul(o.A, o.B, alpha="2"), O, "alpha"),
    Row("matmul complex alpha, real operands", lambda o: matmul(o.A, o.B, alpha=1j), O, "alpha"),
    Row("matmul alpha None", lambda o: matmul(o.A, o.B, alpha=None), O, "alpha"),
    Row("matmul beta a list", lambda o: matmul(o.A, o.B, o.C, beta=[1.0]), O, "beta"),
    Row("matmul unknown epilog", lambda o: matmul(o.A, o.B, epilog="SWISH"), O, "epilog"),
    Row("matmul epilog of a wrong type", lambda o: matmul(o.A, o.B, epilog=3.5), O, "epilog"),
    Row("matmul BIAS without a bias", lambda o: matmul(o.A, o.B, epilog="BIAS"), P, "epilog_inputs"),
    Row("matmul RELU given a bias", lambda o: matmul(o.A, o.B, epilog="RELU", epilog_inputs={"bias": o.BIAS}), O,
        "epilog_inputs"),
    Row("matmul bias of the wrong length",
        lambda o: matmul(o.A, o.B, epilog="BIAS", epilog_inputs={"bias": o(np.ones(4, np.float32))}), P,
        "epilog_inputs['bias']"),
    Row("matmul bias float64", lambda o: matmul(o.A, o.B, epilog="BIAS", epilog_inputs={"bias": o(np.ones(5))}), P,
        "epilog_inputs['bias']"),
    Row("matmul bias not an array", lambda o: matmul(o.A, o.B, epilog="BIAS", epilog_inputs={"bias": "b"}), U,
        "epilog_inputs['bias']"),
    Row("matmul epilog_inputs a list", lambda o: matmul(o.A, o.B, epilog="BIAS", epilog_inputs=[o.BIAS]), O,
        "epilog_inputs"),
    Row("matmul relu_aux of the wrong shape",
        lambda o: matmul(o.A, o.B, epilog="DRELU", epilog_inputs={"relu_aux": o(np.zeros((4, 16), np.float32))}), P,
        "epilog_inputs['relu_aux']"),
    Row("matmul gelu_aux of the wrong shape",
        lambda o: matmul(o.A, o.B, epilog="DGELU", epilog_inputs={"gelu_aux": o(np.zeros((4, 6), np.float32))}), P,
        "epilog_inputs['gelu_aux']"),
    Row("matmul RELU of complex operands",
        lambda o: matmul(o(np.ones((4, 3), np.complex64)), o(np.ones((3, 5), np.complex64)), epilog="RELU"), O,
        "epilog"),
    Row("matmul options an int", lambda o: matmul(o.A, o.B, options=42), O, "options"),
    Row("matmul options unknown field", lambda o: matmul(o.A, o.B, options={"compute": "32F"}), O, "options"),
    Row("matmul options.compute_type", lambda o: matmul(o.A, o.B, options={"compute_type": "TF32"}), O,
        "options.compute_type"),
    Row("matmul options.result_type", lambda o: matmul(o.A, o.B, options={"result_type": "float16"}), O,
        "options.result_type"),
    Row("matmul options.fast_accumulation without float8",
        lambda o: matmul(o.A, o.B, options={"fast_accumulation": True}), O, "options.fast_accumulation"),
    Row("MatmulOptions blocking False", lambda o: MatmulOptions(blocking=False), O, "options.blocking"),
    Row("matmul preferences unknown field", lambda o: matmul(o.A, o.B, preferences={"fastest": True}), O,
        "preferences"),
    Row("MatmulPlanPreferences limit 0", lambda o: MatmulPlanPreferences(limit=0), O, "preferences.limit"),
    Row("MatmulPlanPreferences expand_custom_options 'yes'",
        lambda o: MatmulPlanPreferences(expand_custom_options="yes"), O, "preferences.expand_custom_options"),
    Row("MatmulPlanPreferences autotune 1",
        lambda o: MatmulPlanPreferences(autotune=1), O, "preferences.autotune"),
    Row("matmul execution 'tpu'", lambda o: matmul(o.A, o.B, execution="tpu"), O, "execution"),
    Row("matmul execution dict without a name", lambda o: matmul(o.A, o.B, execution={"device_id": 0}), O,
        "execution"),
    Row("matmul ExecutionCPU(num_threads=0)", lambda o: matmul(o.A, o.B, execution=ExecutionCPU(num_threads=0)), O,
        "execution.num_threads", device=False),
    Row("matmul quantization_scales without float8", lambda o: matmul(o.A, o.B, quantization_scales={"a": 2.0}), O,
        "quantization_scales"),
    Row("matmul b from another library", lambda o: matmul(_torch_cpu(np.ones((4, 3), np.float32)), o.B), P, "b",
        device=False),
    Row("matmul stream with CPU execution", lambda o: matmul(o.A, o.B, stream=0), O, "stream", device=False),
    Row("matmul epilog a foreign IntEnum member of RELU's code (RELU's plan cached)",
        lambda o: (matmul(o.A, o.B, epilog="RELU"), matmul(o.A, o.B, epilog=_ForeignCodes.RELU)), O, "epilog"),
    Row("matmul epilog True", lambda o: matmul(o.A, o.B, epilog=True), O, "epilog"),
    Row("matmul alpha a 1-element array", lambda o: matmul(o.A, o.B, alpha=np.array([2.0])), O, "alpha"),
    Row("matmul beta numpy True", lambda o: matmul(o.A, o.B, o.C, beta=np.True_), O, "beta"),
    Row("matmul a ragged list", lambda o: matmul([[1.0, 2.0, 3.0], [1.0]], o.B), P, "a"),
    Row("matmul b a list of ints", lambda o: matmul(o.A, [[1, 2]] * 3), U, "b", device=False),
    Row("matmul b a Python scalar", lambda o: matmul(o.A, 2.0), P, "b"),
    Row("matmul options.workspace_limit 2**64", lambda o: matmul(o.A, o.B, options={"workspace_limit": 2**64}), O,
        "options.workspace_limit"),
    Row("matmul options.blocking 1", lambda o: matmul(o.A, o.B, options={"blocking": 1}), O, "options.blocking"),
    Row("matmul options.scale_type a set", lambda o: matmul(o.A, o.B, options={"scale_type": {1, 2}}), O,
        "options.scale_type"),
    Row("matmul options.compute_type an array",
        lambda o: matmul(o.A, o.B, options={"compute_type": np.array(["32F", "64F"])}), O, "options.compute_type"),
    Row("matmul options.scale_type complex for real operands",
        lambda o: matmul(o.A, o.B, options={"scale_type": "complex64"}), O, "options.scale_type"),
    Row("matmul preferences.max_waves_count NaN", lambda o: matmul(o.A, o.B, preferences={"max_waves_count": np.nan}),
        O, "preferences.max_waves_count"),
    Row("MatmulPlanPreferences limit 2000", lambda o: MatmulPlanPreferences(limit=2000), O, "preferences.limit"),
    Row("MatmulPlanPreferences reduction_scheme_mask 2**32",
        lambda o: MatmulPlanPreferences(reduction_scheme_mask=2**32), O, "preferences.reduction_scheme_mask"),
    Row("MatmulOptions sm_count_target 2**31 (replace)",
        lambda o: dataclasses.replace(MatmulOptions(), sm_count_target=2**31), O, "options.sm_count_target"),
]

RELU_AUX = np.zeros((4, 16), np.uint8)  # the bitmask of a (4, N <= 128) RELU_AUX result

MATMUL += [
    Row("relu_mask n -1", lambda o: relu_mask(RELU_AUX, -1), O, "n", device=False),
    Row("relu_mask n past the mask's 128 bits", lambda o: relu_mask(RELU_AUX, 129), O, "n", device=False),
    Row("relu_mask n True", lambda o: relu_mask(RELU_AUX, True), O, "n", device=False),
    Row("relu_mask n a float", lambda o: relu_mask(RELU_AUX, 8.0), O, "n", device=False),
    Row("relu_mask of a float array", lambda o: relu_mask(RELU_AUX.astype(np.float32), 8), U, "relu_aux",
        device=False),
    Row("relu_mask of an int64 array", lambda o: relu_mask(RELU_AUX.astype(np.int64), 8), U, "relu_aux",
        device=False),
    Row("relu_mask of a 0-d array", lambda o: relu_mask(np.array(3, np.uint8), 8), P, "relu_aux", device=False),
    Row("relu_mask of a string", lambda o: relu_mask("mask", 8), U, "relu_aux", device=False),
]


def _square(o, dtype=np.float32, n=3):
    return o((np.eye(n) * 2 + np.tri(n, k=-1) * 0.5).astype(dtype))


def _vector(o, dtype=np.float32, n=3, bad=None):
    values = np.arange(1.0, n + 1).astype(dtype)
    if bad is not None:
        values[1] = bad
    return o(values)


def _with(host, index, value):
    host = host.copy()
    host[index] = value
    return host


def _solver_reset(o, **new):
    solver = DirectSolver(_square(o), _vector(o))
    solver.reset_operands(**new)
    return solver


S = SingularMatrixError
SOLVERS = [
    Row("solve a not square", lambda o: solve(o.A, _vector(o, n=4)), P, "a"),
    Row("solve a 1-D", lambda o: solve(_vector(o), _vector(o)), P, "a"),
    Row("solve b of the wrong length", lambda o: solve(_square(o), _vector(o, n=4)), P, "b"),
    Row("solve b rows differ from a's", lambda o: solve(_square(o), o(np.ones((4, 2), np.float32))), P, "b"),
    Row("solve b 0-d", lambda o: solve(_square(o), o(np.ones((), np.float32))), P, "b"),
    Row("solve batches that do not broadcast",
        lambda o: solve(o(np.ones((2, 3, 3), np.float32)), o(np.ones((3, 3, 1), np.float32))), P, "b"),
    Row("solve b float64, a float32", lambda o: solve(_square(o), _vector(o, np.float64)), P, "b"),
    Row("solve int32 operands", lambda o: solve(_square(o, np.int32), _vector(o, np.int32)), U, "a"),
    Row("solve float16 operands", lambda o: solve(_square(o, np.float16), _vector(o, np.float16)), U, "a"),
    Row("solve a is a string", lambda o: solve("a", _vector(o)), U, "a"),
    Row("solve assume_a 'banded'", lambda o: solve(_square(o), _vector(o), assume_a="banded"), O, "options.assume_a"),
    Row("solve assume_a 'tridiagonal'", lambda o: solve(_square(o), _vector(o), assume_a="tridiagonal"), O,
        "options.assume_a"),
    Row("solve assume_a unknown", lambda o: solve(_square(o), _vector(o), assume_a="triangular"), O,
        "options.assume_a"),
    Row("solve assume_a an int", lambda o: solve(_square(o), _vector(o), assume_a=1), O, "options.assume_a"),
    Row("solve transposed 'yes'", lambda o: solve(_square(o), _vector(o), transposed="yes"), O, "options.transposed"),
    Row("solve lower 1", lambda o: solve(_square(o), _vector(o), lower=1), O, "options.lower"),
    Row("solve check_finite None", lambda o: solve(_square(o), _vector(o), check_finite=None), O,
        "options.check_finite"),
    Row("direct_solver options.check 'warn'",
        lambda o: direct_solver(_square(o), _vector(o), options={"check": "warn"}), O, "options.check"),
    Row("direct_solver options.engine 'magma'",
        lambda o: direct_solver(_square(o), _vector(o), options={"engine": "magma"}), O, "options.engine"),
    Row("direct_solver options unknown field", lambda o: direct_solver(_square(o), _vector(o), options={"uplo": "L"}),
        O, "options"),
    Row("direct_solver options an int", lambda o: direct_solver(_square(o), _vector(o), options=3), O, "options"),
    Row("DirectSolverOptions blocking False", lambda o: DirectSolverOptions(blocking=False), O, "options.blocking"),
    Row("DirectSolverOptions memory_resource a string", lambda o: DirectSolverOptions(memory_resource="pool"), O,
        "options.memory_resource"),
    Row("solve execution 'tpu'", lambda o: solve(_square(o), _vector(o), execution="tpu"), O, "execution"),
    Row("solve stream with CPU execution", lambda o: solve(_square(o), _vector(o), stream=0), O, "stream",
        device=False),
    Row("solve b from another library", lambda o: solve(_square(o), _torch_cpu(np.ones(3, np.float32))), P, "b",
        device=False),
    Row("DirectSolver reset_operands a of another shape",
        lambda o: _solver_reset(o, a=o(np.eye(4, dtype=np.float32))), P, "a", device=False),
    Row("DirectSolver reset_operands b of another dtype", lambda o: _solver_reset(o, b=_vector(o, np.float64)), P, "b",
        device=False),
    Row("solve exactly singular a", lambda o: solve(o(np.ones((3, 3))), _vector(o, np.float64)), S, "a",
        device=False),
    Row("solve a batch with one singular matrix",
        lambda o: solve(o(_with(np.stack([np.eye(3)] * 3), 1, 0.0)), _vector(o, np.float64)), S, "a", device=False),
    Row("solve positive definite a that is not",
        lambda o: solve(o(-np.eye(3)), _vector(o, np.float64), assume_a="positive definite"), S, "a", device=False),
    Row("solve triangular a with a zero diagonal",
        lambda o: solve(o(np.diag([1.0, 0.0, 2.0])), _vector(o, np.float64), assume_a="upper triangular"), S, "a",
        device=False),
    Row("solve diagonal a with a zero", lambda o: solve(o(np.diag([1.0, 0.0, 2.0])), _vector(o, np.float64),
                                                        assume_a="diagonal"), S, "a", device=False),
    Row("solve a holding NaN", lambda o: solve(o(_with(np.eye(3), (1, 2), np.nan)), _vector(o, np.float64)), P, "a",
        device=False),
    Row("solve b holding Inf", lambda o: solve(o(np.eye(3)), _vector(o, np.float64, bad=np.inf)), P, "b",
        device=False),
]

MATMUL_STATEFUL = [
    Row("Matmul alpha a string", lambda o: Matmul(o.A, o.B, alpha="x"), O, "alpha"),
    Row("Matmul beta without c", lambda o: Matmul(o.A, o.B, beta=2.0), O, "beta"),
    Row("Matmul options a string", lambda o: Matmul(o.A, o.B, options="fast"), O, "options"),
    Row("Matmul execution 'gpu'", lambda o: Matmul(o.A, o.B, execution="gpu"), O, "execution"),
    Row("Matmul stream with CPU execution", lambda o: Matmul(o.A, o.B, stream=0), O, "stream", device=False),
    Row("Matmul.plan unknown epilog", lambda o: Matmul(o.A, o.B).plan(epilog="nope"), O, "epilog"),
    Row("Matmul.plan preferences unknown field", lambda o: Matmul(o.A, o.B).plan(preferences={"bogus": 1}), O,
        "preferences"),
    Row("Matmul.plan BIAS without a bias", lambda o: Matmul(o.A, o.B).plan(epilog="BIAS"), P, "epilog_inputs"),
    Row("Matmul.execute stream on the CPU", lambda o: _planned_matmul(o).execute(stream=0), O, "stream",
        device=False),
    Row("Matmul.reset_operands a of another shape",
        lambda o: _planned_matmul(o).reset_operands(a=o(np.ones((5, 3), np.float32))), P, "a"),
    Row("Matmul.reset_operands nothing given", lambda o: _planned_matmul(o).reset_operands(a=None), P, "a"),
    Row("Matmul.plan algorithms on the CPU space", lambda o: Matmul(o.A, o.B).plan(algorithms=[1, 2]), O,
        "algorithms", device=False),
    Row("Matmul.reset_operands b float64", lambda o: _planned_matmul(o).reset_operands(b=o(np.ones((3, 5)))), P, "b"),
    Row("Matmul.reset_operands c never planned", lambda o: _planned_matmul(o).reset_operands(c=o.C), P, "c"),
    Row("Matmul.reset_operands alpha a string", lambda o: _planned_matmul(o).reset_operands(alpha="x"), O, "alpha"),
    Row("Matmul.reset_operands a not an array", lambda o: _planned_matmul(o).reset_operands(a="a"), U, "a"),
    Row("Matmul.reset_operands a list of another shape", lambda o: _planned_matmul(o).reset_operands(a=[[1.0]]), P,
        "a"),
    Row("Matmul.autotune iterations a float", lambda o: _planned_matmul(o).autotune(iterations=2.0), O, "iterations"),
    Row("Matmul.plan epilog a foreign IntEnum member", lambda o: Matmul(o.A, o.B).plan(epilog=_ForeignCodes.RELU), O,
        "epilog"),
    Row("Matmul a ragged tuple", lambda o: Matmul(((1.0, 2.0, 3.0), (1.0,)), o.B), P, "a"),
    Row("Matmul alpha a 0-d string array", lambda o: Matmul(o.A, o.B, alpha=np.array("2")), O, "alpha"),
    Row("Matmul.execute release_workspace 'yes'", lambda o: _planned_matmul(o).execute(release_workspace="yes"), O,
        "release_workspace"),
    Row("Matmul.execute release_workspace 0", lambda o: _planned_matmul(o).execute(release_workspace=0), O,
        "release_workspace"),
    Row("Matmul.reset_operands bias never planned",
        lambda o: _planned_matmul(o).reset_operands(epilog_inputs={"bias": o.BIAS}), P, "epilog_inputs"),
]

FFT_FUNCTIONS = [
    Row("irfftn empty axes", lambda o: nfft.irfftn(o.X, axes=()), O, "axes"),
    Row("fftn repeated axes", lambda o: nfft.fftn(o.X, axes=(0, 0)), O, "axes"),
    Row("fftn axes that repeat modulo ndim", lambda o: nfft.fftn(o.X, axes=(0, -2)), O, "axes"),
    Row("fft2 axis out of range", lambda o: nfft.fft2(o.X, axes=(5, 0)), O, "axes"),
    Row("fftn axes a string", lambda o: nfft.fftn(o.X, axes="01"), O, "axes"),
    Row("fft axis out of range", lambda o: nfft.fft(o.X, axis=2), O, "axis"),
    Row("fft axis a float", lambda o: nfft.fft(o.X, axis=1.0), O, "axis"),
    Row("fft n 0", lambda o: nfft.fft(o.X, n=0), O, "n"),
    Row("fft n negative", lambda o: nfft.fft(o.X, n=-3), O, "n"),
    Row("fft n a float", lambda o: nfft.fft(o.X, n=2.5), O, "n"),
    Row("rfft n a string", lambda o: nfft.rfft(o.R, n="8"), O, "n"),
    Row("fftn s with a 0", lambda o: nfft.fftn(o.X, s=(0, 4)), O, "s"),
    Row("fftn s longer than axes", lambda o: nfft.fftn(o.X, s=(4, 4), axes=(0,)), O, "s"),
    Row("fftn s longer than the operand", lambda o: nfft.fftn(o.X, s=(2, 4, 4)), O, "s"),
    Row("rfftn s a string", lambda o: nfft.rfftn(o.R, s="ab"), O, "s"),
    Row("fft unknown norm", lambda o: nfft.fft(o.X, norm="bogus"), O, "norm"),
    Row("compile_prolog unknown compiler",
        lambda o: nfft.compile_prolog(lambda d, i, u, s: d[i], element_dtype="float32", target="sm_90",
                                      compiler="numba"), O, "compiler", device=False),
    Row("ifft norm an int", lambda o: nfft.ifft(o.X, norm=1), O, "norm"),
    Row("irfft of one point", lambda o: nfft.irfft(o(np.ones((4, 1), complex))), O, "n"),
    Row("hfft2 of one point on the last axis", lambda o: nfft.hfft2(o(np.ones((4, 1), complex))), O, "s"),
    Row("fft of an object", lambda o: nfft.fft(object()), U, "x"),
    Row("fft of a string", lambda o: nfft.fft("text"), U, "x"),
    Row("fft of a dict", lambda o: nfft.fft({"x": 1}), U, "x"),
    Row("fft of a 0-d array", lambda o: nfft.fft(np.array(1 + 0j)), O, "x", device=False),
    Row("rfftn of a 0-d array", lambda o: nfft.rfftn(np.array(2.0)), O, "x", device=False),
    Row("irfftn of a 0-d array", lambda o: nfft.irfftn(np.array(2.0 + 0j)), O, "x", device=False),
    Row("fft along an axis of no points", lambda o: nfft.fft(o(np.ones((3, 0), complex))), O, "x"),
    Row("fft workers 0", lambda o: nfft.fft(o.X, workers=0), O, "workers"),
    Row("fft workers a string", lambda o: nfft.fft(o.X, workers="x"), O, "workers"),
    Row("rfft workers far below -cpu_count", lambda o: nfft.rfft(o.R, workers=-100000), O, "workers"),
    Row("irfftn workers True", lambda o: nfft.irfftn(o.X, workers=True), O, "workers"),
    Row("fft workers a float", lambda o: nfft.fft(o.X, workers=2.0), O, "workers"),
    Row("fft plan a string", lambda o: nfft.fft(o.X, plan="not a plan"), O, "plan"),
    Row("fft plan for another shape", lambda o: nfft.fft(o.X, plan=_planned_fft(o(np.ones((4, 4), complex)))), P,
        "plan"),
    Row("fft of an object array", lambda o: nfft.fft(_unsupported(object)), U, "x", device=False),
    Row("fft of a string array", lambda o: nfft.fft(_unsupported(str)), U, "x", device=False),
    Row("fftn of a bytes array", lambda o: nfft.fftn(_unsupported(bytes)), U, "x", device=False),
    Row("fft of long double", lambda o: nfft.fft(_unsupported(np.longdouble)), U, "x", device=False,
        tags=("longdouble",)),
    Row("ifft of complex long double", lambda o: nfft.ifft(_unsupported(np.clongdouble)), U, "x", device=False,
        tags=("longdouble",)),
    Row("rfft of datetime64", lambda o: nfft.rfft(_unsupported("datetime64[s]")), U, "x", device=False),
    Row("fft of float8", lambda o: nfft.fft(o(_unsupported("float8"))), U, "x"),
    Row("rfft of a complex array", lambda o: nfft.rfft(o.X), U, "x"),
    Row("rfft2 of a complex array", lambda o: nfft.rfft2(o.X), U, "x"),
    Row("rfftn of a complex array", lambda o: nfft.rfftn(o.X), U, "x"),
    Row("ihfft of a complex array", lambda o: nfft.ihfft(o.X), U, "x"),
    Row("ihfftn of a complex array", lambda o: nfft.ihfftn(o.X), U, "x"),
    Row("fftshift axes out of range", lambda o: nfft.fftshift(o.X, axes=5), O, "axes"),
    Row("ifftshift repeated axes", lambda o: nfft.ifftshift(o.X, axes=(1, 1)), O, "axes"),
    Row("fftshift of an object", lambda o: nfft.fftshift(object()), U, "x"),
    Row("rfftn empty axes", lambda o: nfft.rfftn(o.R, axes=[]), O, "axes"),
    Row("hfft2 empty axes", lambda o: nfft.hfft2(o.X, axes=()), O, "axes"),
    Row("ihfftn s empty", lambda o: nfft.ihfftn(o.R, s=[]), O, "axes"),
    Row("fftn s for no axis", lambda o: nfft.fftn(o.X, s=(4,), axes=[]), O, "s"),
    Row("fftn empty axes with a plan", lambda o: nfft.fftn(o.X, axes=[], plan=_planned_fft(o.X)), P, "plan"),
    Row("fft plan for other axes", lambda o: nfft.fft(o.X, plan=_planned_fft(o.X, axes=[0])), P, "plan"),
    Row("fft plan of another dtype",
        lambda o: nfft.fft(o.X, plan=_planned_fft(o(np.ones((4, 8), np.complex64)), axes=[1])), P, "plan"),
    Row("fft plan for another length", lambda o: nfft.fft(o.X, n=16, plan=_planned_fft(o.X, axes=[1])), P, "plan"),
    Row("ifft with an R2C plan", lambda o: nfft.ifft(o.X, plan=_planned_fft(o.R, axes=[1])), P, "plan"),
    Row("irfft with a C2C plan", lambda o: nfft.irfft(o.X, plan=_planned_fft(o.X, axes=[1])), P, "plan"),
    Row("rfft with a C2R plan",
        lambda o: nfft.rfft(o.R, plan=_planned_fft(o.X, axes=[1], options={"fft_type": "C2R"})), P, "plan"),
    Row("fft n a numpy float", lambda o: nfft.fft(o.X, n=np.float64(8.0)), O, "n"),
    Row("fft axis a numpy float", lambda o: nfft.fft(o.X, axis=np.float32(1.0)), O, "axis"),
    Row("fftn axes a float array", lambda o: nfft.fftn(o.X, axes=np.array([0.0, 1.0])), O, "axes"),
    Row("fftn s with a numpy float", lambda o: nfft.fftn(o.X, s=(np.float64(4.0), 8)), O, "s"),
    Row("fft workers numpy True", lambda o: nfft.fft(o.X, workers=np.True_), O, "workers"),
    Row("fft workers a 0-d float array", lambda o: nfft.fft(o.X, workers=np.array(2.0)), O, "workers"),
    Row("fft n True", lambda o: nfft.fft(o.X, n=True), O, "n"),
    Row("rfft n numpy True", lambda o: nfft.rfft(o.R, n=np.True_), O, "n"),
    Row("fft axis True", lambda o: nfft.fft(o.X, axis=True), O, "axis"),
    Row("fftn s [True]", lambda o: nfft.fftn(o.X, s=[True]), O, "s"),
    Row("fftn s True", lambda o: nfft.fftn(o.X, s=True), O, "s"),
    Row("ifft2 s (4, True)", lambda o: nfft.ifft2(o.X, s=(4, True)), O, "s"),
    Row("fftn axes [True]", lambda o: nfft.fftn(o.X, axes=[True]), O, "axes"),
    Row("fft of a ragged list", lambda o: nfft.fft([[1.0, 2.0], [3.0]]), P, "x", device=False),
    Row("rfftn of a ragged tuple", lambda o: nfft.rfftn(((1.0, 2.0), (3.0,))), P, "x", device=False),
    # sizes past any host's or GPU's memory: typed, naming n or s, before scipy or cuFFT tries to allocate them
    *(Row(f"{name} n 2**40", lambda o, name=name: getattr(nfft, name)(o.R if name in _REAL_INPUT else o.X, n=2**40),
          O, "n") for name in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")),
    *(Row(f"{name} s [2**20] * 2",
          lambda o, name=name: getattr(nfft, name)(o.R if name in _REAL_INPUT else o.X, s=[2**20] * 2), O, "s")
      for name in ("fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2", "fftn", "ifftn", "rfftn", "irfftn", "hfftn",
                   "ihfftn")),
    Row("fftn s [2**40] * 2 (past numpy's largest dimension)", lambda o: nfft.fftn(o.X, s=[2**40] * 2), O, "s"),
]

FFT_STATEFUL = [
    Row("FFT of a ragged list", lambda o: nfft.FFT([[1.0, 2.0], [3.0]]), P, "x", device=False),
    Row("FFT empty axes", lambda o: nfft.FFT(o.X, axes=()), O, "axes"),
    Row("FFT repeated axes", lambda o: nfft.FFT(o.X, axes=(0, 0)), O, "axes"),
    Row("FFT axis out of range", lambda o: nfft.FFT(o.X, axes=(3,)), O, "axes"),
    Row("FFT of a 0-d array", lambda o: nfft.FFT(np.array(1 + 0j)), P, "x", device=False),
    Row("FFT of an object", lambda o: nfft.FFT(object()), U, "x"),
    Row("FFT of an object array", lambda o: nfft.FFT(_unsupported(object)), U, "x", device=False),
    Row("FFT of long double", lambda o: nfft.FFT(_unsupported(np.longdouble)), U, "x", device=False,
        tags=("longdouble",)),
    Row("FFT of float8", lambda o: nfft.FFT(o(_unsupported("float8"))), U, "x"),
    Row("FFT fft_type unknown", lambda o: nfft.FFT(o.X, options={"fft_type": "X2Y"}), O, "options.fft_type"),
    Row("FFT R2C of a complex operand", lambda o: nfft.FFT(o.X, options={"fft_type": "R2C"}), O, "options.fft_type"),
    Row("FFT C2R of a real operand", lambda o: nfft.FFT(o.R, options={"fft_type": "C2R"}), O, "options.fft_type"),
    Row("FFT inplace C2R", lambda o: nfft.FFT(o.X, options={"inplace": True, "fft_type": "C2R"}), O,
        "options.inplace"),
    Row("FFT inplace of a real operand", lambda o: nfft.FFT(o.R, options={"inplace": True}), O, "options.inplace"),
    Row("FFT inplace 'yes'", lambda o: nfft.FFT(o.X, options={"inplace": "yes"}), O, "options.inplace"),
    Row("FFT last_axis_parity", lambda o: nfft.FFT(o.X, options={"fft_type": "C2R", "last_axis_parity": "neither"}),
        O, "options.last_axis_parity"),
    Row("FFT unknown option", lambda o: nfft.FFT(o.X, options={"bogus": 1}), O, "options"),
    Row("FFT options an int", lambda o: nfft.FFT(o.X, options=5), O, "options"),
    Row("FFT blocking False", lambda o: nfft.FFT(o.X, options={"blocking": False}), O, "options.blocking"),
    Row("FFT memory_resource an object", lambda o: nfft.FFT(o.X, options={"memory_resource": object()}), O,
        "options.memory_resource"),
    Row("FFT logger a string", lambda o: nfft.FFT(o.X, options={"logger": "log"}), O, "options.logger"),
    Row("FFT engine unknown", lambda o: nfft.FFT(o.X, options={"engine": "vkfft"}), O, "options.engine"),
    Row("FFT engine fused on the CPU", lambda o: nfft.FFT(o.X, options={"engine": "fused"}), O, "options.engine",
        device=False),
    Row("FFT engine fused over two axes of a float16 operand (a converting copy)",
        lambda o: _planned_fft(o(np.ones((4, 8), np.float16)), options={"engine": "fused"}), O, "options.engine"),
    Row("FFT execution 'tpu'", lambda o: nfft.FFT(o.X, execution="tpu"), O, "execution"),
    Row("FFT stream with CPU execution", lambda o: nfft.FFT(o.X, stream=0), O, "stream", device=False),
    Row("FFT inplace of a read-only array", lambda o: nfft.FFT(_read_only(o.X), options={"inplace": True}), P, "x",
        device=False),
    Row("FFT.execute unknown direction", lambda o: _planned_fft(o.X).execute("sideways"), O, "direction"),
    Row("FFT.execute direction True", lambda o: _planned_fft(o.X).execute(True), O, "direction"),
    Row("FFT.execute R2C inverse", lambda o: _planned_fft(o.R).execute("inverse"), O, "direction"),
    Row("FFT.execute stream on the CPU", lambda o: _planned_fft(o.X).execute(stream=0), O, "stream", device=False),
    Row("FFT.reset_operand of another shape", lambda o: _planned_fft(o.X).reset_operand(o(np.ones((4, 9), complex))),
        P, "x"),
    Row("FFT.reset_operand of another dtype",
        lambda o: _planned_fft(o.X).reset_operand(o(np.ones((4, 8), np.complex64))), P, "x"),
    Row("FFT.reset_operand of other strides",
        lambda o: _planned_fft(np.ones((8, 8), complex)).reset_operand(np.ones((8, 16), complex)[:, ::2]), P, "x",
        device=False),
    Row("FFT.reset_operand read-only in place",
        lambda o: _planned_fft(o.X.copy(), options={"inplace": True}).reset_operand(_read_only(o.X)), P, "x",
        device=False),
    Row("FFT.reset_operand not an array", lambda o: _planned_fft(o.X).reset_operand("x"), U, "x"),
    Row("FFT inplace of a torch conj view",
        lambda o: nfft.FFT(_torch_cpu(o.X.copy()).conj(), options={"inplace": True}), P, "x", device=False),
    Row("FFT inplace of a torch tensor requiring grad",
        lambda o: nfft.FFT(_torch_cpu(o.X.copy()).requires_grad_(), options={"inplace": True}), P, "x", device=False),
    Row("FFT inplace of a torch negative view", lambda o: nfft.FFT(_neg_view(o.X.copy()), options={"inplace": True}),
        P, "x", device=False),
    Row("FFT inplace of a torch expanded row",
        lambda o: nfft.FFT(_torch_cpu(o.X.copy())[:1].expand(4, 8), options={"inplace": True}), P, "x", device=False),
    Row("FFT inplace of a zero stride", lambda o: nfft.FFT(as_strided(o.X[0].copy(), (4, 8), (0, 16)),
                                                            options={"inplace": True}), P, "x", device=False),
    Row("FFT inplace of overlapping strides", lambda o: nfft.FFT(as_strided(o.X.copy(), (4, 8), (16, 16)),
                                                                  options={"inplace": True}), P, "x", device=False),
    Row("FFT inplace of a list", lambda o: nfft.FFT(o.X.tolist(), options={"inplace": True}), P, "x", device=False),
    Row("FFT.reset_operand lazy conj view in place",
        lambda o: _planned_fft(_torch_cpu(o.X.copy()), options={"inplace": True}).reset_operand(
            _torch_cpu(o.X.copy()).conj()), P, "x", device=False),
    Row("FFT axes a float array", lambda o: nfft.FFT(o.X, axes=np.array([0.5])), O, "axes"),
    Row("FFT.execute direction numpy True", lambda o: _planned_fft(o.X).execute(np.True_), O, "direction"),
    Row("FFT.execute direction -1.0", lambda o: _planned_fft(o.X).execute(-1.0), O, "direction"),
    Row("FFT.execute direction a 0-d float array", lambda o: _planned_fft(o.X).execute(np.array(-1.0)), O,
        "direction"),
    Row("ExecutionCPU num_threads numpy True", lambda o: ExecutionCPU(num_threads=np.True_), O,
        "execution.num_threads", device=False),
    Row("ExecutionCPU num_threads a numpy float", lambda o: ExecutionCPU(num_threads=np.float64(2.0)), O,
        "execution.num_threads", device=False),
]

DISTRIBUTED = [  # the argument checks that need no distributed context
    Row("distributed.allocate dtype object", lambda o: distributed.allocate((8, 6), "object", _BOX), O, "dtype",
        device=False),
    Row("distributed.allocate dtype str", lambda o: distributed.allocate((8, 6), str, _BOX), O, "dtype",
        device=False),
    Row("distributed.allocate dtype unknown", lambda o: distributed.allocate((8, 6), "float99", _BOX), O, "dtype",
        device=False),
    Row("distributed.allocate negative extent", lambda o: distributed.allocate((4, -4), np.float64), O,
        "global_shape", device=False),
    Row("distributed.allocate float extent", lambda o: distributed.allocate((4.5, 4), np.float64), O,
        "global_shape", device=False),
    Row("distributed.local_shape bool extent", lambda o: distributed.local_shape((True, 4), rank=0, world_size=1), O,
        "global_shape", device=False),
    Row("distributed.local_box global_shape an int", lambda o: distributed.local_box(8, rank=0, world_size=1), O,
        "global_shape", device=False),
]

PLAN_CACHES = [
    Row("matmul plan_cache.info('x')", lambda o: matmul_plan_cache.info("x"), O, "device_id"),
    Row("matmul plan_cache.info(-5)", lambda o: matmul_plan_cache.info(-5), O, "device_id"),
    Row("fft plan_cache.info(-1)", lambda o: nfft.plan_cache.info(-1), O, "device_id"),
    Row("fft plan_cache.keys(1.5)", lambda o: nfft.plan_cache.keys(1.5), O, "device_id"),
    Row("matmul plan_cache.set_limits(max_size=-1)", lambda o: matmul_plan_cache.set_limits(max_size=-1), O,
        "max_size"),
    Row("fft plan_cache.set_limits(max_memory_bytes='x')", lambda o: nfft.plan_cache.set_limits(max_memory_bytes="x"),
        O, "max_memory_bytes"),
]

DEVICE_API = [
    Row("device FFT size 0", lambda o: _device_fft(size=0), O, "size", device=False),
    Row("device FFT size 1", lambda o: _device_fft(size=1), O, "size", device=False),
    Row("device FFT size negative", lambda o: _device_fft(size=-4), O, "size", device=False),
    Row("device FFT size a float", lambda o: _device_fft(size=2.5), O, "size", device=False),
    Row("device FFT size a string", lambda o: _device_fft(size="64"), O, "size", device=False),
    Row("device FFT size True", lambda o: _device_fft(size=True), O, "size", device=False),
    Row("device FFT precision complex64", lambda o: _device_fft(precision=np.complex64), O, "precision",
        device=False),
    Row("device FFT precision float16", lambda o: _device_fft(precision=np.float16), O, "precision", device=False),
    Row("device FFT precision not a dtype", lambda o: _device_fft(precision="not a dtype"), O, "precision",
        device=False),
    Row("device FFT fft_type r2r", lambda o: _device_fft(fft_type="r2r"), O, "fft_type", device=False),
    Row("device FFT c2c without a direction", lambda o: _device_fft(direction=None), O, "direction", device=False),
    Row("device FFT direction 'backward'", lambda o: _device_fft(direction="backward"), O, "direction", device=False),
    Row("device FFT r2c inverse", lambda o: _device_fft(fft_type="r2c", direction="inverse"), O, "direction",
        device=False),
    Row("device FFT c2r forward", lambda o: _device_fft(fft_type="c2r", direction="forward"), O, "direction",
        device=False),
    Row("device FFT real_mode unknown", lambda o: _device_fft(fft_type="r2c", direction=None, real_mode="packed"), O,
        "real_mode", device=False),
    Row("device FFT c2c folded", lambda o: _device_fft(real_mode="folded"), O, "real_mode", device=False),
    Row("device FFT folded odd size", lambda o: _device_fft(size=17, fft_type="r2c", direction=None,
                                                              real_mode="folded"), O, "real_mode", device=False),
    Row("device FFT folded size cuFFTDx lacks", lambda o: _device_fft(size=180, fft_type="c2r", direction=None,
                                                                        real_mode="folded"), O, "real_mode",
        device=False, needs_mathdx=True),
    Row("device FFT execution 'Warp'", lambda o: _device_fft(execution="Warp"), O, "execution", device=False),
    Row("device FFT sm (6, 1)", lambda o: _device_fft(sm=(6, 1)), O, "sm", device=False),
    Row("device FFT sm 'gfx90a'", lambda o: _device_fft(sm="gfx90a"), O, "sm", device=False),
    Row("device FFT sm 9.0", lambda o: _device_fft(sm=9.0), O, "sm", device=False),
    Row("device FFT elements_per_thread 0", lambda o: _device_fft(elements_per_thread=0), O, "elements_per_thread",
        device=False),
    Row("device FFT ffts_per_block negative", lambda o: _device_fft(ffts_per_block=-1), O, "ffts_per_block",
        device=False),
    Row("device FFT ffts_per_block 'many'", lambda o: _device_fft(ffts_per_block="many"), O, "ffts_per_block",
        device=False),
    Row("device FFT size beyond cuFFTDx", lambda o: _device_fft(size=1 << 20), O, "size", device=False,
        needs_mathdx=True),
    Row("device FFT untuned elements_per_thread", lambda o: _device_fft(size=1024, elements_per_thread=3), O,
        "elements_per_thread", device=False, needs_mathdx=True),
    Row("device Matmul size of two", lambda o: _device_matmul(size=(8, 8)), O, "size", device=False),
    Row("device Matmul size with a 0", lambda o: _device_matmul(size=(8, 0, 8)), O, "size", device=False),
    Row("device Matmul precision int32", lambda o: _device_matmul(precision=np.int32), O, "precision", device=False),
    Row("device Matmul data_type", lambda o: _device_matmul(data_type="quaternion"), O, "data_type", device=False),
    Row("device Matmul arrangement", lambda o: _device_matmul(arrangement="diagonal"), O, "arrangement",
        device=False),
    Row("device Matmul arrangement of two", lambda o: _device_matmul(arrangement=("row_major", "col_major")), O,
        "arrangement", device=False),
    Row("device Matmul block_dim of 2048 threads", lambda o: _device_matmul(block_dim=(2048, 1, 1)), O, "block_dim",
        device=False),
    Row("device Matmul block_dim with a 0", lambda o: _device_matmul(block_dim=(0, 1, 1)), O, "block_dim",
        device=False),
    Row("device Matmul block_dim a string", lambda o: _device_matmul(block_dim="large"), O, "block_dim",
        device=False),
    Row("device Matmul leading_dimension of two", lambda o: _device_matmul(leading_dimension=(1, 2)), O,
        "leading_dimension", device=False),
    Row("device Matmul sm (5, 2)", lambda o: _device_matmul(sm=(5, 2)), O, "sm", device=False),
    Row("device Matmul tiles beyond shared memory", lambda o: _device_matmul(size=(512, 512, 512)), O, "size",
        device=False, needs_mathdx=True),
    Row("device Solver lda under the rows", lambda o: _device_solver(leading_dimension=(15, 16)), O,
        "leading_dimension", device=False),
    Row("device Solver one leading dimension for a solve", lambda o: _device_solver(leading_dimension=(17,)), O,
        "leading_dimension", device=False),
    Row("device Solver leading_dimension 'padded'", lambda o: _device_solver(leading_dimension="padded"), O,
        "leading_dimension", device=False),
    Row("device Solver padding beyond shared memory", lambda o: _device_solver(
        size=(120, 120, 1), dtype=np.complex128, leading_dimension=(256, 120)), O, "size", device=False),
    Row("device Random direction vectors of xorwow", lambda o: _device_random("xorwow").direction_vectors(4), O,
        "generator", device=False),
    Row("device Random scramble constants of sobol32", lambda o: _device_random().scramble_constants(4), O,
        "generator", device=False),
    Row("device Random 0 Sobol dimensions", lambda o: _device_random().direction_vectors(0), O, "dimensions",
        device=False),
    Row("device Random 20001 Sobol dimensions", lambda o: _device_random("sobol64").direction_vectors(20_001), O,
        "dimensions", device=False),
    Row("device Random Sobol dimensions 2.0", lambda o: _device_random().direction_vectors(2.0), O, "dimensions",
        device=False),
]



def _torch_float8():
    """nvmathx.torch's float8 names (the rows skip where torch is missing)."""
    pytest.importorskip("torch")
    import nvmathx.torch as nvmathx_torch

    return nvmathx_torch


class _StandInGroup:
    """Has what Float8Recipe asks of a torch.distributed ProcessGroup (a size)."""

    def size(self):
        return 1


def _recipe(**kwargs):
    return _torch_float8().Float8Recipe(**kwargs)


def _float8_call(function, state_kind=None, recipe=None, **kwargs):
    """``function`` ("fused_linear" or "fused_mlp") on small CPU tensors with the given fp8 arguments."""
    module = _torch_float8()  # skips without torch
    import torch

    x, w = torch.ones(16, 16), torch.ones(16, 16)
    if state_kind is not None:
        kwargs["fp8_state"] = module.Float8State(recipe or module.Float8Recipe(), state_kind)
    if function == "fused_linear":
        return module.fused_linear(x, w, **kwargs)
    return module.fused_mlp(x, w, None, w, None, **kwargs)


TORCH_FLOAT8 = [
    Row("Float8Recipe scaling 'blockwise'", lambda o: _recipe(scaling="blockwise"), O, "scaling", device=False),
    Row("Float8Recipe format 'e5m2'", lambda o: _recipe(format="e5m2"), O, "format", device=False),
    Row("Float8Recipe amax_history_len 0", lambda o: _recipe(amax_history_len=0), O, "amax_history_len",
        device=False),
    Row("Float8Recipe amax_history_len 2.0", lambda o: _recipe(amax_history_len=2.0), O, "amax_history_len",
        device=False),
    Row("Float8Recipe margin -1", lambda o: _recipe(margin=-1), O, "margin", device=False),
    Row("Float8Recipe margin 17", lambda o: _recipe(margin=17), O, "margin", device=False),
    Row("Float8Recipe amax_compute_algo 'mean'", lambda o: _recipe(amax_compute_algo="mean"), O,
        "amax_compute_algo", device=False),
    Row("Float8Recipe fast_accumulation 1", lambda o: _recipe(fast_accumulation=1), O, "fast_accumulation",
        device=False),
    Row("Float8Recipe process_group 'world'", lambda o: _recipe(process_group="world"), O, "process_group",
        device=False),
    Row("Float8State kind 'conv'", lambda o: _torch_float8().Float8State(_recipe(), "conv"), O, "kind",
        device=False),
    Row("Float8State kind a list", lambda o: _torch_float8().Float8State(_recipe(), ["linear"]), O, "kind",
        device=False),
    Row("Float8State recipe a dict", lambda o: _torch_float8().Float8State({"scaling": "delayed"}), O, "recipe",
        device=False),
    Row("FusedLinear fp8 a string", lambda o: _torch_float8().FusedLinear(16, 16, fp8="e4m3"), O, "fp8",
        device=False),
    Row("FusedMLP fp8 True", lambda o: _torch_float8().FusedMLP(16, 32, fp8=True), O, "fp8", device=False),
    Row("fused_linear delayed scaling without a state", lambda o: _float8_call("fused_linear", fp8=_recipe()), O,
        "fp8_state", device=False),
    Row("fused_linear state of kind mlp", lambda o: _float8_call("fused_linear", "mlp", fp8=_recipe()), O,
        "fp8_state", device=False),
    Row("fused_mlp state without a recipe", lambda o: _float8_call("fused_mlp", "mlp"), O, "fp8_state",
        device=False),
    Row("fused_mlp state of another recipe",
        lambda o: _float8_call("fused_mlp", "mlp", _recipe(margin=1), fp8=_recipe()), O, "fp8_state", device=False),
    # recipes compare equal whatever their group: a state without the call's group would skip the reduction
    Row("fused_linear state of another process group",
        lambda o: _float8_call("fused_linear", "linear", _recipe(), fp8=_recipe(process_group=_StandInGroup())), O,
        "fp8_state", device=False),
]

def _spd(n=4):
    """A small SPD CSR matrix (host) for the direct solver's rows."""
    import scipy.sparse

    return scipy.sparse.csr_array(np.diag(np.arange(2.0, 2.0 + n)) + np.diag(np.ones(n - 1), 1)
                                  + np.diag(np.ones(n - 1), -1))


def _sparse_solver_reset(**kwargs):
    from nvmathx.sparse import DirectSolver

    solver = DirectSolver(_spd(), np.ones(4))
    solver.reset_operands(**kwargs)


def _sparse_solve(a=None, b=None, **kwargs):
    from nvmathx.sparse import spsolve

    return spsolve(_spd() if a is None else a, np.ones(4) if b is None else b, **kwargs)


SPARSE_SOLVER = [
    Row("spsolve of a dense a", lambda o: _sparse_solve(a=np.eye(4)), UnsupportedOperandError, "a", device=False),
    Row("spsolve of a non-square a", lambda o: _sparse_solve(a=_spd()[:3]), OperandError, "a", device=False),
    Row("spsolve of integer a", lambda o: _sparse_solve(a=_spd().astype(np.int64)), UnsupportedOperandError, "a",
        device=False),
    Row("spsolve b of another length", lambda o: _sparse_solve(b=np.ones(5)), OperandError, "b", device=False),
    Row("spsolve b of another dtype", lambda o: _sparse_solve(b=np.ones(4, np.float32)), OperandError, "b",
        device=False),
    Row("spsolve 3-D b", lambda o: _sparse_solve(b=np.ones((4, 1, 1))), OperandError, "b", device=False),
    Row("spsolve NaN in b", lambda o: _sparse_solve(b=np.full(4, np.nan)), OperandError, "b", device=False),
    Row("spsolve unknown matrix type", lambda o: _sparse_solve(options={"matrix_type": "tridiagonal"}), OptionsError,
        "options.matrix_type", device=False),
    Row("spsolve triangle of a general matrix", lambda o: _sparse_solve(options={"triangle": "upper"}), OptionsError,
        "options.triangle", device=False),
    Row("spsolve Hermitian real matrix", lambda o: _sparse_solve(options={"matrix_type": "hpd"}), OptionsError,
        "options.matrix_type", device=False),
    Row("spsolve negative refinement", lambda o: _sparse_solve(options={"refinement_steps": -2}), OptionsError,
        "options.refinement_steps", device=False),
    Row("spsolve zero host threads", lambda o: _sparse_solve(options={"host_threads": 0}), OptionsError,
        "options.host_threads", device=False),
    Row("spsolve host threads as a bool", lambda o: _sparse_solve(options={"host_threads": True}), OptionsError,
        "options.host_threads", device=False),
    Row("spsolve host threads past a 32-bit int", lambda o: _sparse_solve(options={"host_threads": 1 << 31}),
        OptionsError, "options.host_threads", device=False),
    Row("spsolve unknown execution", lambda o: _sparse_solve(execution="tpu"), OptionsError, "execution",
        device=False),
    Row("sparse DirectSolver reset with a new pattern",
        lambda o: _sparse_solver_reset(a=_spd() + _spd() @ _spd()), OperandError, "a", device=False),
    Row("sparse DirectSolver reset with b of another shape",
        lambda o: _sparse_solver_reset(b=np.ones((4, 2))), OperandError, "b", device=False),
]


# sparse @ dense: S is a 4x3 CSR float32 matrix of the space (scipy / cupyx or torch), B a 3x5 dense matrix
SPARSE_MATMUL = [
    Row("sparse matmul a dense", lambda o: sparse_matmul(o.A, o.B), U, "a"),
    Row("sparse matmul a a string", lambda o: sparse_matmul("not sparse", o.B), U, "a"),
    Row("sparse matmul a DIA", lambda o: sparse_matmul(_dia(np.eye(3)), np.ones(3)), U, "a", device=False),
    Row("sparse matmul a int64 values",
        lambda o: sparse_matmul(o.sparse(np.eye(4, 3, dtype=np.int64)), o(np.ones((3, 5), np.int64))), U, "a"),
    Row("sparse matmul b of the wrong length", lambda o: sparse_matmul(o.S, o(np.ones((4, 5), np.float32))), P, "b"),
    Row("sparse matmul b 3-D", lambda o: sparse_matmul(o.S, o(np.ones((3, 5, 2), np.float32))), P, "b"),
    Row("sparse matmul b float64, a float32", lambda o: sparse_matmul(o.S, o(np.ones((3, 5)))), P, "b"),
    Row("sparse matmul b a dict", lambda o: sparse_matmul(o.S, {"b": 1}), U, "b"),
    Row("sparse matmul b of another library", lambda o: sparse_matmul(o.S, _torch_cpu(np.ones((3, 5), np.float32))),
        U, "b", device=False),
    Row("sparse matmul c of the wrong shape",
        lambda o: sparse_matmul(o.S, o.B, o(np.ones((4, 4), np.float32)), beta=1), P, "c"),
    Row("sparse matmul c float64", lambda o: sparse_matmul(o.S, o.B, o(np.ones((4, 5))), beta=1), P, "c"),
    Row("sparse matmul beta without c", lambda o: sparse_matmul(o.S, o.B, beta=2.0), O, "beta"),
    Row("sparse matmul complex alpha, real operands", lambda o: sparse_matmul(o.S, o.B, alpha=1j), O, "alpha"),
    Row("sparse matmul transpose_a 'yes'", lambda o: sparse_matmul(o.S, o.B, transpose_a="yes"), O, "transpose_a"),
    Row("sparse matmul a.T shapes", lambda o: sparse_matmul(o.S, o.B, transpose_a=True), P, "b"),
    Row("sparse matmul options an int", lambda o: sparse_matmul(o.S, o.B, options=3), O, "options"),
    Row("sparse matmul options.algorithm", lambda o: sparse_matmul(o.S, o.B, options={"algorithm": "fast"}), O,
        "options.algorithm"),
    Row("sparse MatmulOptions blocking False", lambda o: SparseMatmulOptions(blocking=False), O, "options.blocking"),
    Row("sparse matmul execution 'tpu'", lambda o: sparse_matmul(o.S, o.B, execution="tpu"), O, "execution"),
    Row("sparse Matmul stream on the CPU", lambda o: SparseMatmul(o.S, o.B, stream=0), O, "stream", device=False),
    Row("sparse Matmul reset a of another pattern",
        lambda o: _planned_sparse(o).reset_operands(o.sparse(np.eye(4, 3, k=1, dtype=np.float32))), P, "a"),
    Row("sparse Matmul reset a of another shape",
        lambda o: _planned_sparse(o).reset_operands(o.sparse(np.eye(5, 3, dtype=np.float32))), P, "a"),
    Row("sparse Matmul reset b of another shape",
        lambda o: _planned_sparse(o).reset_operands(b=o(np.ones((3, 6), np.float32))), P, "b"),
    Row("sparse Matmul reset c not given", lambda o: _planned_sparse(o).reset_operands(c=o.C), P, "c"),
]


CATALOGUE = (MATMUL + SPARSE_MATMUL + MATMUL_STATEFUL + SOLVERS + FFT_FUNCTIONS + FFT_STATEFUL + DISTRIBUTED
             + PLAN_CACHES + DEVICE_API + TORCH_FLOAT8 + SPARSE_SOLVER)


def _rows(space):
    for row in CATALOGUE:
        if space != "cpu" and not row.device:
            continue
        marks = [pytest.mark.gpu] if space == "gpu" else []
        if row.needs_mathdx and mathdx_missing():
            marks.append(pytest.mark.skip(reason=mathdx_missing()))
        if "longdouble" in row.tags and np.dtype(np.longdouble).itemsize == 8:
            marks.append(pytest.mark.skip(reason="long double is double precision on this platform"))
        yield pytest.param(space, row, id=f"{space}: {row.label}", marks=marks)


@pytest.fixture
def fail_on_hang():
    """A call that hangs fails after HANG_SECONDS instead of stalling the run."""

    def hung(signum, frame):
        raise TimeoutError(f"the call did not return within {HANG_SECONDS} s")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(HANG_SECONDS)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


@pytest.fixture
def space_ready(monkeypatch):
    """Install the host stand-ins of the device for the fake-gpu space (on request)."""

    installed = []

    def install(space):
        if space == "fake-gpu":
            from fft._fake_device import install as install_cufft
            from linalg._fake_cublaslt import install as install_cublaslt

            install_cublaslt(monkeypatch)
            install_cufft(monkeypatch)
            nfft.plan_cache.clear()
            installed.append(space)

    yield install
    if installed:
        gc.collect()  # plans made by the rows are freed while the stand-ins are still installed
    nfft.plan_cache.clear()
    matmul_plan_cache.clear()
    sparse_plan_cache.clear()


def test_the_catalogue_is_large_and_distinct():
    labels = [row.label for row in CATALOGUE]
    assert len(CATALOGUE) >= 100 and len(set(labels)) == len(labels)
    assert sum(row.device for row in CATALOGUE) >= 60


@pytest.mark.parametrize("space, row", [*_rows("cpu"), *_rows("fake-gpu"), *_rows("gpu")])
def test_bad_call_raises_a_typed_error_naming_the_argument(space, row, fail_on_hang, space_ready):
    space_ready(space)
    operands = Operands(space)
    with pytest.raises(row.error) as info:
        returned = row.call(operands)
        pytest.fail(f"returned {type(returned).__name__} instead of raising")
    error = info.value
    assert isinstance(error, NvmathxError) and isinstance(error, (ValueError, TypeError, DeviceUnavailableError))
    assert not isinstance(error, InvalidStateError)
    assert str(error).startswith(f"{row.argument}: "), str(error)
    assert getattr(error, "argument", row.argument) == row.argument
