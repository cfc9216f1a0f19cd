"""The CPU execution space of the distributed FFT: scipy.fft for the local passes, the host group
(gloo or MPI) for the moves."""

from __future__ import annotations

import numpy as np

from .._exchange_plan import ExchangePlan, plan_exchange
from .._host_exchange import exchange_host
from ._algorithm import LocalPass, Move, decomposition_boxes

__all__ = ["CpuPipeline"]


class CpuPipeline:
    """The stages of one problem on this rank, with their exchange plans made once."""

    def __init__(self, problem, group, *, loopback: bool):
        self.problem = problem
        self.group = group
        self.loopback = loopback
        self.steps: list[tuple[LocalPass | Move, ExchangePlan | None]] = []
        for stage in problem.stages:
            if isinstance(stage, Move):
                source = decomposition_boxes(stage.source, stage.shape, problem.world_size)
                target = decomposition_boxes(stage.target, stage.shape, problem.world_size)
                self.steps.append((stage, plan_exchange(source, target, problem.rank)))
            else:
                self.steps.append((stage, None))

    def run(self, data: np.ndarray, sign: int, factor: float) -> np.ndarray:
        """Transform this rank's piece ``data`` (collective); returns the rank's result piece."""
        import scipy.fft

        with scipy.fft.set_backend("scipy", only=True):
            for stage, exchange in self.steps:
                if exchange is not None:
                    target = np.empty(exchange.target.shape, dtype=data.dtype)
                    exchange_host(self.group, exchange, np.ascontiguousarray(data), target, loopback=self.loopback)
                    data = target
                else:
                    assert isinstance(stage, LocalPass)  # a Move always has its exchange
                    data = _local_pass(scipy.fft, stage, data, sign)
        if factor != 1.0:
            data = data * data.real.dtype.type(factor)
        return data

    def free(self) -> None:
        self.steps = []


def _local_pass(backend, stage: LocalPass, data, sign):
    """One unnormalised local transform (cuFFT's convention, both directions)."""
    axes = stage.axes
    if stage.fft_type == "R2C":
        return backend.rfftn(data, axes=axes)
    if stage.fft_type == "C2R":
        return backend.irfftn(data, s=stage.lengths, axes=axes, norm="forward")
    if sign < 0:
        return backend.fftn(data, axes=axes)
    return backend.ifftn(data, axes=axes, norm="forward")
