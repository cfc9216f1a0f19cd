"""cuBLASLt plans: the descriptors and layouts of one problem, and the queries that find and check
its algorithms (the launch itself is :class:`~nvmathx.linalg._runner.GpuRunner`'s).
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

import numpy as np

from .._bindings import cublaslt as lt
from .._core.device import ensure_device
from .._core.dtypes import numpy_dtype
from .._core.errors import OperandError
from ._options import COMPUTE_TYPES, MatmulOptions, MatmulPlanPreferences
from ._problem import MatmulProblem
from ._traits import LtTraits

__all__ = ["MatmulAlgorithm", "LtPlan", "lt_handle", "workspace_bytes_for", "custom_option_variants",
           "EPILOG_WORKSPACE_PAD"]

_D = lt.MatmulDescAttribute
_L = lt.MatrixLayoutAttribute
_P = lt.PreferenceAttribute
_OUTPUT_PLACEHOLDER = 256  # a well-aligned stand-in for output pointers not known at plan time

_handles: dict[int, int] = {}


def lt_handle(device_id: int) -> int:
    """The process's cuBLASLt handle for a device (created once, with the device current)."""
    handle = _handles.get(device_id)
    if handle is None:
        ensure_device(device_id)
        handle = _handles[device_id] = lt.create()
    return handle


@dataclass(frozen=True, eq=False)
class MatmulAlgorithm:
    """One cuBLASLt algorithm for a planned problem.

    Picklable; hand a list of them back to :meth:`Matmul.plan` (``algorithms=``) to skip the
    heuristic for the same problem. Two are equal when their configurations are (the kernel, its
    tile, split-K, swizzle, custom option, stages and cluster shape): the opaque bytes may differ
    between two heuristic queries that return the same algorithm.

    Attributes
    ----------
    algo : bytes
        The opaque 64-byte ``cublasLtMatmulAlgo_t``.
    workspace_size : int
        Workspace bytes it needs.
    waves_count : float
        Device occupancy the heuristic predicts (1.0 = one full wave of the SMs).
    config : tuple of int
        The configuration attributes, in the order of ``cublasLtMatmulAlgoConfigAttributes_t``
        (id, tile, splitk, reduction, swizzle, custom_option, stages, inner_shape, cluster_shape).
    """

    algo: bytes
    workspace_size: int
    waves_count: float
    config: tuple = ()

    def _identity(self):
        return self.config or self.algo  # the bytes where no configuration was read

    def __eq__(self, other):
        if not isinstance(other, MatmulAlgorithm):
            return NotImplemented
        return self._identity() == other._identity()

    def __hash__(self):
        return hash(self._identity())

    def __repr__(self):
        named = ", ".join(f"{name}={value}" for name, value in zip(lt.ALGO_CONFIG_NAMES, self.config))
        return (f"MatmulAlgorithm({named + ', ' if named else ''}workspace_size={self.workspace_size}, "
                f"waves_count={self.waves_count:.3f})")


def algorithm_of(algo: bytes, workspace_size: int, waves_count: float) -> MatmulAlgorithm:
    """A MatmulAlgorithm of ``algo`` with its configuration read from cuBLASLt."""
    algo = bytes(algo)
    return MatmulAlgorithm(algo, int(workspace_size), float(waves_count), lt.algo_config(algo))


def _algorithm(result: lt.HeuristicResult) -> MatmulAlgorithm:
    return algorithm_of(bytes(result.algo), result.workspaceSize, result.wavesCount)


# nvmath-python allocates this much beyond the largest reported workspace when an epilog is fused
# (a workaround for a cuBLASLt issue); so do we: 16 bytes cost nothing.
EPILOG_WORKSPACE_PAD = 16


def workspace_bytes_for(algorithms, epilog: bool) -> int:
    """The workspace for a plan: the largest any candidate reported (so that autotuning and
    ``execute(algorithm=...)`` may run any of them), plus :data:`EPILOG_WORKSPACE_PAD` with an
    epilog; 0 when no candidate needs any."""
    needed = max((algorithm.workspace_size for algorithm in algorithms), default=0)
    return needed + EPILOG_WORKSPACE_PAD if needed and epilog else needed


def custom_option_variants(algorithms, option_max, with_option, check) -> list:
    """Every algorithm of ``algorithms`` with each other custom option it accepts, in the order of
    ``algorithms`` then of the options; duplicates and the variants ``check`` rejects are left out.

    ``option_max(algo)`` is an algorithm's largest custom option, ``with_option(algo, option)`` its
    bytes with that option, and ``check(algo)`` the checked :class:`MatmulAlgorithm` or None.
    """
    seen_bytes = {algorithm.algo for algorithm in algorithms}  # no second check of the same bytes
    seen = set(algorithms)  # nor a second copy of one configuration
    variants = []
    for algorithm in algorithms:
        for option in range(option_max(algorithm.algo) + 1):
            algo = with_option(algorithm.algo, option)
            if algo in seen_bytes:
                continue
            seen_bytes.add(algo)
            checked = check(algo)
            if checked is not None and checked not in seen:
                seen.add(checked)
                variants.append(checked)
    return variants


