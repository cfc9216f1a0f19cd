"""``Solver``: a cuSOLVERDx factorization or solve that a thread block runs inside a Numba kernel."""

from __future__ import annotations

from typing import Any, NoReturn

import numpy as np

from .._codegen import solver as solver_codegen
from .._codegen.cache import CodeEntry
from .._codegen.target import Target, resolve_target
from .._core.errors import OptionsError
from . import _compilers


@_compilers.descriptor
class Solver:
    """A small dense factorization or solve computed by one CUDA block (cuSOLVERDx).

    Parameters
    ----------
    function : str
        ``"potrf"`` (Cholesky), ``"potrs"``, ``"posv"`` (Cholesky factor and solve);
        ``"getrf_partial_pivot"``, ``"getrs_partial_pivot"``, ``"gesv_partial_pivot"`` (LU with
        partial pivoting) and their ``_no_pivot`` forms; ``"geqrf"`` (QR), ``"unmqr"`` (multiply by
        Q), ``"gels"`` (least squares through QR).
    size : int or tuple
        ``(m, n)`` for the factorizations (an int means a square matrix); ``(m, n, k)`` for the
        solves and gels (k right-hand sides) and for unmqr (``c`` is m x n, ``a`` holds k
        reflectors).
    dtype : numpy dtype
        float32, float64, complex64 or complex128.
    fill_mode : {"lower", "upper"}, optional
        The triangle that holds a Cholesky matrix and its factor (default ``"lower"``).
    arrangement : {"col_major", "row_major"}
        How the matrices lie in shared memory (default column major, as LAPACK).
    side, transpose : str, optional
        unmqr only: Q applied from the ``"left"`` (default, ``Q c``) or the ``"right"`` (``c Q``),
        as ``"non_transposed"`` (default), ``"transposed"`` or ``"conj_transposed"``.
    batches_per_block : int
        Problems one block solves together (``a``, ``b``, ... hold that many, one after another).
    leading_dimension : None, "suggested" or tuple of int
        Leading dimensions of the matrices in shared memory: ``None`` packs them (``lda`` = the
        rows of a column-major ``a``, its columns when row major); ``"suggested"`` takes
        cuSOLVERDx's padded choice, which avoids shared-memory bank conflicts (64 x 64 float64:
        ``lda`` 66); or ``(lda,)`` for a factorization and ``(lda, ldb)`` otherwise (``ldb`` is
        ``c``'s for unmqr), each at least the packed one.
    block_dim : "suggested" or tuple
        Threads of the block; ``"suggested"`` takes cuSOLVERDx's choice.
    sm : tuple, int, str or None
        Target architecture, e.g. ``(9, 0)``; ``None`` means the current device.

    Raises
    ------
    OptionsError
        For a function, size or type cuSOLVERDx does not take, or a problem that does not fit the
        target's shared memory (e.g. 128 x 128 complex128), before any code is generated.

    Notes
    -----
    In a kernel launched with ``block_dim`` threads and ``shared_memory_size`` bytes of dynamic
    shared memory, ``solver.execute(...)`` takes 1-D arrays in cuSOLVERDx's order:
    ``potrf(a, info)``, ``potrs(a, b)``, ``posv(a, b, info)``, ``getrf_*(a, [ipiv,] info)``,
    ``getrs_*(a, [ipiv,] b)``, ``gesv_*(a, [ipiv,] b, info)``, ``geqrf(a, tau)``,
    ``unmqr(a, tau, c)``, ``gels(a, tau, b)``. ``a``, ``b``, ``c`` and ``tau`` hold ``value_type``
    (``a_size``, ``b_size``, ``c_size``, ``tau_size`` elements, all batches), the matrices with
    leading dimensions ``lda`` and ``ldb`` (``c``'s too); ``ipiv`` (the row interchanges, in
    LAPACK's 1-based convention) and ``info`` (0 on success, as LAPACK's; one per batch) are int32. The solution
    overwrites ``b``, the factors ``a``. The arrays usually live in shared memory: slices of one
    ``cuda.shared.array(0, solver.value_type, alignment=16)``, with ``ipiv`` and ``info`` a slice
    after the values viewed as int32 (``smem[start:stop].view(np.int32)``);
    ``shared_memory_size`` counts a, b, c, tau and ipiv, so add ``4 * info_size`` bytes for
    ``info``. With numba-cuda-mlir 0.6 a kernel's dynamic shared array overlaps its static ones
    (``cuda.shared.array(n, ...)`` with n > 0): use one kind per kernel there
    (examples/device_batched_cholesky.py). These sizes, ``m``, ``n``, ``k``, ``block_dim``, ``block_size``,
    ``batches_per_block`` and ``shared_memory_size`` are compile-time constants in kernels.
    cuSOLVERDx's library code (its universal fatbin) is linked with the kernel for you.

    Prefer the suggested ``block_dim``: others can generate code that faults (illegal address) at
    launch, e.g. ``posv`` 32 x 32 float32 with 2 batches per block and ``block_dim=(128,)`` or
    ``(256,)`` (suggested: 64). More than 48 KiB of dynamic shared memory needs the kernel's
    limit raised before launch, which numba does not do (the launch fails with
    ``CUDA_ERROR_INVALID_VALUE``).
    """

    _kernel_attributes = ("m", "n", "k", "value_type", "a_size", "b_size", "c_size", "ipiv_size", "tau_size",
                          "info_size", "lda", "ldb", "batches_per_block", "block_dim", "block_size",
                          "shared_memory_size")

    def __init__(self, function: str, size: Any, dtype: Any = np.float32, *, fill_mode: str | None = None,
                 arrangement: str = "col_major", batches_per_block: int = 1, block_dim: Any = "suggested",
                 side: str | None = None, transpose: str | None = None, leading_dimension: Any = None,
                 sm: str | int | tuple[int, int] | None = None) -> None:
        _compilers.register_imported()  # typed by the registry of each compiler imported by now
        self.target: Target = resolve_target(sm, needed_by="cuSOLVERDx")
        for argument, value in (("block_dim", block_dim), ("leading_dimension", leading_dimension)):
            if isinstance(value, str) and value != "suggested":
                raise OptionsError(argument, f"expected 'suggested' or a tuple of ints (got {value!r})")

        def spec(leading_dimension: Any, target: Target | None) -> solver_codegen.SolverSpec:
            return solver_codegen.solver_spec(
                function, size, dtype, fill_mode=fill_mode, arrangement=arrangement,
                batches_per_block=batches_per_block, block_dim=None if block_dim == "suggested" else block_dim,
                side=side, transpose=transpose, leading_dimension=leading_dimension, target=target)

        if leading_dimension == "suggested":
            leading_dimension = solver_codegen.suggested_leading_dimension(spec(None, None), self.target)
        self._spec = spec(leading_dimension, self.target)
        self._code: solver_codegen.SolverCode | None = None
        counts = self._spec.element_counts()
        batches = self._spec.batches_per_block
        self.a_size, self.b_size, self.c_size, self.ipiv_size, self.tau_size, self.info_size = (
            batches * counts.get(name, 0) for name in ("a", "b", "c", "ipiv", "tau", "info"))

    @property
    def function(self) -> str:
        """The cuSOLVERDx function."""
        return self._spec.function

    @property
    def m(self) -> int:
        """Rows of the matrix (of c for unmqr)."""
        return self._spec.m

    @property
    def n(self) -> int:
        """Columns of the matrix (of c for unmqr)."""
        return self._spec.n

    @property
    def k(self) -> int:
        """Right-hand sides (reflectors for unmqr); 0 for factorizations."""
        return self._spec.k

    @property
    def fill_mode(self) -> str | None:
        """The triangle a Cholesky matrix is in: "lower" or "upper" (None for other functions)."""
        return self._spec.fill_mode

    @property
    def arrangement(self) -> str:
        """How the matrices lie in memory: "col_major" or "row_major"."""
        return self._spec.arrangement

    @property
    def batches_per_block(self) -> int:
        """Problems per block."""
        return self._spec.batches_per_block

    @property
    def arguments(self) -> tuple[str, ...]:
        """execute's arguments, in order."""
        return self._spec.info.arguments


    @property
    def value_type(self) -> type:
        """The matrices' numpy scalar type (the compiler's number class in a kernel)."""
        return np.dtype(self._spec.dtype).type

    @property
    def lda(self) -> int:
        """Leading dimension of ``a``."""
        return solver_codegen.leading_dimensions(self._spec)[0]

    @property
    def ldb(self) -> int:
        """Leading dimension of ``b`` (``c`` for unmqr); 0 where there is none."""
        dims = solver_codegen.leading_dimensions(self._spec)
        return dims[1] if len(dims) > 1 else 0

    @property
    def leading_dimension(self) -> tuple[int, ...]:
        """``(lda,)`` or ``(lda, ldb)``: the leading dimensions the matrices are laid out with."""
        return solver_codegen.leading_dimensions(self._spec)

    @property
    def block_dim(self) -> tuple[int, int, int]:
        """The block's threads (cuSOLVERDx's suggestion unless given)."""
        return self.code().block_dim

    @property
    def block_size(self) -> int:
        x, y, z = self.block_dim
        return x * y * z

    @property
    def shared_memory_size(self) -> int:
        """Bytes of dynamic shared memory to launch with."""
        return self.code().shared_memory_size

    def code(self) -> solver_codegen.SolverCode:
        """The generated function and its traits (generated on first use, seconds; cached on disk)."""
        if self._code is None:
            self._code = solver_codegen.solver_code(self._spec, self.target)
        return self._code

    def _entry(self) -> CodeEntry:
        return self.code().entry

    @staticmethod
    def _library_code() -> CodeEntry:
        """cuSOLVERDx's universal fatbin, linked beside every generated function."""
        return solver_codegen.universal_fatbin()

    def execute(self, *arrays: Any) -> NoReturn:
        """Factor or solve: only inside a ``numba.cuda.jit`` kernel (see the class Notes)."""
        raise RuntimeError("Solver.execute can only be called inside a numba.cuda.jit kernel")

    @property
    def _numba_type_(self):
        # Read by a compiler's generic typeof only while its own registry lacks this class.
        return _compilers.unregistered_type(self)

    def __repr__(self) -> str:
        size = (self.m, self.n, self.k) if self.k else (self.m, self.n)
        # every option that changes the generated code: the kernels' type names are made from this
        spec = self._spec
        extra = "".join(f", {name}={value!r}" for name, value in (
            ("fill_mode", spec.fill_mode), ("side", spec.side), ("transpose", spec.transpose),
            ("block_dim", spec.block_dim), ("leading_dimension", spec.leading_dimension)) if value is not None)
        return (f"Solver({self.function!r}, {size}, {self._spec.dtype}{extra}, arrangement={self.arrangement!r}, "
                f"batches_per_block={self.batches_per_block}, sm={self.target.name!r})")
