"""Sparse linear algebra: sparse @ dense on cuSPARSE (:class:`Matmul`, :func:`matmul`) and the sparse
direct solver on cuDSS.

Sparse operands are CSR matrices from scipy.sparse (``csr_matrix`` / ``csr_array``),
cupyx.scipy.sparse (``csr_matrix``) and torch (``layout=torch.sparse_csr``), with int32 or int64
indices. CSC and COO matrices of the three libraries are converted to CSR with one copy. Column
indices that are unsorted within a row, or repeated, are handled as scipy handles them: duplicates
are summed (a copy in scipy's canonical format is made, once per operand). Results come back as the
dense kind of the sparse operand's library (numpy for scipy, cupy for cupyx, torch for torch), and
every dense operand must be of that kind. Host operands run on the CPU (scipy) unless
``execution="cuda"``.
"""

from ._function import matmul, plan_cache, plan_key
from ._matmul import Matmul
from ._options import MatmulOptions
from ._solver import DirectSolver, FactorizationInfo
from ._solver_options import DirectSolverOptions
from ._spsolve import spsolve, spsolve_plan_cache, spsolve_plan_key

__all__: list[str] = [
    # sparse @ dense (cuSPARSE)
    "Matmul",
    "matmul",
    "MatmulOptions",
    "plan_cache",
    "plan_key",
    # the sparse direct solver (cuDSS)
    "DirectSolver",
    "DirectSolverOptions",
    "FactorizationInfo",
    "spsolve",
    "spsolve_plan_key",
    "spsolve_plan_cache",
]
