"""Host-side collectives over the process group the user started: torch.distributed or mpi4py.

The group carries everything that is not array data on the GPU: the NCCL unique id, the agreement
on arguments and outcomes, and, on the CPU execution space, the exchanges themselves (as bytes).
Only this module knows which of the two launchers' APIs a group comes from.
"""

from __future__ import annotations

import math
import pickle
import sys
import time
from abc import ABC, abstractmethod
from datetime import timedelta

import numpy as np

from .._core.errors import CommunicationError, OptionsError

__all__ = ["HostGroup", "wrap_process_group", "check_timeout", "DEFAULT_TIMEOUT"]

DEFAULT_TIMEOUT = 300.0  # seconds a collective may take before the ranks give up on it


def check_timeout(timeout) -> float:
    """``timeout`` as positive finite seconds."""
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not math.isfinite(timeout) \
            or timeout <= 0:
        raise OptionsError("timeout", f"expected a positive, finite number of seconds (got {timeout!r})")
    return float(timeout)


class HostGroup(ABC):
    """The collectives nvmathx needs, on one process group. Every method is collective: all ranks
    call it, in the same order.

    Each collective finishes within ``timeout`` seconds or raises :class:`CommunicationError`, as it
    does when a peer is gone (its connection closed). After a failure the group is unusable: every
    later collective raises CommunicationError at once, since the ranks no longer make the same
    calls.
    """

    rank: int
    size: int
    name: str
    exchanges_host_data: bool  # whether host (numpy) buffers can be exchanged through it
    timeout: float = DEFAULT_TIMEOUT
    failure: CommunicationError | None = None  # the first collective that failed

    def allgather_object(self, obj, operation: str = "agreement") -> list:
        """Every rank's ``obj`` (picklable), in rank order."""
        return self._guarded(operation, lambda: self._allgather_bytes(pickle.dumps(obj), operation))

    def alltoallv(self, send: np.ndarray, send_counts, recv_counts) -> np.ndarray:
        """Exchange bytes: ``send`` (uint8, 1-D) holds ``send_counts[p]`` bytes for each rank ``p`` in
        rank order; the result holds ``recv_counts[p]`` bytes from each rank ``p``."""
        return self._guarded("all_to_all", lambda: self._alltoallv(send, send_counts, recv_counts))

    @abstractmethod
    def _allgather_bytes(self, data: bytes, operation: str) -> list:
        """Every rank's unpickled ``data``, in rank order."""

    @abstractmethod
    def _alltoallv(self, send: np.ndarray, send_counts, recv_counts) -> np.ndarray:
        """:meth:`alltoallv` itself."""

    def _guarded(self, operation: str, run):
        if self.failure is not None:
            raise CommunicationError(f"{operation}: an earlier collective on {self.name} failed ({self.failure}); "
                                     "the ranks no longer make the same calls: end the run (finalize() and start "
                                     "again)", self.failure.rank, operation)
        try:
            return run()
        except CommunicationError as error:
            self.failure = error
            raise

    def _failed(self, operation: str, error: BaseException | None) -> CommunicationError:
        """The CommunicationError of a collective that timed out (``error`` None) or failed."""
        if error is None:
            why = (f"did not finish within {self.timeout:g} s (a rank died, hangs, or makes other calls; "
                   "initialize(timeout=) sets the limit)")
        else:
            why = f"failed ({type(error).__name__}: {error}); a rank probably died"
        return CommunicationError(f"{operation}: the collective among the {self.size} ranks of {self.name} {why}",
                                  None, operation)


