"""The process-wide distributed context: the host group, this rank, and on a GPU the NCCL
communicator, from :func:`initialize` to :func:`finalize`.

Everything collective that outlives one call (the NCCL communicator, cuBLASMp grids, plans kept by
the function forms) belongs to the context and is destroyed by :func:`finalize` on every rank
together, never by garbage collection on one rank.
"""

from __future__ import annotations

import threading
import warnings
import weakref
from typing import Any

from .._core.errors import InvalidStateError
from .._core.options import check_positive_int
from ._agree import agree, check_same
from ._group import DEFAULT_TIMEOUT, check_timeout, wrap_process_group

__all__ = ["initialize", "finalize", "is_initialized", "current", "Context", "LeakedResourceWarning", "warn_leaked"]


class LeakedResourceWarning(ResourceWarning):
    """A distributed object was garbage-collected without ``free()``: its resources stay allocated
    until :func:`finalize` (destroying them on one rank alone could hang the others)."""


class Context:
    """What :func:`initialize` set up (read-only for users: ``rank``, ``world_size``, ``device_id``)."""

    def __init__(self, group, device_id, nccl_guard):
        self.group = group
        self.rank = group.rank
        self.world_size = group.size
        self.device_id = device_id
        self.nccl_guard = nccl_guard  # the NcclGuard of nvmathx's own exchanges, or None on the CPU-only context
        self.nccl_comm = None if nccl_guard is None else nccl_guard.comm  # its (nonblocking) communicator
        self.blas_guard = None  # the NcclGuard of cuBLASMp's (blocking) communicator, made when a product plans
        self._owned = weakref.WeakSet()  # plans and other objects finalize() frees
        self._finalizers = []  # collective releases (cuBLASMp grids), run last-in first-out
        self.caches = {}  # per-area plan caches of the function forms (name -> dict)
        self.closed = False  # set by finalize()

    def agree(self, local):
        """:func:`agree` over the group (every rank runs ``local``, all go on or all raise the same
        error). After :func:`finalize`, InvalidStateError on every rank without a collective (every
        rank finalized together)."""
        if self.closed:
            raise InvalidStateError("nvmathx.distributed.finalize() was called: this object belongs to a finished "
                                    "distributed context")
        return agree(self.group, local)

    @property
    def nccl_handle(self) -> int:
        """The raw ``ncclComm_t`` of cuBLASMp's communicator (after :meth:`ensure_blas_comm`)."""
        from .._bindings import nccl

        self.require_gpu("device_id")
        if self.blas_guard is None:
            raise InvalidStateError("device_id: cuBLASMp's communicator is made by ensure_blas_comm() first")
        return nccl.handle(self.blas_guard.comm)

    def ensure_blas_comm(self) -> None:
        """Make cuBLASMp's NCCL communicator unless it exists (collective: every rank calls it at the
        same point, after an agreement). cuBLASMp calls NCCL itself and does not poll a nonblocking
        communicator, so it gets a blocking one of its own; the watchdog bounds its products."""
        from ._nccl_guard import NcclGuard

        self.require_gpu("device_id")
        if self.blas_guard is None:
            comm = _make_nccl_communicator(self.group, self.device_id, blocking=True)
            self.blas_guard = NcclGuard(comm, self.group.timeout, self.world_size, self.device_id)

    def track(self, obj) -> None:
        """Free ``obj`` (anything with ``free()``) at :func:`finalize` if the user has not."""
        self._owned.add(obj)

    def on_finalize(self, release) -> None:
        """Run ``release()`` at :func:`finalize`, after every tracked object is freed."""
        self._finalizers.append(release)

    def require_gpu(self, argument: str = "x") -> int:
        """The context's device, or InvalidStateError when it was initialised without one."""
        if self.nccl_guard is None:
            raise InvalidStateError(f"{argument}: a GPU operand needs nvmathx.distributed.initialize(..., device_id=N) "
                                    "(this process was initialised for the CPU only)")
        return self.device_id

    def __repr__(self) -> str:
        where = f"cuda:{self.device_id}" if self.device_id is not None else "cpu"
        return f"Context(rank={self.rank}, world_size={self.world_size}, {where}, group={self.group.name})"


_context: Context | None = None
_lock = threading.Lock()


def current(argument: str = "nvmathx.distributed") -> Context:
    """The context, or InvalidStateError before :func:`initialize` / after :func:`finalize`."""
    context = _context
    if context is None:
        raise InvalidStateError(f"{argument}: call nvmathx.distributed.initialize() first")
    return context


def is_initialized() -> bool:
    """Whether :func:`initialize` ran and :func:`finalize` has not."""
    return _context is not None


