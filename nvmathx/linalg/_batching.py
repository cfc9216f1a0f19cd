"""How a broadcast matmul batch maps onto cuBLASLt calls (pure functions of shapes and strides).

cuBLASLt takes one batch count and one batch stride per operand. A numpy.matmul batch whose
operands are partly broadcast, such as ``(2, 1, M, K) @ (3, K, N)``, has no such stride: it runs as
several calls of one plan, each at its own pointer offsets, or with inputs first copied to the full
batch ("expanded") so that fewer calls cover it. :func:`plan_batches` decides:

1. batch dimensions of extent 1 are dropped and neighbours whose strides chain in every operand
   (``outer == inner * extent``) are merged;
2. for every set of inputs that may be expanded (an expanded input is dense over the whole batch),
   each merged dimension is tried as cuBLASLt's batch, the others looped over;
3. the cheapest choice wins, counting the bytes every call reads and writes, the bytes an
   expansion reads and writes, and :data:`LAUNCH_BYTES` per kernel launch (a GEMM or a copy).
   Ties go to fewer expansions, then to fewer calls.

Operands are named (``"a"``, ``"b"``, ``"c"``, ``"d"``, ``"bias"``, ...); their batch shapes are
right-aligned against the result's and may be shorter or hold 1s (broadcast).
"""

from __future__ import annotations

import itertools
from typing import NamedTuple

__all__ = ["LAUNCH_OPERANDS", "LAUNCH_BYTES", "BatchOperand", "BatchPlan", "aligned_strides", "dense_batch_strides",
           "plan_batches"]

# What a launch offset moves, in order: the user's a, b, c, d (argument slots), then descriptor pointers.
LAUNCH_OPERANDS = ("a", "b", "c", "d", "bias", "aux", "bgrad")

# One kernel launch costs about as long as moving this many bytes (docs/guide/linalg.rst,
# "Performance notes").
LAUNCH_BYTES = 32 << 20


class BatchOperand(NamedTuple):
    """One operand's batch as :func:`plan_batches` sees it."""

    shape: tuple  # batch shape (right-aligned against the result's batch; 1: broadcast)
    strides: tuple  # batch strides, in elements
    matrix_elements: int  # elements of one matrix (dense), for the byte count
    itemsize: int
    expandable: bool = False  # an input that may be copied to the full batch


class BatchPlan(NamedTuple):
    """The cuBLASLt batch of one call and the calls that cover the whole batch."""

    batch_count: int  # matrices per call (cuBLASLt's BATCH_COUNT)
    strides: dict  # name -> batch stride within a call, in elements (0: broadcast, or count 1)
    names: tuple  # the order of the offsets below
    offsets: tuple  # per call, the element offset of each operand (in ``names`` order)
    expand: tuple  # inputs copied to the full batch (dense, C order) before the calls
    cost: int  # estimated bytes moved, launches included

    @property
    def calls(self) -> int:
        return len(self.offsets)

    @property
    def single(self) -> bool:
        """One call on the operands as they are: the common case, with nothing to loop over."""
        return len(self.offsets) == 1 and not self.expand

    def summary(self) -> str:
        """How the batch runs, in words (for the log)."""
        calls = f"{self.calls} cuBLASLt call{'s' if self.calls > 1 else ''} of {self.batch_count} matrices"
        if not self.expand:
            return calls + ("" if self.single else " at offsets per call, nothing copied")
        return f"{calls} after copying {', '.join(self.expand)} to the full batch ({self.cost} bytes moved, estimated)"


def dense_batch_strides(batch_shape, matrix_elements: int) -> tuple:
    """Batch strides (elements) of a C-ordered stack of ``matrix_elements``-element matrices."""
    strides, step = [], matrix_elements
    for extent in reversed(tuple(batch_shape)):
        strides.append(step)
        step *= max(extent, 1)
    return tuple(reversed(strides))


def aligned_strides(batch_shape, shape, strides) -> tuple:
    """An operand's batch strides over every dimension of ``batch_shape`` (0 where it is broadcast).

    Raises ValueError when ``shape`` does not broadcast to ``batch_shape`` (callers check first).
    """
    lead = len(batch_shape) - len(shape)
    if lead < 0:
        raise ValueError(f"batch shape {tuple(shape)} has more dimensions than {tuple(batch_shape)}")
    aligned = [0] * lead
    for extent, own, stride in zip(batch_shape[lead:], shape, strides):
        if own not in (1, extent):
            raise ValueError(f"batch shape {tuple(shape)} does not broadcast to {tuple(batch_shape)}")
        aligned.append(stride if own == extent and extent > 1 else 0)
    return tuple(aligned)


