"""An exchange on the CPU execution space: numpy pieces packed by slicing and moved as bytes
through the host group (gloo or MPI), following an :class:`ExchangePlan`."""

from __future__ import annotations

import numpy as np

from ._exchange_plan import ExchangePlan, box_slices

__all__ = ["exchange_host"]


def exchange_host(group, plan: ExchangePlan, source: np.ndarray, target: np.ndarray, *, loopback: bool = False) -> None:
    """Move ``source`` (this rank's piece before, shape ``plan.source.shape``) into ``target`` (after).

    The rank's own piece is copied directly unless ``loopback`` sends it through the group like any
    other (what the GPU path's ``loopback`` option does through NCCL). Collective: every rank of the
    group calls it, with world size 1 included when ``loopback``.
    """
    dtype = source.dtype
    if group.size == 1 and not loopback:
        for item in plan.sends:
            target[box_slices(_local_in(plan, item))] = source[box_slices(item.local)]
        return
    remote_sends = [item for item in plan.sends if loopback or item.peer != plan.rank]
    remote_receives = [item for item in plan.receives if loopback or item.peer != plan.rank]
    send_counts = [0] * group.size
    packed = np.empty(sum(item.count for item in remote_sends), dtype=dtype)
    offset = 0
    for item in remote_sends:
        packed[offset:offset + item.count] = source[box_slices(item.local)].reshape(-1)
        send_counts[item.peer] = item.count * dtype.itemsize
        offset += item.count
    if not loopback:
        for item in plan.sends:
            if item.peer == plan.rank:
                target[box_slices(_local_in(plan, item))] = source[box_slices(item.local)]
    receive_counts = [0] * group.size
    for item in remote_receives:
        receive_counts[item.peer] = item.count * dtype.itemsize
    received = group.alltoallv(packed.view(np.uint8), send_counts, receive_counts).view(dtype)
    offset = 0
    for item in remote_receives:
        target[box_slices(item.local)] = received[offset:offset + item.count].reshape(item.box.shape)
        offset += item.count


def _local_in(plan: ExchangePlan, item):
    """Where a piece this rank sends to itself lands in its target array."""
    return item.box.relative_to(plan.target)