def _custom_option_max(algo: bytes) -> int:
    """An algorithm's largest custom option; 0 (no variants) where cuBLASLt does not say."""
    try:
        return lt.algo_custom_option_max(algo)
    except lt.CublasLtError:
        return 0


class LtPlan:
    """The descriptors and layouts of one problem, and its scalars (alpha and beta, read by the
    library at launch).

    Built by :meth:`create`; :meth:`free` destroys the descriptors (safe to call twice).
    """

    def __init__(self, problem: MatmulProblem, traits: LtTraits, device_id: int, options: MatmulOptions):
        self.problem = problem
        self.traits = traits
        self.device_id = device_id
        self.options = options
        self.handle = lt_handle(device_id)
        self.desc = 0
        self.layouts: list[int] = []
        scale_dtype = numpy_dtype(problem.scale_type)
        self.alpha = np.zeros(1, scale_dtype)
        self.beta = np.zeros(1, scale_dtype)
        self.freed = False

    @classmethod
    def create(cls, problem, traits, device_id, options) -> "LtPlan":
        plan = cls(problem, traits, device_id, options)
        try:
            plan._build_descriptors()
        except BaseException:
            plan.free()
            raise
        return plan

    # -- descriptors ---------------------------------------------------------------------------

    def _build_descriptors(self):
        problem, traits, options = self.problem, self.traits, self.options
        self.desc = lt.matmul_desc_create(COMPUTE_TYPES[problem.compute_type], lt.DTYPE_NAMES[problem.scale_type])
        desc = self.desc
        lt.matmul_desc_set(desc, _D.TRANSA, traits.lt_a.op)
        lt.matmul_desc_set(desc, _D.TRANSB, traits.lt_b.op)
        if options.sm_count_target:
            lt.matmul_desc_set(desc, _D.SM_COUNT_TARGET, options.sm_count_target)
        if options.fast_accumulation:
            lt.matmul_desc_set(desc, _D.FAST_ACCUM, 1)
        if problem.result_amax:  # the heuristic must see it (the runner points it at each call's output)
            lt.matmul_desc_set(desc, _D.AMAX_D_POINTER, _OUTPUT_PLACEHOLDER)
        epilog = problem.epilog
        if epilog is not None:
            lt.matmul_desc_set(desc, _D.EPILOGUE, epilog.lt_code)
            if problem.bias_mode == "fused" or epilog.bgrad:
                lt.matmul_desc_set(desc, _D.BIAS_POINTER, _OUTPUT_PLACEHOLDER)
                stride = traits.bias_batch_stride if epilog.bias else traits.bgrad_batch_stride
                lt.matmul_desc_set(desc, _D.BIAS_BATCH_STRIDE, stride)
            if epilog.aux_output or epilog.aux_input:
                lt.matmul_desc_set(desc, _D.EPILOGUE_AUX_POINTER, _OUTPUT_PLACEHOLDER)
                lt.matmul_desc_set(desc, _D.EPILOGUE_AUX_LD, traits.aux_ld)
                lt.matmul_desc_set(desc, _D.EPILOGUE_AUX_BATCH_STRIDE, traits.aux_batch_stride)
        lt_dtype = lt.DTYPE_NAMES
        self.a_layout = self._layout(lt_dtype[problem.b_dtype], traits.lt_a)
        self.b_layout = self._layout(lt_dtype[problem.a_dtype], traits.lt_b)
        self.d_layout = self._layout(lt_dtype[problem.result_dtype], traits.lt_d)
        if traits.lt_c is not None:
            self.c_layout = self._layout(lt_dtype[problem.lt_c_dtype], traits.lt_c)
        elif problem.lt_c_dtype != problem.result_dtype:
            self.c_layout = self._layout(lt_dtype[problem.lt_c_dtype], traits.lt_d)
        else:
            self.c_layout = self.d_layout

    def _layout(self, data_type, matrix) -> int:
        layout = lt.matrix_layout_create(data_type, matrix.rows, matrix.cols, matrix.ld)
        self.layouts.append(layout)
        if self.traits.batch_count > 1:
            lt.matrix_layout_set(layout, _L.BATCH_COUNT, self.traits.batch_count)
            lt.matrix_layout_set(layout, _L.STRIDED_BATCH_OFFSET, matrix.batch_stride)
        return layout

    def set_pointer(self, attribute: lt.MatmulDescAttribute, ptr: int) -> None:
        """Point a descriptor attribute (bias, aux, scales, amax) at ``ptr``."""
        lt.matmul_desc_set(self.desc, attribute, ptr)

    def _operands(self) -> tuple[int, int, int, int, int, int]:
        return (self.handle, self.desc, self.a_layout, self.b_layout, self.c_layout, self.d_layout)

    def launch_arguments(self, a, b, c, d, algo, workspace, workspace_size, stream) -> tuple:
        """cublasLtMatmul's sixteen arguments in its order, around the caller's pointer slots
        (``ctypes.c_void_p``; ``workspace_size`` a ``c_size_t``, ``algo`` a 64-byte buffer)."""
        p = ctypes.c_void_p
        return (p(self.handle), p(self.desc), p(self.alpha.ctypes.data), a, p(self.a_layout), b, p(self.b_layout),
                p(self.beta.ctypes.data), c, p(self.c_layout), d, p(self.d_layout), p(ctypes.addressof(algo)),
                workspace, workspace_size, stream)

    # -- algorithms ----------------------------------------------------------------------------

    def find_algorithms(self, preferences: MatmulPlanPreferences) -> list[MatmulAlgorithm]:
        """Ask the heuristic for up to ``preferences.limit`` algorithms, best first."""
        traits = self.traits
        preference = lt.preference_create()
        try:
            lt.preference_set(preference, _P.MAX_WORKSPACE_BYTES, self.options.workspace_limit)
            lt.preference_set(preference, _P.MIN_ALIGNMENT_A_BYTES, traits.alignment_a)
            lt.preference_set(preference, _P.MIN_ALIGNMENT_B_BYTES, traits.alignment_b)
            lt.preference_set(preference, _P.MIN_ALIGNMENT_C_BYTES, traits.alignment_c)
            if preferences.max_waves_count:
                lt.preference_set(preference, _P.MAX_WAVES_COUNT, float(preferences.max_waves_count))
            if preferences.reduction_scheme_mask is not None:
                lt.preference_set(preference, _P.REDUCTION_SCHEME_MASK, preferences.reduction_scheme_mask)
            if preferences.numerical_impl_mask is not None:
                lt.preference_set(preference, _P.IMPL_MASK, preferences.numerical_impl_mask)
            try:
                results = lt.algo_get_heuristic(*self._operands(), preference, preferences.limit)
            except lt.CublasLtError as error:
                raise lt.CublasLtError(error.status, error.status_name, error.function, self.describe()) from None
        finally:
            lt.preference_destroy(preference)
        if not results:
            raise lt.CublasLtError(15, "CUBLAS_STATUS_NOT_SUPPORTED", "cublasLtMatmulAlgoGetHeuristic",
                                   f"no algorithm for {self.describe()}")
        algorithms = [_algorithm(result) for result in results]
        if preferences.expand_custom_options:
            algorithms += custom_option_variants(algorithms, _custom_option_max, lt.algo_with_custom_option,
                                                 self._checked_or_none)
        return algorithms

    def _check(self, algo: bytes) -> MatmulAlgorithm:
        """``algo`` with the workspace size and waves cuBLASLt reports for this problem (CublasLtError
        when it does not fit)."""
        result = lt.algo_check(*self._operands(), algo)
        return algorithm_of(algo, result.workspaceSize, result.wavesCount)

    def _checked_or_none(self, algo: bytes) -> MatmulAlgorithm | None:
        try:
            return self._check(algo)
        except lt.CublasLtError:
            return None

    def check_algorithms(self, algorithms) -> list[MatmulAlgorithm]:
        """Validate user-supplied algorithms for this problem (their workspace sizes are refreshed)."""
        checked = []
        for index, algorithm in enumerate(algorithms):
            if not isinstance(algorithm, MatmulAlgorithm):
                raise OperandError("algorithms", f"item {index} is a {type(algorithm).__name__}, not a MatmulAlgorithm")
            try:
                checked.append(self._check(algorithm.algo))
            except lt.CublasLtError as error:
                message = f"item {index} does not fit this problem ({error.status_name})"
                raise OperandError("algorithms", message) from None
        if not checked:
            raise OperandError("algorithms", "expected at least one MatmulAlgorithm")
        return checked

    def describe(self) -> str:
        problem, shape = self.problem, self.problem.shape
        epilog = problem.epilog.name if problem.epilog else "none"
        return (f"{problem.a_dtype} x {problem.b_dtype} -> {problem.result_dtype}, M={shape.m} N={shape.n} K={shape.k} "
                f"batch={shape.batch_shape}, compute {problem.compute_type}, scale {problem.scale_type}, "
                f"epilog {epilog}")

    def raise_status(self, status: int):
        lt.check(status, "cublasLtMatmul", self.describe())

    def free(self) -> None:
        """Destroy the descriptors. Safe to call twice."""
        if self.freed:
            return
        self.freed = True
        for layout in self.layouts:
            lt.matrix_layout_destroy(layout)
        self.layouts = []
        if self.desc:
            lt.matmul_desc_destroy(self.desc)
            self.desc = 0
