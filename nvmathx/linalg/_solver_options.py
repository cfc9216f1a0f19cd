"""Options of the dense solvers: DirectSolverOptions, and the structure names they take."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from .._core.errors import OptionsError
from .._core.memory import check_memory_resource
from .._core.options import check_choice

__all__ = ["DirectSolverOptions", "STRUCTURES", "ENGINES", "normalize_structure", "normalize_transposed"]

# scipy.linalg.solve's assume_a names (and its short legacy ones) -> the structure solved.
# Symmetric and Hermitian matrices run as general ones (LU with partial pivoting: correct, not the
# fastest). None is general, with no detection of structure.
STRUCTURES = {
    None: "general", "general": "general", "gen": "general",
    "symmetric": "general", "sym": "general", "hermitian": "general", "her": "general",
    "positive definite": "positive definite", "pos": "positive definite",
    "lower triangular": "lower triangular", "upper triangular": "upper triangular", "diagonal": "diagonal",
}
_NOT_YET = ("tridiagonal", "banded")
ENGINES = ("auto", "cusolver", "batched", "fused")


def normalize_structure(assume_a, argument: str = "assume_a") -> str:
    """The structure (``"general"``, ``"positive definite"``, ``"lower triangular"``, ``"upper
    triangular"``, ``"diagonal"``) an ``assume_a`` value names."""
    if isinstance(assume_a, str) and assume_a in _NOT_YET:
        raise OptionsError(argument, f"{assume_a!r} systems are not supported yet; pass 'general' (or None)")
    if assume_a is not None and not isinstance(assume_a, str):
        raise OptionsError(argument, f"expected a str or None (got {type(assume_a).__name__})")
    structure = STRUCTURES.get(assume_a)
    if structure is None:
        raise OptionsError(argument, f"expected one of {[k for k in STRUCTURES if k is not None]} or None "
                                     f"(got {assume_a!r})")
    return structure


def normalize_transposed(transposed, argument: str = "transposed") -> str:
    """``"N"`` (solve a x = b), ``"T"`` (aᵀ x = b) or ``"C"`` (aᴴ x = b) for False, True, "conjugate"."""
    if transposed is False or (isinstance(transposed, np.bool_) and not transposed):
        return "N"
    if transposed is True or (isinstance(transposed, np.bool_) and transposed):
        return "T"
    if isinstance(transposed, str) and transposed == "conjugate":
        return "C"
    raise OptionsError(argument, f"expected False, True or 'conjugate' (got {transposed!r})")


def _bool(options, name: str) -> None:
    value = getattr(options, name)
    if not isinstance(value, (bool, np.bool_)):
        raise OptionsError(f"options.{name}", f"expected a bool (got {value!r})")
    object.__setattr__(options, name, bool(value))


@dataclass(frozen=True)
class DirectSolverOptions:
    """Options of :class:`DirectSolver` (and of :func:`solve` through its ``options``).

    Frozen: every field is checked when the object is made; a bad value raises
    :class:`~nvmathx.OptionsError` naming ``options.<field>``.

    Parameters
    ----------
    assume_a : str or None
        The structure of ``a``, in :func:`scipy.linalg.solve`'s names: ``"general"`` (LU with
        partial pivoting; also None, ``"symmetric"`` and ``"hermitian"``, which run as general),
        ``"positive definite"`` (Cholesky), ``"lower triangular"``, ``"upper triangular"``
        (a triangular solve, no factorization) or ``"diagonal"``. ``"tridiagonal"`` and
        ``"banded"`` are refused for now.
    lower : bool
        For ``"positive definite"``: the factorization reads the lower triangle of ``a`` (default:
        the upper one), as scipy does. The triangular structures name their triangle themselves.
    transposed : bool or "conjugate"
        True solves ``aᵀ x = b`` (complex matrices too), ``"conjugate"`` ``aᴴ x = b``.
    check_finite : bool
        Refuse ``a`` or ``b`` holding NaN or Inf (an :class:`~nvmathx.OperandError` naming it). On
        the GPU this reads a flag back (a synchronisation); ``check="none"`` skips it.
    check : "raise" or "none"
        ``"raise"``: after the factorization, read its status (a synchronisation on the GPU) and
        raise :class:`~nvmathx.SingularMatrixError` for an exactly singular (or, for Cholesky,
        not positive definite) matrix. ``"none"``: read nothing, so that ``factorize()`` and
        ``solve()`` queue work without waiting and can be captured in a CUDA graph; a singular
        system then gives Inf or NaN in the solution, and no error.
    engine : "auto", "cusolver", "batched" or "fused"
        How the GPU solves: cuSOLVER, one call per matrix (large systems); the
        batched routines (cuBLAS ``getrfBatched``/``getrsBatched``/``trsmBatched``, cuSOLVER
        ``potrfBatched``/``potrsBatched``), one call per batch (many small systems); or one
        generated cuSOLVERDx kernel that factors and solves every system in shared memory
        (general and positive definite systems small enough for a block; needs libmathdx).
        ``"auto"`` follows :func:`nvmathx.linalg.choose_solver_engine`. The CPU space ignores it.
    memory_resource : cuda.core MemoryResource or None
        Where the factors, pivots and workspaces (and device copies of host operands) come from.
    blocking : "auto" or True
        True synchronises after every ``solve()``; "auto" only for host operands.
    logger : logging.Logger or None
        Where planning is logged (default: the ``nvmathx`` logger).
    """

    assume_a: str | None = None
    lower: bool = False
    transposed: object = False
    check_finite: bool = True
    check: str = "raise"
    engine: str = "auto"
    memory_resource: object = None
    blocking: object = "auto"
    logger: logging.Logger | None = None

    def __post_init__(self):
        normalize_structure(self.assume_a, "options.assume_a")
        normalize_transposed(self.transposed, "options.transposed")
        _bool(self, "lower")
        _bool(self, "check_finite")
        check_choice(self.check, ("raise", "none"), "options.check")
        check_choice(self.engine, ENGINES, "options.engine")
        check_memory_resource(self.memory_resource, "options.memory_resource")
        if not (isinstance(self.blocking, str) and self.blocking == "auto") and self.blocking is not True:
            raise OptionsError("options.blocking", f"expected 'auto' or True (got {self.blocking!r})")
        if self.logger is not None and not isinstance(self.logger, logging.Logger):
            raise OptionsError("options.logger", f"expected a logging.Logger (got {type(self.logger).__name__})")

    @property
    def structure(self) -> str:
        """The structure solved (see ``assume_a``)."""
        return normalize_structure(self.assume_a)

    @property
    def operation(self) -> str:
        """``"N"``, ``"T"`` or ``"C"``: the system solved is op(a) x = b."""
        return normalize_transposed(self.transposed)
