"""Distributed matrices for matmul: each rank's piece (ScaLAPACK's ``numroc``), the global shapes the
ranks' pieces add up to, and the mapping of a row-major (C order) product onto cuBLASMp's
column-major, block-cyclic one. Pure: functions of shapes, distributions and ranks only, shared by
the CPU space and the GPU path and unit-tested without a GPU.

The user's frame is row-major: ``A`` is ``(M, K)``, ``B`` is ``(K, N)``, ``D`` is ``(M, N)``, and a
rank's piece is a C-ordered array. The same memory read column-major holds the transposes, so
cuBLASMp computes ``D^T = B^T A^T`` without transposes (``N``, ``N``): its ``A`` is the user's ``b``,
its ``B`` the user's ``a``, and its ``(m, n, k)`` is ``(N, M, K)``. A row split of a user matrix is a
column split of its transpose: a user process grid ``(pr, pc)`` with ranks in row-major order is
cuBLASMp's ``(pc, pr)`` grid in column-major order, with the block shape swapped.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..._core.errors import OperandError, OptionsError, UnsupportedLayoutError
from .._distributions import BlockCyclic, Replicated, Slab

__all__ = [
    "numroc", "slab_block", "Axis", "MatrixLayout", "normalize_distribution", "layout_of", "infer_global_shape",
    "MatmulLayout", "MpMatrix", "CublasMpCall", "plan_layout", "cublasmp_call", "local_recipe", "row_blocks",
    "describe_layout", "COMMUNICATION_FREE",
]


def numroc(n: int, nb: int, iproc: int, isrcproc: int, nprocs: int) -> int:
    """How many of ``n`` rows (or columns), dealt in blocks of ``nb`` round-robin from process
    ``isrcproc`` over ``nprocs`` processes, process ``iproc`` holds (ScaLAPACK's NUMROC)."""
    distance = (nprocs + iproc - isrcproc) % nprocs
    blocks = n // nb
    count = (blocks // nprocs) * nb
    extra = blocks % nprocs
    if distance < extra:
        count += nb
    elif distance == extra:
        count += n % nb
    return count


def slab_block(n: int, world_size: int) -> int:
    """The block of a matmul slab: ``ceil(n / P)`` (at least 1), so ranks hold ``nb, ..., nb``, the
    remainder, then nothing (cuBLASMp's rule, not the FFT's)."""
    return max(1, -(-n // world_size))


@dataclass(frozen=True)
class Axis:
    """One axis of a distributed matrix: ``extent`` indices in blocks of ``block`` over ``procs``
    process rows (or columns), starting at process 0."""

    extent: int
    procs: int
    block: int

    @property
    def split(self) -> bool:
        return self.procs > 1

    @property
    def contiguous(self) -> bool:
        """Whether each process holds one run of consecutive indices (at most one block)."""
        return self.procs == 1 or self.block * self.procs >= self.extent

    def count(self, coord: int) -> int:
        return numroc(self.extent, self.block, coord, 0, self.procs)

    def indices(self, coord: int) -> list:
        """The global indices process ``coord`` holds, in local order."""
        found: list[int] = []
        for start in range(coord * self.block, self.extent, self.block * self.procs):
            found.extend(range(start, min(start + self.block, self.extent)))
        return found

    def start(self, coord: int) -> int:
        """The first global index of a contiguous axis's run (the extent when the run is empty)."""
        return min(coord * self.block, self.extent) if self.split else 0


@dataclass(frozen=True)
class MatrixLayout:
    """How a row-major matrix is spread over the ranks (ranks fill the ``(rows.procs, cols.procs)``
    grid in row-major order).

    ``view`` marks a replicated matrix presented in this layout: every rank holds the whole matrix,
    and its piece is the rectangle its coordinates select (axes are then contiguous).
    """

    rows: Axis
    cols: Axis
    view: bool = False

    @property
    def shape(self) -> tuple:
        return self.rows.extent, self.cols.extent

    def coords(self, rank: int) -> tuple:
        return rank // self.cols.procs, rank % self.cols.procs

    def piece_shape(self, rank: int) -> tuple:
        """The extents of the rank's piece (of its local array unless ``view``)."""
        row, col = self.coords(rank)
        return self.rows.count(row), self.cols.count(col)

    def local_shape(self, rank: int) -> tuple:
        """The shape of the rank's local array."""
        return self.shape if self.view else self.piece_shape(rank)

    def origin(self, rank: int) -> tuple:
        """A view's rectangle corner in the rank's (whole) local array."""
        row, col = self.coords(rank)
        return self.rows.start(row), self.cols.start(col)

    def global_indices(self, rank: int) -> tuple:
        """(row indices, column indices) of the global matrix the rank's piece holds."""
        row, col = self.coords(rank)
        return self.rows.indices(row), self.cols.indices(col)


def normalize_distribution(value, argument: str = "distributions"):
    """``Slab.X``, ``Slab.Y`` (or "X"/"Y"), ``Replicated()`` (or the class) or a ``BlockCyclic``."""
    if isinstance(value, (Slab, Replicated, BlockCyclic)):
        return value
    if value is Replicated:
        return Replicated()
    if isinstance(value, str) and value.upper() in ("X", "Y"):
        return Slab(value.upper())
    raise OptionsError(argument, f"expected Slab.X, Slab.Y, Replicated() or BlockCyclic(process_grid, block_shape) "
                                 f"(got {value!r})")


def layout_of(distribution, shape, world_size: int, argument: str = "distributions") -> MatrixLayout:
    """The layout of a ``shape`` matrix under a distribution (a Replicated matrix: one process).

    Raises
    ------
    OptionsError
        For a BlockCyclic grid of another size than the world.
    """
    rows, cols = shape
    if isinstance(distribution, Replicated):
        return MatrixLayout(Axis(rows, 1, max(1, rows)), Axis(cols, 1, max(1, cols)))
    if distribution is Slab.X:
        return MatrixLayout(Axis(rows, world_size, slab_block(rows, world_size)), Axis(cols, 1, max(1, cols)))
    if distribution is Slab.Y:
        return MatrixLayout(Axis(rows, 1, max(1, rows)), Axis(cols, world_size, slab_block(cols, world_size)))
    (pr, pc), (br, bc) = distribution.process_grid, distribution.block_shape
    if pr * pc != world_size:
        raise OptionsError(argument, f"{distribution} has a {pr} x {pc} process grid, but the world has {world_size} "
                                     "ranks")
    return MatrixLayout(Axis(rows, pr, br), Axis(cols, pc, bc))


def _grid(distribution, world_size: int) -> tuple:
    if isinstance(distribution, Replicated):
        return 1, 1
    if isinstance(distribution, Slab):
        return (world_size, 1) if distribution is Slab.X else (1, world_size)
    return distribution.process_grid


def infer_global_shape(distribution, local_shapes, argument: str) -> tuple:
    """The global shape the ranks' pieces (their local shapes, in rank order) form, after checking
    that every piece is the one the distribution gives its rank.

    Raises
    ------
    OperandError
        Naming ``argument``, when the pieces do not form a global matrix of that distribution.
    """
    world_size = len(local_shapes)
    if isinstance(distribution, Replicated):
        if len(set(local_shapes)) != 1:
            raise OperandError(argument, f"a Replicated matrix has the same shape on every rank (got {local_shapes})")
        shape = local_shapes[0]
    else:
        pr, pc = _grid(distribution, world_size)
        if pr * pc != world_size:
            raise OptionsError("distributions", f"{distribution} has a {pr} x {pc} process grid, but the world has "
                                                f"{world_size} ranks")
        rows = sum(local_shapes[i * pc][0] for i in range(pr))  # down the first process column
        cols = sum(local_shapes[j][1] for j in range(pc))  # along the first process row
        shape = (rows, cols)
    layout = layout_of(distribution, shape, world_size)
    for rank, local in enumerate(local_shapes):
        if tuple(local) != layout.local_shape(rank):
            raise OperandError(argument, f"rank {rank} holds a {tuple(local)} piece, but {_name(distribution)} of the "
                                         f"{shape} global matrix over {world_size} ranks gives it "
                                         f"{layout.local_shape(rank)} (slabs: ceil(n / P) rows or columns per rank, "
                                         "the remainder, then none)")
    return shape


def _name(distribution) -> str:
    return repr(distribution) if isinstance(distribution, Slab) else str(distribution)


# -- the product ----------------------------------------------------------------------------------

# (a, b, d) distribution kinds whose result pieces need no other rank's data
COMMUNICATION_FREE = {("R", "R", "R"), ("R", "R", "X"), ("R", "R", "Y"), ("X", "R", "X"), ("R", "Y", "Y")}


def _kind(distribution) -> str:
    if isinstance(distribution, Replicated):
        return "R"
    if isinstance(distribution, Slab):
        return distribution.value
    return "B"


@dataclass(frozen=True)
class MatmulLayout:
    """The global product and how it runs: ``strategy`` "local" (every rank multiplies its own pieces,
    no communication) or "distributed" (cuBLASMp on the GPU, a gather on the CPU space); ``a``, ``b``,
    ``d`` are the layouts the distributed strategy presents (replicated operands as views) and
    ``gather`` holds the row ranges of a Replicated result computed in row blocks and then
    all-gathered (None otherwise)."""

    m: int
    k: int
    n: int
    world_size: int
    kinds: tuple
    strategy: str
    a: MatrixLayout
    b: MatrixLayout
    d: MatrixLayout
    gather: tuple | None


def plan_layout(shape, distributions, world_size: int, *, forced: bool = False) -> MatmulLayout:
    """How the ``(M, K, N)`` product of distributions ``(da, db, dd)`` runs over ``world_size`` ranks.

    The local strategy serves a world of one rank and the combinations in
    :data:`COMMUNICATION_FREE`, unless ``forced``. Otherwise every operand gets a block-cyclic
    layout: distributed ones their own, replicated inputs the view that keeps each rank's piece one
    rectangle of its local array, a replicated result the row blocks it is all-gathered from; then
    the block sizes of the axes the operands share (M of a and d, K of a and b, N of b and d) are
    made equal, as cuBLASMp requires.

    Raises
    ------
    UnsupportedLayoutError
        Naming ``distributions``, for a combination cuBLASMp cannot serve.
    """
    m, k, n = shape
    da, db, dd = distributions
    kinds = (_kind(da), _kind(db), _kind(dd))
    a = layout_of(da, (m, k), world_size)
    b = layout_of(db, (k, n), world_size)
    d = layout_of(dd, (m, n), world_size)
    if not forced and (world_size == 1 or kinds in COMMUNICATION_FREE):
        return MatmulLayout(m, k, n, world_size, kinds, "local", a, b, d, None)
    gather = None
    if kinds[2] == "R":
        d, gather = _gathered_result(a if kinds[0] != "R" else None, m, n, world_size)
    if kinds[0] == "R":
        a = _replicated_view("a", (m, k), (d.rows, b.rows if kinds[1] != "R" else None), world_size, prefer=0)
    if kinds[1] == "R":
        b = _replicated_view("b", (k, n), (a.cols, d.cols), world_size, prefer=1)
    a, b, d = _matched_blocks(a, b, d)
    return MatmulLayout(m, k, n, world_size, kinds, "distributed", a, b, d, gather)


def _gathered_result(a, m: int, n: int, world_size: int):
    """A replicated result's row blocks (rows of a's block when a splits M), and their ranges."""
    block = a.rows.block if a is not None and a.rows.split else slab_block(m, world_size)
    if block * world_size < m:
        raise UnsupportedLayoutError("distributions", f"a Replicated result is computed in row blocks of a's M block "
                                                      f"({block}) and all-gathered, which needs at most one block per "
                                                      f"rank ({block} x {world_size} ranks < M = {m})",
                                     "give a larger M block, or take the result as BlockCyclic")
    layout = MatrixLayout(Axis(m, world_size, block), Axis(n, 1, max(1, n)), view=True)
    return layout, row_blocks(m, block, world_size)


def row_blocks(m: int, block: int, world_size: int) -> tuple:
    """``(start, stop)`` of each rank's rows when ``m`` rows are dealt one block per rank."""
    return tuple((min(r * block, m), min((r + 1) * block, m)) for r in range(world_size))


def _replicated_view(name: str, shape, partners, world_size: int, *, prefer: int) -> MatrixLayout:
    """A replicated operand as a layout whose pieces are single rectangles: one axis split over every
    rank, in the block its partner axis uses (when split), the other axis whole. ``partners`` are
    the axes of the other operands that share each axis (None: free); ``prefer`` is the axis to
    split first (not K, which would add a reduction)."""
    for axis in (prefer, 1 - prefer):
        partner = partners[axis]
        block = partner.block if partner is not None and partner.split else slab_block(shape[axis], world_size)
        if block * world_size < shape[axis]:
            continue
        other = partners[1 - axis]
        other_block = other.block if other is not None and other.split else max(1, shape[1 - axis])
        split, whole = Axis(shape[axis], world_size, block), Axis(shape[1 - axis], 1, other_block)
        return MatrixLayout(*((split, whole) if axis == 0 else (whole, split)), view=True)
    raise UnsupportedLayoutError("distributions", f"the Replicated {name} meets block-cyclic partners on both axes "
                                                  f"(cuBLASMp reads a replicated operand as one rectangle per rank)",
                                 f"distribute {name} as its partners are, or as slabs")


def _matched_blocks(a: MatrixLayout, b: MatrixLayout, d: MatrixLayout) -> tuple:
    """Equal block sizes on the shared axes: a split axis's block passes to an unsplit partner."""
    m_block = _shared_block("M", ("a", a.rows), ("d", d.rows))
    k_block = _shared_block("K", ("a", a.cols), ("b", b.rows))
    n_block = _shared_block("N", ("b", b.cols), ("d", d.cols))
    a = replace(a, rows=replace(a.rows, block=m_block), cols=replace(a.cols, block=k_block))
    b = replace(b, rows=replace(b.rows, block=k_block), cols=replace(b.cols, block=n_block))
    d = replace(d, rows=replace(d.rows, block=m_block), cols=replace(d.cols, block=n_block))
    return a, b, d


def _shared_block(label: str, first, second) -> int:
    (name1, axis1), (name2, axis2) = first, second
    if axis1.split and axis2.split and axis1.block != axis2.block:
        raise UnsupportedLayoutError("distributions", f"{name1} and {name2} split {label} in blocks of {axis1.block} "
                                                      f"and {axis2.block}; cuBLASMp needs one block size per axis",
                                     f"give {name1} and {name2} the same block along {label}")
    if axis1.split:
        return axis1.block
    if axis2.split:
        return axis2.block
    return max(1, axis1.extent)


# -- cuBLASMp's view --------------------------------------------------------------------------------


@dataclass(frozen=True)
class MpMatrix:
    """What ``cublasMpMatrixDescriptorCreate`` takes for one operand on one rank (column-major: the
    transpose of the user's matrix), plus the grid it lives on and where its piece starts in the
    rank's local array (``offset``, in elements)."""

    m: int
    n: int
    mb: int
    nb: int
    rsrc: int
    csrc: int
    lld: int
    nprow: int
    npcol: int
    layout: str  # "COL_MAJOR": rank = column * nprow + row
    variant: int  # a second grid object of the same shape (0 or 1)
    offset: int

    @property
    def grid_key(self) -> tuple:
        return self.nprow, self.npcol, self.layout, self.variant


@dataclass(frozen=True)
class CublasMpCall:
    """One rank's ``cublasMpMatmul``: ``D = alpha op(A) op(B) + beta C`` with cuBLASMp's A the user's
    ``b`` and its B the user's ``a`` (C and D share ``d``)."""

    m: int
    n: int
    k: int
    transa: str
    transb: str
    a: MpMatrix
    b: MpMatrix
    d: MpMatrix

    @property
    def grid_keys(self) -> tuple:
        """The distinct grids, in the order every rank creates them."""
        keys = []
        for matrix in (self.a, self.b, self.d):
            if matrix.grid_key not in keys:
                keys.append(matrix.grid_key)
        return tuple(keys)


def _mp_matrix(layout: MatrixLayout, rank: int, variant: int) -> MpMatrix:
    """The transposed (column-major) description of a user layout's piece on ``rank``."""
    rows, cols = layout.rows, layout.cols
    if layout.view:
        row, col = layout.origin(rank)
        lld, offset = max(1, cols.extent), row * cols.extent + col
    else:
        lld, offset = max(1, layout.piece_shape(rank)[1]), 0
    return MpMatrix(cols.extent, rows.extent, cols.block, rows.block, 0, 0, lld, cols.procs, rows.procs, "COL_MAJOR",
                    variant, offset)


def _needs_second_grid(layout: MatmulLayout) -> bool:
    """nvmath-python's workaround: cuBLASMp runs SUMMA when A, B and D share one grid object, which
    fails for 1-D grids and non-cyclic blocks; D then gets a second grid of the same shape."""
    grids = {(m.cols.procs, m.rows.procs) for m in (layout.a, layout.b, layout.d)}
    if len(grids) != 1:
        return False
    (grid,) = grids
    if layout.world_size in grid:
        return True
    if any(matrix.rows.contiguous and matrix.cols.contiguous for matrix in (layout.a, layout.b, layout.d)):
        return True
    return any(axis.split and axis.block == axis.extent // axis.procs for axis in (layout.d.rows, layout.d.cols))


def cublasmp_call(layout: MatmulLayout, rank: int) -> CublasMpCall:
    """The cuBLASMp descriptors of a distributed layout on ``rank`` (m, n, k = N, M, K; no transposes)."""
    second = 1 if _needs_second_grid(layout) else 0
    return CublasMpCall(layout.n, layout.m, layout.k, "N", "N", _mp_matrix(layout.b, rank, 0),
                        _mp_matrix(layout.a, rank, 0), _mp_matrix(layout.d, rank, second))


# -- the local strategy ---------------------------------------------------------------------------------


def local_recipe(layout: MatmulLayout, rank: int) -> tuple:
    """(rows of a, columns of b, elements of the bias) as slices of the rank's local arrays whose
    product (plus the bias) is its piece of the result, in the local strategy."""
    (r0, r1), (c0, c1) = _piece_range(layout.d, rank)
    rows = _part(r0, r1, layout.m) if layout.kinds[0] == "R" else slice(None)
    cols = _part(c0, c1, layout.n) if layout.kinds[1] == "R" else slice(None)
    return rows, cols, _part(c0, c1, layout.n)


def _part(start: int, stop: int, extent: int) -> slice:
    """``start:stop``, or ``:`` when that is the whole axis."""
    return slice(None) if (start, stop) == (0, extent) else slice(start, stop)


def _piece_range(layout: MatrixLayout, rank: int) -> tuple:
    """((first row, end row), (first column, end column)) of a slab or replicated piece."""
    row, col = layout.coords(rank)
    r0, c0 = layout.rows.start(row), layout.cols.start(col)
    return (r0, r0 + layout.rows.count(row)), (c0, c0 + layout.cols.count(col))


def describe_layout(layout: MatmulLayout) -> str:
    """A one-line summary for logs."""
    return (f"{layout.strategy} matmul (M, K, N) = ({layout.m}, {layout.k}, {layout.n}) over {layout.world_size} "
            f"rank(s), distributions {layout.kinds}" + (", result row blocks all-gathered" if layout.gather else ""))