class _TorchGroup(HostGroup):
    def __init__(self, group, timeout: float):
        import torch.distributed as dist

        if not dist.is_available() or not dist.is_initialized():
            raise OptionsError("process_group", "torch.distributed is not initialized: call "
                                                "torch.distributed.init_process_group() first, or pass an mpi4py "
                                                "communicator")
        self._dist = dist
        self._group = group if group is not None else dist.group.WORLD
        self.rank = dist.get_rank(self._group)
        self.size = dist.get_world_size(self._group)
        self.timeout = timeout
        backend = str(dist.get_backend(self._group)).lower()
        self.name = f"torch.distributed ({backend})"
        # "nccl" alone moves only CUDA tensors; "gloo", "mpi" and "cpu:gloo,cuda:nccl" move host ones.
        self.exchanges_host_data = backend != "nccl"

    def _device(self):
        import torch

        return torch.device("cpu") if self.exchanges_host_data else torch.device("cuda", torch.cuda.current_device())

    def _run(self, operation: str, start) -> None:
        """Start a collective (``start()`` returns its Work) and wait for it, within the timeout."""
        try:
            start().wait(timeout=timedelta(seconds=self.timeout))
        except RuntimeError as error:  # torch's DistBackendError is one; Work.wait's own timeout too
            raise self._failed(operation, None if "Operation timed out" in str(error) else error) from None

    def _allgather_bytes(self, data, operation):
        import torch

        device, dist = self._device(), self._dist
        size = torch.tensor([len(data)], dtype=torch.int64, device=device)
        sizes = [torch.empty(1, dtype=torch.int64, device=device) for _ in range(self.size)]
        self._run(operation, lambda: dist.all_gather(sizes, size, group=self._group, async_op=True))
        lengths = [int(item.item()) for item in sizes]
        padded = torch.zeros(max(lengths), dtype=torch.uint8)
        padded[:len(data)] = torch.frombuffer(bytearray(data), dtype=torch.uint8)
        pieces = [torch.empty(max(lengths), dtype=torch.uint8, device=device) for _ in range(self.size)]
        self._run(operation, lambda: dist.all_gather(pieces, padded.to(device), group=self._group, async_op=True))
        return [pickle.loads(piece[:length].cpu().numpy().tobytes()) for piece, length in zip(pieces, lengths)]

    def _alltoallv(self, send, send_counts, recv_counts):
        import torch

        received = torch.empty(int(sum(recv_counts)), dtype=torch.uint8)
        self._run("all_to_all", lambda: self._dist.all_to_all_single(
            received, torch.from_numpy(send), [int(c) for c in recv_counts], [int(c) for c in send_counts],
            group=self._group, async_op=True))
        return received.numpy()


class _MpiGroup(HostGroup):
    def __init__(self, comm, timeout: float):
        from mpi4py import MPI

        self._mpi = MPI
        self._comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.timeout = timeout
        self.name = "mpi4py"
        self.exchanges_host_data = True

    def _run(self, operation: str, start) -> None:
        """Start a nonblocking collective (``start()`` returns its Request) and poll it until it
        completes, fails, or the timeout passes (MPI has no cancellation of collectives: the request
        is left behind with the broken run)."""
        deadline = time.monotonic() + self.timeout
        pause = 0.0
        try:
            request = start()
            while not request.Test():
                if time.monotonic() > deadline:
                    raise self._failed(operation, None)
                time.sleep(pause)
                pause = min(2 * pause + 1e-5, 1e-3)
        except self._mpi.Exception as error:
            raise self._failed(operation, error) from None

    def _allgather_bytes(self, data, operation):
        byte = self._mpi.BYTE
        sizes = np.empty(self.size, dtype=np.int64)
        self._run(operation, lambda: self._comm.Iallgather(np.array([len(data)], dtype=np.int64), sizes))
        received = np.empty(int(sizes.sum()), dtype=np.uint8)
        counts, displacements = _counts_and_displacements(sizes)
        self._run(operation, lambda: self._comm.Iallgatherv([np.frombuffer(data, dtype=np.uint8), byte],
                                                            [received, (counts, displacements), byte]))
        return [pickle.loads(received[start:start + count].tobytes()) for start, count in zip(displacements, counts)]

    def _alltoallv(self, send, send_counts, recv_counts):
        received = np.empty(int(sum(recv_counts)), dtype=np.uint8)
        byte = self._mpi.BYTE
        send_layout = _counts_and_displacements(send_counts)
        receive_layout = _counts_and_displacements(recv_counts)
        self._run("all_to_all", lambda: self._comm.Ialltoallv([send, send_layout, byte],
                                                              [received, receive_layout, byte]))
        return received


def _counts_and_displacements(counts) -> tuple:
    """(counts, displacements) as lists of int, the pieces packed one after another."""
    values = [int(count) for count in counts]
    return values, [int(start) for start in np.concatenate(([0], np.cumsum(values)[:-1]))]


def _is_mpi_communicator(obj) -> bool:
    mpi = sys.modules.get("mpi4py.MPI")
    return mpi is not None and isinstance(obj, mpi.Comm)


def _is_torch_group(obj) -> bool:
    dist = sys.modules.get("torch.distributed")
    return dist is not None and isinstance(obj, getattr(dist, "ProcessGroup", ()))


def wrap_process_group(process_group, timeout: float = DEFAULT_TIMEOUT) -> HostGroup:
    """A :class:`HostGroup` for a torch.distributed group (None: the default group) or an mpi4py
    communicator, whose collectives give up after ``timeout`` seconds.

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
        return _TorchGroup(process_group, timeout)
    if _is_mpi_communicator(process_group):
        return _MpiGroup(process_group, timeout)
    raise OptionsError("process_group", "expected a torch.distributed ProcessGroup, an mpi4py communicator or None "
                                        f"(got {type(process_group).__name__})")
