"""cuSOLVERDx block functions as plain data: a function, its sizes and types checked against what
cuSOLVERDx (libmathdx 0.3.1.9 and 0.4.2) generates, the descriptor, its code and traits, and the library
code its LTO-IR calls (the universal fatbin, the same for every descriptor).

libmathdx reports an invalid combination only when it compiles the code (an NVRTC static
assertion, seconds later), so :func:`solver_spec` refuses it first: the sizes each function takes,
the fill mode Cholesky needs, the leading dimensions, and the shared memory the problem needs
against the target's limit (:func:`shared_memory_bytes`, which matches cuSOLVERDx's
``SHARED_MEMORY_SIZE`` trait: checked in tests/device_api/test_solver_codegen.py).

libmathdx 0.4 dropped the ``SHARED_MEMORY_SIZE`` and ``SUGGESTED_LEADING_DIMENSION`` traits: there
:func:`shared_memory_bytes` and :func:`padded_leading_dimensions` (cuSOLVERDx 0.3's own rule, checked
against 0.3.1's traits in the same tests) give them.

Every function takes its arguments by pointer, in the order of :data:`FUNCTIONS` (cuSOLVERDx's
shared-memory API): ``a``, ``b`` and ``c`` the matrices in shared memory, ``tau`` the Householder
scalars (value type), ``ipiv`` the pivots and ``info`` the status (32-bit integers, one per
batch).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .._bindings import mathdx
from .._core.dtypes import dtype_among
from .._core.errors import OptionsError
from .._core.logs import timed_step
from . import cache, descriptors
from .target import Target, max_shared_memory_per_block

__all__ = ["FUNCTIONS", "DTYPES", "SolverSpec", "SolverCode", "solver_spec", "descriptor", "shared_memory_bytes",
           "packed_leading_dimensions", "padded_leading_dimensions", "leading_dimensions",
           "suggested_leading_dimension", "solver_code", "universal_fatbin", "solver_traits"]

_F = mathdx.SolverFunction


@dataclasses.dataclass(frozen=True)
class FunctionInfo:
    """What one cuSOLVERDx function takes."""

    function: mathdx.SolverFunction
    sizes: int  # 2: (m, n); 3: (m, n, k), k the right-hand sides (unmqr: the reflectors)
    arguments: tuple[str, ...]  # in the C function's order
    fill_mode: bool  # Cholesky: which triangle holds the matrix
    square: bool  # m == n


FUNCTIONS = {
    "potrf": FunctionInfo(_F.POTRF, 2, ("a", "info"), True, True),
    "potrs": FunctionInfo(_F.POTRS, 3, ("a", "b"), True, True),
    "posv": FunctionInfo(_F.POSV, 3, ("a", "b", "info"), True, True),
    "getrf_no_pivot": FunctionInfo(_F.GETRF_NO_PIVOT, 2, ("a", "info"), False, False),
    "getrs_no_pivot": FunctionInfo(_F.GETRS_NO_PIVOT, 3, ("a", "b"), False, True),
    "gesv_no_pivot": FunctionInfo(_F.GESV_NO_PIVOT, 3, ("a", "b", "info"), False, True),
    "getrf_partial_pivot": FunctionInfo(_F.GETRF_PARTIAL_PIVOT, 2, ("a", "ipiv", "info"), False, False),
    "getrs_partial_pivot": FunctionInfo(_F.GETRS_PARTIAL_PIVOT, 3, ("a", "ipiv", "b"), False, True),
    "gesv_partial_pivot": FunctionInfo(_F.GESV_PARTIAL_PIVOT, 3, ("a", "ipiv", "b", "info"), False, True),
    "geqrf": FunctionInfo(_F.GEQRF, 2, ("a", "tau"), False, False),
    "unmqr": FunctionInfo(_F.UNMQR, 3, ("a", "tau", "c"), False, False),
    "gels": FunctionInfo(_F.GELS, 3, ("a", "tau", "b"), False, False),
}
DTYPES = {"float32": (mathdx.Precision.F32, mathdx.SolverType.REAL),
          "float64": (mathdx.Precision.F64, mathdx.SolverType.REAL),
          "complex64": (mathdx.Precision.F32, mathdx.SolverType.COMPLEX),
          "complex128": (mathdx.Precision.F64, mathdx.SolverType.COMPLEX)}
FILL_MODES = {"lower": mathdx.SolverFillMode.LOWER, "upper": mathdx.SolverFillMode.UPPER}
ARRANGEMENTS = {"col_major": mathdx.SolverArrangement.COL_MAJOR, "row_major": mathdx.SolverArrangement.ROW_MAJOR}
SIDES = {"left": mathdx.SolverSide.LEFT, "right": mathdx.SolverSide.RIGHT}
TRANSPOSES = {"non_transposed": mathdx.SolverTransposeMode.NON_TRANSPOSED,
              "transposed": mathdx.SolverTransposeMode.TRANSPOSED,
              "conj_transposed": mathdx.SolverTransposeMode.CONJ_TRANSPOSED}
MAX_THREADS = 1024


@dataclasses.dataclass(frozen=True)
class SolverSpec:
    """One cuSOLVERDx configuration (see :func:`solver_spec`)."""

    function: str
    m: int
    n: int
    k: int  # 0 for factorizations
    dtype: str
    fill_mode: str | None
    arrangement: str
    batches_per_block: int
    block_dim: tuple[int, int, int] | None  # None: cuSOLVERDx's suggestion
    side: str | None = None  # unmqr: Q applied from the "left" (Q c) or the "right" (c Q)
    transpose: str | None = None  # unmqr: Q, Q^T or Q^H
    leading_dimension: tuple[int, ...] | None = None  # None: packed (see packed_leading_dimensions)

    @property
    def info(self) -> FunctionInfo:
        return FUNCTIONS[self.function]

    def matrix_shapes(self) -> dict[str, tuple[int, int]]:
        """(rows, columns) of ``a`` and of the second matrix (``b``, or ``c`` for unmqr) of one batch."""
        m, n, k = self.m, self.n, self.k
        if self.function == "unmqr":  # c is m x n, a holds k reflectors of length m (n from the right)
            return {"a": (m if self.side == "left" else n, k), "c": (m, n)}
        shapes = {"a": (m, n)}
        if "b" in self.info.arguments:
            shapes["b"] = (max(m, n) if self.function == "gels" else n, k)
        return shapes

    def element_counts(self) -> dict[str, int]:
        """Elements of each argument for one batch, at the spec's leading dimensions."""
        counts = {"info": 1}
        for (name, (rows, columns)), ld in zip(self.matrix_shapes().items(), leading_dimensions(self)):
            # column major: ld >= rows, the matrix spans ld * columns elements; row major the other way
            counts[name] = ld * (columns if self.arrangement == "col_major" else rows)
        if self.function == "unmqr":
            counts["tau"] = self.k
        if "ipiv" in self.info.arguments:
            counts["ipiv"] = min(self.m, self.n)
        if self.function in ("geqrf", "gels"):
            counts["tau"] = min(self.m, self.n)
        return counts


