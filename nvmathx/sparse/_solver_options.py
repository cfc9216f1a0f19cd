"""Options of the sparse direct solver, and the pure decisions made from them.

:class:`DirectSolverOptions` names what the solver is told about the matrix (its type and which
triangle is stored) and how to factorize it (reordering, pivoting, iterative refinement, transposed
solves). The tables below map the names onto cuDSS's enums (GPU) and SuperLU's settings (CPU).
"""

from __future__ import annotations

from dataclasses import dataclass

from .._core.errors import OptionsError
from .._core.options import check_choice, check_positive_int

__all__ = ["DirectSolverOptions", "MATRIX_TYPES", "TRIANGLES", "REORDERINGS", "PIVOTING", "SOLVE_MODES",
           "check_dtype_for_type", "superlu_settings", "cudss_settings"]

MATRIX_TYPES = ("general", "symmetric", "hermitian", "spd", "hpd")
TRIANGLES = ("full", "lower", "upper")
REORDERINGS = ("default", "amd", "nested_dissection", "colamd", "btf_colamd", "none")
PIVOTING = ("auto", "none", "global_col", "global_row", "diagonal", "local_block", "bunch_kaufman")
SOLVE_MODES = ("normal", "transpose", "conjugate_transpose")


@dataclass(frozen=True)
class DirectSolverOptions:
    """Options of :class:`nvmathx.sparse.DirectSolver` and :func:`nvmathx.sparse.spsolve`.

    Parameters
    ----------
    matrix_type : str
        ``"general"`` (LU), ``"symmetric"`` (LDLᵀ), ``"hermitian"`` (LDLᴴ), ``"spd"`` or ``"hpd"``
        (Cholesky). Symmetric and Hermitian types say what the matrix *is*; nvmathx does not check it.
    triangle : str
        Which part of a symmetric or Hermitian matrix is stored: ``"full"`` (the default: the whole
        matrix, which must then be symmetric or Hermitian, as cuDSS reads one triangle of it; the
        CPU space reads the lower one), ``"lower"`` or ``"upper"``. A general matrix is always read
        in full.
    reordering : str
        The fill-reducing ordering: ``"default"`` (cuDSS's nested dissection; on the CPU, SuperLU's
        COLAMD for general and minimum degree on ``A + Aᵀ`` for the other types), ``"amd"``,
        ``"nested_dissection"``, ``"colamd"``, ``"btf_colamd"`` or ``"none"``.
    pivoting : str
        cuDSS's pivoting: ``"auto"``, ``"none"``, ``"global_col"``, ``"global_row"``,
        ``"diagonal"``, ``"local_block"`` or ``"bunch_kaufman"`` (symmetric and Hermitian
        indefinite matrices, cuDSS 1.0 and later). On the CPU, ``"none"``, ``"diagonal"`` and
        ``"bunch_kaufman"`` prefer diagonal pivots (SuperLU's ``diag_pivot_thresh=0``) and the others
        pivot by partial threshold pivoting.
    pivot_threshold : float or None
        The pivoting threshold in ``[0, 1]`` (cuDSS's and SuperLU's), or None for the library's.
    refinement_steps : int
        Steps of iterative refinement after each solve (0: none).
    solve_mode : str
        ``"normal"`` solves ``A x = b``, ``"transpose"`` ``Aᵀ x = b`` and ``"conjugate_transpose"``
        ``Aᴴ x = b`` (on a GPU, cuDSS 1.0 and later).
    check_finite : bool
        Refuse NaN or infinite values in ``a`` and ``b`` (one pass over each, and on a GPU a
        synchronisation), as scipy.linalg's ``check_finite``.
    host_threads : int or None
        Threads for cuDSS's work on the host (the default reordering of :meth:`plan`, which
        dominates a first solve of a large matrix). None (the default): one per core this process
        may run on (``os.sched_getaffinity``). More than one: cuDSS's multi-threaded mode, through
        the threading layer shipped with libcudss (``libcudss_mtlayer_gomp``, GNU OpenMP) or the
        library named by ``CUDSS_THREADING_LIB``; where that does not load, the solver runs
        single-threaded. 1: cuDSS's single-threaded mode (for a process that shares its cores, an
        MPI rank per GPU say). Ignored on the CPU space.
    """

    matrix_type: str = "general"
    triangle: str = "full"
    reordering: str = "default"
    pivoting: str = "auto"
    pivot_threshold: float | None = None
    refinement_steps: int = 0
    solve_mode: str = "normal"
    check_finite: bool = True
    host_threads: int | None = None

    def __post_init__(self):
        check_choice(self.matrix_type, MATRIX_TYPES, "options.matrix_type")
        check_choice(self.triangle, TRIANGLES, "options.triangle")
        check_choice(self.reordering, REORDERINGS, "options.reordering")
        check_choice(self.pivoting, PIVOTING, "options.pivoting")
        check_choice(self.solve_mode, SOLVE_MODES, "options.solve_mode")
        if self.matrix_type == "general" and self.triangle != "full":
            raise OptionsError("options.triangle", f"a general matrix is read in full (got {self.triangle!r}); "
                                                   f"set matrix_type to the symmetric type it has")
        if self.pivot_threshold is not None:
            if isinstance(self.pivot_threshold, bool) or not isinstance(self.pivot_threshold, (int, float)):
                raise OptionsError("options.pivot_threshold", f"expected a float in [0, 1] or None "
                                                              f"(got {type(self.pivot_threshold).__name__})")
            if not 0.0 <= float(self.pivot_threshold) <= 1.0:
                raise OptionsError("options.pivot_threshold",
                                   f"expected a value in [0, 1] (got {self.pivot_threshold})")
            object.__setattr__(self, "pivot_threshold", float(self.pivot_threshold))
        steps = self.refinement_steps
        if isinstance(steps, bool) or not hasattr(steps, "__index__") or int(steps) < 0:
            raise OptionsError("options.refinement_steps", f"expected an int >= 0 (got {steps!r})")
        object.__setattr__(self, "refinement_steps", int(steps))
        if not isinstance(self.check_finite, bool):
            raise OptionsError("options.check_finite", f"expected a bool (got {type(self.check_finite).__name__})")
        if self.host_threads is not None:
            threads = check_positive_int(self.host_threads, "options.host_threads")
            if threads >= 1 << 31:  # (cuDSS takes a 32-bit int)
                raise OptionsError("options.host_threads", f"expected an int below 2**31 or None (got {threads})")
            object.__setattr__(self, "host_threads", threads)


