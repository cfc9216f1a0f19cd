"""Options of sparse @ dense: :class:`MatmulOptions` (sparse)."""

from __future__ import annotations

from dataclasses import dataclass

from .._core.errors import OptionsError
from .._core.memory import check_memory_resource
from .._core.options import check_choice

__all__ = ["MatmulOptions", "ALGORITHMS"]

ALGORITHMS = ("default", "csr_alg1", "csr_alg2", "csr_alg3")
"""cuSPARSE algorithm names (``CUSPARSE_SPMM_CSR_ALG3`` is ``"csr_alg3"``); SpMV has no ``csr_alg3``."""


@dataclass(frozen=True)
class MatmulOptions:
    """Options of :class:`nvmathx.sparse.Matmul` and :func:`nvmathx.sparse.matmul`.

    Frozen: every field is checked when the object is made (a bad value raises
    :class:`~nvmathx.OptionsError` naming ``options.<field>``).

    Parameters
    ----------
    algorithm : str
        cuSPARSE's algorithm: ``"default"`` (cuSPARSE chooses), ``"csr_alg1"``, ``"csr_alg2"`` or
        (sparse @ matrix only) ``"csr_alg3"``: ``CUSPARSE_SPMM_CSR_ALG*`` for a matrix ``b``,
        ``CUSPARSE_SPMV_CSR_ALG*`` for a vector. ``csr_alg1`` of SpMV is deterministic,
        ``csr_alg2`` gives the same result run after run for one matrix. The CPU space ignores it.
    memory_resource : cuda.core MemoryResource or None
        Where the workspace and device copies of host operands come from. Default: the device's.
    blocking : "auto" or True
        ``True`` synchronises after every execution; ``"auto"`` only when the operands are host
        arrays (their result is copied back).
    """

    algorithm: str = "default"
    memory_resource: object = None
    blocking: object = "auto"

    def __post_init__(self):
        if not isinstance(self.algorithm, str):
            raise OptionsError("options.algorithm", f"expected a str (got {type(self.algorithm).__name__})")
        check_choice(self.algorithm, ALGORITHMS, "options.algorithm")
        check_memory_resource(self.memory_resource, "options.memory_resource")
        if not (isinstance(self.blocking, str) and self.blocking == "auto") and self.blocking is not True:
            raise OptionsError("options.blocking", f"expected 'auto' or True (got {self.blocking!r})")
