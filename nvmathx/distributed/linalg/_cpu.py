"""The CPU execution space's distributed strategy: every rank gathers the whole operands through the
process group (gloo or MPI), multiplies them with :mod:`nvmathx.linalg` (numpy, in the operands'
precision) and keeps its piece of the result. Simple rather than economical: it moves every piece to
every rank, as fits the CPU space's role (a reference, and a working library without a GPU)."""

from __future__ import annotations

import numpy as np

from ..._core.errors import OptionsError
from ..._core.tensor import host_array
from ._layout import layout_of

__all__ = ["GatherRunner"]


class GatherRunner:
    """One problem's gathers and product on this rank (collective: every rank runs it together)."""

    def __init__(self, problem, group, operands, bias, epilog, alpha, beta):
        self._problem = problem
        self._group = group
        self._epilog = epilog
        da, db, _ = problem.distributions
        world_size = problem.world_size
        self._native = (layout_of(da, (problem.m, problem.k), world_size),
                        layout_of(db, (problem.k, problem.n), world_size), problem.result_layout)
        self.bind(operands, bias, alpha, beta)

    def bind(self, operands, bias, alpha, beta) -> None:
        self._operands, self._bias, self._alpha, self._beta = operands, bias, alpha, beta

    def execute(self, stream=None):
        """This rank's piece of the result, the operand library's kind of host array."""
        from ...linalg import matmul as local_matmul

        if stream is not None:
            raise OptionsError("stream", "CPU execution takes no stream")
        problem, operands = self._problem, self._operands
        kinds = problem.layout.kinds
        whole = [self._gather(host_array(operands[name]), layout, kind) if operands[name] is not None else None
                 for name, layout, kind in zip("abc", self._native, kinds)]
        inputs = None if self._bias is None else {"bias": host_array(self._bias)}
        result = local_matmul(whole[0], whole[1], whole[2], alpha=self._alpha, beta=self._beta, epilog=self._epilog,
                              epilog_inputs=inputs)
        if kinds[2] != "R":
            rows, cols = problem.result_layout.global_indices(problem.rank)
            result = result[np.ix_(rows, cols)]
        return operands["a"].adapter.from_host(np.ascontiguousarray(result))

    def _gather(self, piece: np.ndarray, layout, kind: str) -> np.ndarray:
        """The whole matrix from every rank's piece (a replicated one is already whole)."""
        if kind == "R":
            return piece
        pieces = self._group.allgather_object(np.ascontiguousarray(piece))
        whole = np.empty(layout.shape, piece.dtype)
        for rank, item in enumerate(pieces):
            rows, cols = layout.global_indices(rank)
            whole[np.ix_(rows, cols)] = item
        return whole

    def free(self) -> None:
        self._group = None
        self._operands, self._bias = {}, None