def check_dtype_for_type(options: DirectSolverOptions, dtype) -> None:
    """Hermitian types need complex values (a real Hermitian matrix is symmetric: say so)."""
    if options.matrix_type in ("hermitian", "hpd") and dtype.kind != "c":
        twin = "symmetric" if options.matrix_type == "hermitian" else "spd"
        raise OptionsError("options.matrix_type", f"{options.matrix_type!r} needs complex values (a is {dtype}); "
                                                  f"a real Hermitian matrix is {twin!r}")


_SUPERLU_ORDERINGS = {"default": None, "amd": "MMD_AT_PLUS_A", "nested_dissection": "MMD_AT_PLUS_A",
                      "colamd": "COLAMD", "btf_colamd": "COLAMD", "none": "NATURAL"}


def superlu_settings(options: DirectSolverOptions) -> dict:
    """``scipy.sparse.linalg.splu`` keyword arguments for these options (CPU space)."""
    symmetric = options.matrix_type != "general"
    ordering = _SUPERLU_ORDERINGS[options.reordering] or ("MMD_AT_PLUS_A" if symmetric else "COLAMD")
    diagonal = symmetric or options.pivoting in ("none", "diagonal", "bunch_kaufman")
    threshold = options.pivot_threshold
    if threshold is None:
        threshold = 0.0 if diagonal else 1.0
    return {"permc_spec": ordering, "diag_pivot_thresh": threshold,
            "options": {"SymmetricMode": diagonal}}


def cudss_settings(options: DirectSolverOptions, dialect) -> dict:
    """``{ConfigParam name: value}`` and the matrix type and view for cuDSS, for the loaded release
    (``dialect``, a :class:`nvmathx._bindings.cudss.Dialect`).

    Raises
    ------
    OptionsError
        For Bunch-Kaufman pivoting or a transposed solve where the loaded cuDSS has neither.
    """
    from .._bindings import cudss

    if options.pivoting == "bunch_kaufman" and not dialect.bunch_kaufman:
        raise OptionsError("options.pivoting", f"'bunch_kaufman' needs cuDSS 1.0 or later (the loaded one is "
                                               f"{'.'.join(map(str, dialect.release))})")
    if options.solve_mode != "normal" and not dialect.transposed_solves:
        raise OptionsError("options.solve_mode", f"transposed solves need cuDSS 1.0 or later (the loaded one is "
                                                 f"{'.'.join(map(str, dialect.release))})")
    config: dict = {
        "REORDERING_ALG": cudss.ReorderingAlg[options.reordering.upper()],
        "PIVOT_TYPE": cudss.PivotType[options.pivoting.upper()],
        "IR_N_STEPS": options.refinement_steps,
    }
    if options.pivot_threshold is not None:
        config["PIVOT_THRESHOLD"] = options.pivot_threshold
    if options.solve_mode != "normal":
        config["SOLVE_MODE"] = cudss.SolveMode[options.solve_mode.upper()]
    return {"config": config, "matrix_type": cudss.MatrixType[options.matrix_type.upper()],
            "view": cudss.MatrixView[options.triangle.upper()]}
