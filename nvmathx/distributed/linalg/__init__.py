"""Distributed matrix multiplication: :func:`matmul` and the stateful :class:`Matmul`, on cuBLASMp (GPU)
or on the CPU execution space.

2-D matrices only (cuBLASMp has no batching). Every rank passes its own C-ordered piece of ``a``
(``(M, K)``), ``b`` (``(K, N)``) and optionally ``c`` (``(M, N)``), and ``distributions=(da, db,
dd)`` says how each global matrix is split: ``Slab.X`` (row slabs), ``Slab.Y`` (column slabs),
``Replicated()`` or ``BlockCyclic(process_grid, block_shape)`` (``c`` shares the result's). The
result is always the whole product ``alpha * A @ B + beta * C`` (a split K is reduced), then the
epilog (``RELU``, ``GELU``, ``BIAS``, ``RELU_BIAS``, ``GELU_BIAS``; the bias is the whole ``(N,)``
vector on every rank), distributed as ``dd``.

Matmul slabs follow cuBLASMp's block rule, not the FFT's: ``n`` rows (or columns) over ``P`` ranks
in blocks of ``ceil(n / P)`` (:func:`local_shape` gives each rank's piece). cuBLASMp is
column-major; a C-ordered product ``D = A @ B`` is run as ``D^T = B^T A^T`` over the same memory,
so a row split is a column split of the transpose and a user process grid ``(pr, pc)`` with ranks
in row-major order is cuBLASMp's ``(pc, pr)`` grid in column-major order.

A world of one rank, and the combinations whose result pieces need no other rank's data (data
parallel, column parallel with a replicated input), multiply each rank's own pieces with
:mod:`nvmathx.linalg`; ``MatmulOptions(force_distributed=True)`` runs the distributed path instead.
On a GPU that is one ``cublasMpMatmul`` (cuBLASMp 0.7, its no-overlap algorithms) followed, for an
epilog, by one kernel over the rank's piece; a replicated result is computed in row blocks and
all-gathered through NCCL.

The CPU execution space (numpy operands) gathers the operands to every rank through the process
group and multiplies them with :func:`nvmathx.linalg.matmul`; it serves CPU-only users and is the
reference the GPU path is tested against.
"""

from __future__ import annotations

from collections.abc import Sequence

from .._distributions import MatrixDistribution
from ._functions import matmul
from ._layout import layout_of, normalize_distribution
from ._matmul import Matmul
from ._options import MatmulOptions

__all__ = ["Matmul", "MatmulOptions", "matmul", "local_shape"]


def local_shape(global_shape: Sequence[int], distribution: MatrixDistribution, *, rank: int | None = None,
                world_size: int | None = None) -> tuple:
    """The shape of a rank's piece of a ``global_shape`` matrix distributed for matmul.

    Parameters
    ----------
    global_shape : (int, int)
    distribution : Slab.X, Slab.Y, Replicated() or BlockCyclic
        Slabs hold ``ceil(n / P)`` rows (columns) per rank, the remainder, then none (cuBLASMp's
        block rule); BlockCyclic deals ``block_shape`` blocks round-robin over its process grid,
        ranks in row-major order over the grid.
    rank, world_size : int, optional
        Default: the distributed context's.

    Raises
    ------
    OptionsError
        For a shape that is not two non-negative integers, an unknown distribution, a rank outside
        the world or a BlockCyclic grid of another size.

    Examples
    --------
    >>> from nvmathx.distributed import Slab
    >>> from nvmathx.distributed.linalg import local_shape
    >>> [local_shape((10, 4), Slab.X, rank=r, world_size=4) for r in range(4)]
    [(3, 4), (3, 4), (3, 4), (1, 4)]
    """
    from .._pieces import _rank_and_size
    from ._problem import check_global_shape

    shape = check_global_shape(global_shape)
    distribution = normalize_distribution(distribution, "distribution")
    rank, world_size = _rank_and_size(rank, world_size)
    return layout_of(distribution, shape, world_size, "distribution").local_shape(rank)

