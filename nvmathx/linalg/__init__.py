"""Matrix multiplication on cuBLASLt with fused epilogs: :class:`Matmul` (stateful) and
:func:`matmul` (function form, backed by :data:`plan_cache`).

Semantics (every execution space): ``numpy.matmul``'s shape rules (1-D promotion, batching,
broadcasting of batch dimensions), result ``alpha * a @ b + beta * c`` (``c`` unread when
``beta`` is 0), then the epilog.
Supported dtypes: float16, bfloat16, float32 (TF32 through ``compute_type="32F_FAST_TF32"``),
float64, complex64, complex128, and float8 (e4m3 / e5m2) with per-tensor scales. Host (numpy)
operands run on the CPU with numpy unless ``execution="cuda"``. What each epilog computes,
consumes and returns follows.
"""

from .._core.deprecation import deprecated_names
from .._matmulcore.epilogs import MatmulEpilog, relu_mask
from .._matmulcore.epilogs import __doc__ as _EPILOG_DOC
from ._cublaslt_plan import MatmulAlgorithm
from ._function import matmul, plan_cache, plan_key
from ._matmul import Matmul
from ._options import MatmulOptions, MatmulPlanPreferences
from ._solver import DirectSolver
from ._solver_function import direct_solver, solve, solve_plan_key
from ._solver_options import DirectSolverOptions
from ._solver_problem import choose_solver_engine

if __doc__ and _EPILOG_DOC:  # docstrings are gone under python -OO
    __doc__ += "\n" + _EPILOG_DOC  # one source for the epilog semantics

__all__ = [
    "Matmul",
    "matmul",
    "MatmulOptions",
    "MatmulPlanPreferences",
    "MatmulEpilog",
    "MatmulAlgorithm",
    "plan_cache",
    "plan_key",
    "relu_mask",
    "DirectSolver",
    "DirectSolverOptions",
    "solve",
    "direct_solver",
    "solve_plan_key",
    "choose_solver_engine",
]

# Spellings of earlier releases (one rule across the areas: nvmathx.<area>.plan_key).
__getattr__ = deprecated_names(__name__, {"matmul_plan_key": "plan_key"})