def shared_memory_bytes(spec: SolverSpec) -> int:
    """The shared memory cuSOLVERDx asks for (its ``SHARED_MEMORY_SIZE``): the matrices, pivots
    and Householder scalars of every batch of the block."""
    counts = spec.element_counts()
    itemsize = np.dtype(spec.dtype).itemsize
    values = sum(counts.get(name, 0) for name in ("a", "b", "c", "tau"))
    return spec.batches_per_block * (itemsize * values + 4 * counts.get("ipiv", 0))


def packed_leading_dimensions(spec: SolverSpec) -> tuple[int, ...]:
    """The leading dimensions of ``a`` and of ``b`` (``c`` for unmqr; absent for a factorization)
    when the matrices are packed: their rows (column major) or columns (row major)."""
    index = 0 if spec.arrangement == "col_major" else 1
    return tuple(shape[index] for shape in spec.matrix_shapes().values())


def padded_leading_dimensions(spec: SolverSpec, target: Target) -> tuple[int, ...]:
    """cuSOLVERDx's suggested leading dimensions (its ``suggested_leading_dimension_of``): ``a``'s
    packed leading dimension padded by 16 bytes where it spans a whole number of 128-byte rows (a
    multiple of the 32 shared-memory banks), unless one batch's padded ``a`` and ``b`` then exceed
    the target's shared memory; ``b``'s (``c``'s) packed."""
    packed = packed_leading_dimensions(spec)
    itemsize = np.dtype(spec.dtype).itemsize
    row_bytes = packed[0] * itemsize
    if row_bytes < 128 or row_bytes % 128:
        return packed
    padded = (packed[0] + 16 // itemsize,) + packed[1:]
    a_columns, b_columns = _spans(spec)
    needed = itemsize * (padded[0] * a_columns + (padded[1] * b_columns if len(padded) > 1 else 0))
    return padded if needed <= max_shared_memory_per_block(target) else packed


def _spans(spec: SolverSpec) -> tuple[int, int]:
    """How many leading-dimension strides ``a`` and ``b`` (``c``) span: columns (column major) or rows."""
    index = 1 if spec.arrangement == "col_major" else 0
    shapes = list(spec.matrix_shapes().values()) + [(0, 0)]
    return shapes[0][index], shapes[1][index]


def leading_dimensions(spec: SolverSpec) -> tuple[int, ...]:
    """The leading dimensions ``spec`` lays its matrices out with (``a``'s, then ``b``'s or ``c``'s)."""
    return spec.leading_dimension if spec.leading_dimension is not None else packed_leading_dimensions(spec)


def _positive(argument: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise OptionsError(argument, f"expected a positive integer (got {value!r})")
    return int(value)


def _sizes(function: str, size) -> tuple[int, int, int]:
    info = FUNCTIONS[function]
    if isinstance(size, (int, np.integer)) and not isinstance(size, bool) and info.sizes == 2:
        size = (size, size)
    if not isinstance(size, (tuple, list)) or len(size) != info.sizes:
        form = "(m, n)" if info.sizes == 2 else ("(m, n, k) with k reflectors" if function == "unmqr"
                                                 else "(m, n, k) with k right-hand sides")
        raise OptionsError("size", f"{function} takes {form} (got {size!r})")
    values = [_positive("size", value) for value in size]
    m, n = values[0], values[1]
    k = values[2] if info.sizes == 3 else 0
    if info.square and m != n:
        raise OptionsError("size", f"{function} takes a square matrix (got {m} x {n})")
    return m, n, k


def solver_spec(function: str, size, dtype=np.float32, *, fill_mode: str | None = None,
                arrangement: str = "col_major", batches_per_block: int = 1, block_dim=None,
                side: str | None = None, transpose: str | None = None, leading_dimension=None,
                target: Target | None = None) -> SolverSpec:
    """A checked :class:`SolverSpec`; ``OptionsError`` naming the argument for what cuSOLVERDx does
    not generate, including a problem that does not fit the shared memory of ``target``.

    ``size``: ``(m, n)`` for the factorizations (an int ``m`` means ``(m, m)``), ``(m, n, k)`` for the
    solves (k right-hand sides) and unmqr (k reflectors). ``fill_mode`` (Cholesky only) defaults to
    ``"lower"``; ``side`` and ``transpose`` (unmqr only) to ``"left"`` and ``"non_transposed"``;
    ``block_dim`` to cuSOLVERDx's suggestion. ``leading_dimension``: ``None`` packs the matrices,
    or ``(lda,)`` for a factorization and ``(lda, ldb)`` otherwise (``ldb`` is ``c``'s for unmqr),
    each at least the packed one (:func:`packed_leading_dimensions`); an int means ``(lda,)``.
    """
    if not isinstance(function, str) or function not in FUNCTIONS:
        raise OptionsError("function", f"expected one of {', '.join(map(repr, FUNCTIONS))} (got {function!r})")
    m, n, k = _sizes(function, size)
    dtype_name = dtype_among("dtype", dtype, tuple(DTYPES))
    if FUNCTIONS[function].fill_mode:
        fill_mode = "lower" if fill_mode is None else fill_mode
        if fill_mode not in FILL_MODES:
            raise OptionsError("fill_mode", f"expected 'lower' or 'upper' (got {fill_mode!r})")
    elif fill_mode is not None:
        raise OptionsError("fill_mode", f"applies to potrf, potrs and posv only (function is {function})")
    if function == "unmqr":
        side = "left" if side is None else side
        transpose = "non_transposed" if transpose is None else transpose
        if side not in SIDES:
            raise OptionsError("side", f"expected 'left' or 'right' (got {side!r})")
        if transpose not in TRANSPOSES:
            raise OptionsError("transpose", f"expected one of {', '.join(map(repr, TRANSPOSES))} (got {transpose!r})")
        reflected = m if side == "left" else n
        if k > reflected:
            raise OptionsError("size", f"unmqr from the {side} applies at most {reflected} reflectors (got k = {k})")
    else:
        for argument, value in (("side", side), ("transpose", transpose)):
            if value is not None:
                raise OptionsError(argument, f"applies to unmqr only (function is {function})")
    if arrangement not in ARRANGEMENTS:
        raise OptionsError("arrangement", f"expected 'col_major' or 'row_major' (got {arrangement!r})")
    batches = _positive("batches_per_block", batches_per_block)
    if block_dim is not None:
        dims = tuple(block_dim) if isinstance(block_dim, (tuple, list)) else (block_dim,)
        if not 1 <= len(dims) <= 3:
            raise OptionsError("block_dim", f"expected 1 to 3 dimensions (got {block_dim!r})")
        dims = tuple(_positive("block_dim", d) for d in dims) + (1,) * (3 - len(dims))
        if dims[0] * dims[1] * dims[2] > MAX_THREADS:
            raise OptionsError("block_dim", f"at most {MAX_THREADS} threads per block (got {dims})")
        block_dim = dims
    spec = SolverSpec(function, m, n, k, dtype_name, fill_mode, arrangement, batches, block_dim, side, transpose)
    if leading_dimension is not None:
        spec = dataclasses.replace(spec, leading_dimension=_leading_dimension(spec, leading_dimension))
    if target is not None:
        needed, limit = shared_memory_bytes(spec), max_shared_memory_per_block(target)
        if needed > limit:
            raise OptionsError("size", f"{function} of {m} x {n}{f' (k = {k})' if k else ''} {dtype_name} with "
                                       f"{batches} batch(es) per block needs {needed} bytes of shared memory; "
                                       f"{target.name} has {limit}")
    return spec


def _leading_dimension(spec: SolverSpec, value) -> tuple[int, ...]:
    packed = packed_leading_dimensions(spec)
    names = ("lda", "ldc" if spec.function == "unmqr" else "ldb")[: len(packed)]
    form = f"({', '.join(names)})"
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = (value,)
    if not isinstance(value, (tuple, list)) or len(value) != len(packed):
        raise OptionsError("leading_dimension", f"{spec.function} takes None, 'suggested' or {form} (got {value!r})")
    dims = tuple(_positive("leading_dimension", v) for v in value)
    for name, dim, least in zip(names, dims, packed):
        if dim < least:
            raise OptionsError("leading_dimension", f"{name} = {dim} is less than the {spec.arrangement} "
                                                    f"matrix needs ({least})")
    return dims


def descriptor(spec: SolverSpec, target: Target) -> descriptors.Descriptor:
    """The libmathdx descriptor (plain data) of ``spec`` for ``target`` (Block execution)."""
    precision, kind = DTYPES[spec.dtype]
    sizes = (spec.m, spec.n, spec.k) if spec.k else (spec.m, spec.n)
    operators: list = [
        ("API", int(mathdx.SolverApi.SMEM)),
        ("FUNCTION", int(spec.info.function)),
        ("SIZE", sizes),
        ("PRECISION", int(precision)),
        ("TYPE", int(kind)),
        ("ARRANGEMENT", int(ARRANGEMENTS[spec.arrangement])),
        ("EXECUTION", int(mathdx.Execution.BLOCK)),
        ("SM", target.sm),
    ]
    if spec.fill_mode is not None:
        operators.append(("FILL_MODE", int(FILL_MODES[spec.fill_mode])))
    if spec.side is not None:
        operators.append(("SIDE", int(SIDES[spec.side])))
    if spec.transpose is not None:
        operators.append(("TRANSPOSE_MODE", int(TRANSPOSES[spec.transpose])))
    if spec.batches_per_block != 1:
        operators.append(("BATCHES_PER_BLOCK", spec.batches_per_block))
    if spec.block_dim is not None:
        operators.append(("BLOCK_DIM", spec.block_dim))
    if spec.leading_dimension is not None:
        operators.append(("LEADING_DIMENSION", spec.leading_dimension))
    return ("cusolverdx", tuple(operators))


@dataclasses.dataclass(frozen=True)
class SolverCode:
    """The generated function (symbol and LTO-IR) of a spec and its traits."""

    entry: cache.CodeEntry
    shared_memory_size: int
    block_dim: tuple[int, int, int]
    suggested_leading_dimensions: tuple[int, ...]  # a's and b's (c's); 0.3.1's trait gives two, the rule one per matrix
    suggested_batches_per_block: int


def _traits(handle) -> dict:
    traits = {"block_dim": list(handle.traits(mathdx.SolverTrait.BLOCK_DIM, 3)),
              "suggested_batches_per_block": handle.trait(mathdx.SolverTrait.SUGGESTED_BATCHES_PER_BLOCK)}
    if mathdx.features().solver_layout_traits:  # 0.3.1 reports them; 0.4 has neither trait
        traits["shared_memory_size"] = handle.trait(mathdx.SolverTrait.SHARED_MEMORY_SIZE)
        traits["suggested_leading_dimensions"] = list(handle.traits(mathdx.SolverTrait.SUGGESTED_LEADING_DIMENSION, 2))
    return traits


def _query(spec: SolverSpec, target: Target) -> dict:
    traits = descriptors.cached_query(descriptor(spec, target), target, _traits)
    if "error" in traits:
        raise OptionsError("size", f"cuSOLVERDx does not generate {spec} ({traits['error']})")
    return traits


def solver_traits(spec: SolverSpec, target: Target) -> dict:
    """cuSOLVERDx's traits of ``spec`` (``shared_memory_size``, ``block_dim``,
    ``suggested_leading_dimensions``, ``suggested_batches_per_block``): queried once, then read from
    the disk cache; no code generated. ``OptionsError`` naming ``size`` where cuSOLVERDx refuses."""
    return _query(spec, target)


def suggested_leading_dimension(spec: SolverSpec, target: Target) -> tuple[int, ...]:
    """cuSOLVERDx's padded leading dimensions for ``spec``'s problem (fewer shared-memory bank
    conflicts), in the form ``leading_dimension`` takes; traits only, no code generated."""
    packed = dataclasses.replace(spec, leading_dimension=None)
    return tuple(_suggested(packed, target, _query(packed, target))[: len(packed_leading_dimensions(spec))])


def _suggested(spec: SolverSpec, target: Target, traits: dict) -> tuple[int, ...]:
    """cuSOLVERDx's trait where the release has it (0.3.1), else its rule."""
    if "suggested_leading_dimensions" in traits:
        return tuple(traits["suggested_leading_dimensions"])
    return padded_leading_dimensions(spec, target)


def solver_code(spec: SolverSpec, target: Target) -> SolverCode:
    """``spec``'s function for ``target``: from the disk cache, or generated by libmathdx (seconds of
    CPU the first time). A combination cuSOLVERDx refuses is an ``OptionsError`` naming ``size``,
    with libmathdx's message."""
    traits = _query(spec, target)
    packed = dataclasses.replace(spec, leading_dimension=None)
    return SolverCode(descriptors.get_code(descriptor(spec, target), target),
                      traits.get("shared_memory_size", shared_memory_bytes(spec)), tuple(traits["block_dim"]),
                      _suggested(packed, target, traits), traits["suggested_batches_per_block"])


_fatbins: dict[str, cache.CodeEntry] = {}  # by cache entry: one read per process


def universal_fatbin() -> cache.CodeEntry:
    """cuSOLVERDx's library code, which every generated function calls: one fatbin, the same for
    every descriptor, cached on disk and kept in memory after the first read."""
    key = {"kind": "cusolverdx-universal-fatbin", **descriptors.library_versions()}
    name = cache.entry_name(key)
    entry = _fatbins.get(name) or cache.load(key)
    if entry is None:
        spec = solver_spec("potrf", (2, 2))
        with timed_step("cuSOLVERDx library fatbin"):
            with descriptors.open_descriptor(descriptor(spec, Target(9, 0))) as handle:
                entry = cache.CodeEntry("cusolverdx-universal-fatbin", handle.universal_fatbin())
        cache.store(key, entry)
    _fatbins[name] = entry
    return entry
