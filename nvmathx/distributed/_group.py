"""Host-side collectives over the process group the user started: torch.distributed or mpi4py.

The group carries everything that is not array data on the GPU: the NCCL unique id, the agreement
on arguments and outcomes, and, on the CPU execution space, the exchanges themselves (as bytes).
Only this module knows which of the two launchers' APIs a group comes from.
"""

from __future__ import annotations

import sys
from abc import ABC, abstractmethod

import numpy as np

from .._core.errors import OptionsError

__all__ = ["HostGroup", "wrap_process_group"]


class HostGroup(ABC):
    """The collectives nvmathx needs, on one process group. Every method is collective: all ranks
    call it, in the same order."""

    rank: int
    size: int
    name: str
    exchanges_host_data: bool  # whether host (numpy) buffers can be exchanged through it

    @abstractmethod
    def allgather_object(self, obj) -> list:
        """Every rank's ``obj`` (picklable), in rank order."""

    @abstractmethod
    def broadcast_object(self, obj, root: int = 0):
        """``root``'s ``obj`` on every rank."""

    @abstractmethod
    def alltoallv(self, send: np.ndarray, send_counts, recv_counts) -> np.ndarray:
        """Exchange bytes: ``send`` (uint8, 1-D) holds ``send_counts[p]`` bytes for each rank ``p`` in
        rank order; the result holds ``recv_counts[p]`` bytes from each rank ``p``."""


class _TorchGroup(HostGroup):
    def __init__(self, group):
        import torch.distributed as dist

        if not dist.is_available() or not dist.is_initialized():
            raise OptionsError("process_group", "torch.distributed is not initialized: call "
                                                "torch.distributed.init_process_group() first, or pass an mpi4py "
                                                "communicator")
        self._dist = dist
        self._group = group if group is not None else dist.group.WORLD
        self.rank = dist.get_rank(self._group)
        self.size = dist.get_world_size(self._group)
        backend = str(dist.get_backend(self._group)).lower()
        self.name = f"torch.distributed ({backend})"
        # "nccl" alone moves only CUDA tensors; "gloo", "mpi" and "cpu:gloo,cuda:nccl" move host ones.
        self.exchanges_host_data = backend != "nccl"

    def allgather_object(self, obj) -> list:
        gathered = [None] * self.size
        self._dist.all_gather_object(gathered, obj, group=self._group)
        return gathered

    def broadcast_object(self, obj, root: int = 0):
        holder = [obj]
        global_root = self._dist.get_global_rank(self._group, root) if self._group is not None else root
        self._dist.broadcast_object_list(holder, src=global_root, group=self._group)
        return holder[0]

    def alltoallv(self, send, send_counts, recv_counts):
        import torch

        received = torch.empty(int(sum(recv_counts)), dtype=torch.uint8)
        self._dist.all_to_all_single(received, torch.from_numpy(send), [int(c) for c in recv_counts],
                                     [int(c) for c in send_counts], group=self._group)
        return received.numpy()


class _MpiGroup(HostGroup):
    def __init__(self, comm):
        from mpi4py import MPI

        self._mpi = MPI
        self._comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.name = "mpi4py"
        self.exchanges_host_data = True

    def allgather_object(self, obj) -> list:
        return self._comm.allgather(obj)

    def broadcast_object(self, obj, root: int = 0):
        return self._comm.bcast(obj, root=root)

    def alltoallv(self, send, send_counts, recv_counts):
        received = np.empty(int(sum(recv_counts)), dtype=np.uint8)
        send_displacements = np.concatenate(([0], np.cumsum(send_counts)[:-1])).astype(np.int64)
        recv_displacements = np.concatenate(([0], np.cumsum(recv_counts)[:-1])).astype(np.int64)
        byte = self._mpi.BYTE
        self._comm.Alltoallv([send, (list(map(int, send_counts)), list(map(int, send_displacements))), byte],
                             [received, (list(map(int, recv_counts)), list(map(int, recv_displacements))), byte])
        return received


def _is_mpi_communicator(obj) -> bool:
    mpi = sys.modules.get("mpi4py.MPI")
    return mpi is not None and isinstance(obj, mpi.Comm)


def _is_torch_group(obj) -> bool:
    dist = sys.modules.get("torch.distributed")
    return dist is not None and isinstance(obj, getattr(dist, "ProcessGroup", ()))


def wrap_process_group(process_group) -> HostGroup:
    """A :class:`HostGroup` for a torch.distributed group (None: the default group) or an mpi4py
    communicator.

    Raises
    ------
    OptionsError
        Naming ``process_group``, for another object or an uninitialised torch.distributed.
    """
    if process_group is None or _is_torch_group(process_group):
        if process_group is None and "torch" not in sys.modules and "mpi4py.MPI" in sys.modules:
            raise OptionsError("process_group", "no torch.distributed default group; pass the mpi4py communicator "
                                                "(e.g. MPI.COMM_WORLD)")
        try:
            import torch.distributed  # noqa: F401  (the default group lives there)
        except ImportError:
            raise OptionsError("process_group", "None means torch.distributed's default group, but torch is not "
                                                "installed; pass an mpi4py communicator") from None
        return _TorchGroup(process_group)
    if _is_mpi_communicator(process_group):
        return _MpiGroup(process_group)
    raise OptionsError("process_group", "expected a torch.distributed ProcessGroup, an mpi4py communicator or None "
                                        f"(got {type(process_group).__name__})")