def initialize(process_group: Any = None, *, device_id: int | None = None, timeout: float = DEFAULT_TIMEOUT) -> None:
    """Set up nvmathx.distributed on this rank (collective: every rank calls it).

    Parameters
    ----------
    process_group : torch.distributed ProcessGroup, mpi4py communicator, or None
        The ranks that work together: None is torch.distributed's default group. The group carries
        the setup and the agreement between ranks; on the CPU execution space it also carries the
        data (it must then move host tensors: gloo, MPI, or a ``"cpu:gloo,cuda:nccl"`` group).
    device_id : int or None
        This rank's GPU (typically ``LOCAL_RANK`` under torchrun). With a GPU the ranks build an
        NCCL communicator (its unique id sent over ``process_group``), which moves GPU operands'
        data; None sets up the CPU execution space only (numpy operands), without touching NCCL.
    timeout : float
        Seconds (default 300) that one collective call may take on this rank before it raises
        :class:`~nvmathx.CommunicationError`: the bound on how long a rank waits for a peer that died,
        hangs, or makes other calls. It applies to every exchange and agreement through
        ``process_group`` and to every NCCL operation of GPU operands (a communicator that times out
        is aborted). A peer whose process ends is usually noticed at once (its connection closes).

    Raises
    ------
    InvalidStateError
        When already initialised (call :func:`finalize` first).
    OptionsError
        For a ``process_group`` of another kind, ``device_id`` given on some ranks only, or a
        ``timeout`` that is not a positive number of seconds.
    CommunicationError
        When a rank dies or does not take part within ``timeout``.
    DeviceUnavailableError, LibraryNotFoundError, NcclError
        On every rank, when any rank has no such GPU or cannot load NCCL.
    """
    global _context
    with _lock:
        if _context is not None:
            raise InvalidStateError("nvmathx.distributed is already initialized; call finalize() first")
        group = wrap_process_group(process_group, check_timeout(timeout))
        wants_gpu = agree(group, lambda: _check_device(device_id))
        check_same(wants_gpu, "device_id", "choice of a GPU (None on some ranks, a device on others)")
        guard = None
        if device_id is not None:
            from ._nccl_guard import NcclGuard

            guard = NcclGuard(_make_nccl_communicator(group, device_id, blocking=False), group.timeout, group.size,
                              device_id)
            guard.settle("initialize")  # a nonblocking communicator is ready when it leaves ncclInProgress
        _context = Context(group, device_id, guard)


def _check_device(device_id) -> bool:
    if device_id is None:
        return False
    check_positive_int(device_id, "device_id", allow_zero=True)
    from .._bindings import nccl
    from .._core.execution import check_device_available

    check_device_available(int(device_id), "device_id")
    nccl.version()  # loads nccl4py and libnccl, or raises naming what to install
    return True


def _make_nccl_communicator(group, device_id: int, *, blocking: bool):
    from .._bindings import nccl
    from .._core import device

    device.ensure_device(int(device_id))
    uid = agree(group, lambda: nccl.unique_id() if group.rank == 0 else None)[0]
    # Every check that can fail on one rank ran above: communicator creation waits for all ranks.
    if blocking:
        return nccl.comm_init_rank(group.size, uid, group.rank)
    return nccl.comm_init_rank_nonblocking(group.size, uid, group.rank)


def finalize() -> None:
    """Release everything nvmathx.distributed holds on this rank (collective: every rank calls it):
    plans not yet freed, cuBLASMp grids, the NCCL communicator. Afterwards distributed calls raise
    InvalidStateError until :func:`initialize` runs again.

    Raises
    ------
    InvalidStateError
        When not initialised.
    """
    global _context
    with _lock:
        context = current("finalize")
        for obj in list(context._owned):
            obj.free()
        context.caches.clear()
        while context._finalizers:
            context._finalizers.pop()()
        _release_communicators(context)
        context.closed = True
        _context = None


def _release_communicators(context) -> None:
    """Destroy the NCCL communicators (an aborted one is already freed; after a failure the peers
    may be gone, and destroy would wait for them, so abort instead)."""
    from .._bindings import nccl

    guards = [guard for guard in (context.nccl_guard, context.blas_guard) if guard is not None]
    failed = context.group.failure is not None or any(guard.aborted for guard in guards)
    for guard in guards:
        guard.close()
        if not guard.aborted:
            (nccl.comm_abort if failed else nccl.comm_destroy)(guard.comm)


def warn_leaked(obj) -> None:
    """Called from a distributed object's ``__del__`` when it was never freed."""
    warnings.warn(f"{type(obj).__name__} was garbage-collected without free(); its resources are released at "
                  "nvmathx.distributed.finalize()", LeakedResourceWarning, stacklevel=2)