def _merge(batch_shape, columns) -> list:
    """[(extent, strides by operand)] with unit dimensions dropped and chaining neighbours merged."""
    merged: list[tuple[int, tuple]] = []
    for axis, extent in enumerate(batch_shape):
        if extent == 1:
            continue
        strides = tuple(column[axis] for column in columns)
        if merged:
            outer_extent, outer = merged[-1]
            if all(o == s * extent for o, s in zip(outer, strides)):
                merged[-1] = (outer_extent * extent, strides)
                continue
        merged.append((extent, strides))
    return merged


def _product(values) -> int:
    result = 1
    for value in values:
        result *= value
    return result


def _best_batch_axis(merged, matrix_bytes, launch_bytes):
    """(cost, axis or None, calls): the merged dimension that, as cuBLASLt's batch, costs least."""
    total = _product(extent for extent, _ in merged)
    best = (total * (sum(matrix_bytes) + launch_bytes), None, total)  # every matrix a call of its own
    for axis, (extent, strides) in enumerate(merged):
        if any(stride < 0 for stride in strides):
            continue
        calls = total // extent
        per_call = sum(size * (extent if stride else 1) for size, stride in zip(matrix_bytes, strides))
        option = (calls * (per_call + launch_bytes), axis, calls)
        if (option[0], option[2]) < (best[0], best[2]):
            best = option
    return best


def _offsets(merged, axis, width: int) -> tuple:
    """Element offsets of ``width`` operands for every call: the loop over the merged dimensions
    other than ``axis``, in C order."""
    loops = [(extent, strides) for index, (extent, strides) in enumerate(merged) if index != axis]
    offsets = []
    for index in itertools.product(*(range(extent) for extent, _ in loops)):
        offsets.append(tuple(sum(i * strides[k] for i, (_, strides) in zip(index, loops)) for k in range(width)))
    return tuple(offsets)


def _needs_expansion(batch_shape, column) -> bool:
    """Whether an operand's own strides fail to chain into one dimension (so it may block others)."""
    return len(_merge(batch_shape, [column])) > 1


def plan_batches(batch_shape, operands: dict, launch_bytes: int = LAUNCH_BYTES,
                 max_expanded_bytes: int | None = None) -> BatchPlan:
    """Cover the batch ``batch_shape`` with as few bytes moved (and launches) as possible.

    Parameters
    ----------
    batch_shape : tuple
        The result's batch shape.
    operands : dict
        ``name -> BatchOperand``: every buffer a call reads or writes, results included (outputs
        are dense and never expandable).
    launch_bytes : int
        What one kernel launch is worth in bytes moved.
    max_expanded_bytes : int, optional
        Most bytes all expanded copies together may take (default: no limit).

    Returns
    -------
    BatchPlan
        Offsets are in elements of each operand, in the frame of its expanded copy when expanded.
    """
    batch_shape = tuple(batch_shape)
    names = tuple(operands)
    columns = [aligned_strides(batch_shape, op.shape, op.strides) for op in operands.values()]
    matrix_bytes = [op.matrix_elements * op.itemsize for op in operands.values()]
    batch_total = _product(batch_shape)
    candidates = [i for i, op in enumerate(operands.values())
                  if op.expandable and _needs_expansion(batch_shape, columns[i])]
    best = None
    for size in range(len(candidates) + 1):
        for chosen in itertools.combinations(candidates, size):
            expanded_bytes = sum(batch_total * matrix_bytes[i] for i in chosen)
            if chosen and max_expanded_bytes is not None and expanded_bytes > max_expanded_bytes:
                continue
            trial = list(columns)
            copy_cost = 0
            for i in chosen:
                op = operands[names[i]]
                trial[i] = dense_batch_strides(batch_shape, op.matrix_elements)
                copy_cost += _product(op.shape) * matrix_bytes[i] + batch_total * matrix_bytes[i] + launch_bytes
            merged = _merge(batch_shape, trial)
            cost, axis, calls = _best_batch_axis(merged, matrix_bytes, launch_bytes)
            key = (cost + copy_cost, size, calls)
            if best is None or key < best[0]:
                best = (key, chosen, merged, axis)
    assert best is not None  # no expansion (size 0) is always a candidate
    (cost, _, _), chosen, merged, axis = best
    count = merged[axis][0] if axis is not None else 1
    in_batch = merged[axis][1] if axis is not None and count > 1 else (0,) * len(names)
    return BatchPlan(count, dict(zip(names, in_batch)), names, _offsets(merged, axis, len(names)),
                     tuple(names[i] for i in chosen), cost)
