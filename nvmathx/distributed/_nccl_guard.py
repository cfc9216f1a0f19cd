"""Bounded NCCL operations: a nonblocking communicator, polled until each operation is set up,
and a watchdog that aborts the communicator when work on a stream does not finish in time.

NCCL's way to survive a peer that dies or hangs: with ``ncclConfig_t.blocking = 0`` every call
returns at once and ``ncclCommGetAsyncError`` reports ``ncclInProgress`` until the operation is set
up (the host never blocks inside NCCL); an error it reports, or a deadline passed, is answered with
``ncclCommAbort``, which also ends kernels that wait for the lost peer. Data movement itself runs
on the GPU after the call returns, so a watchdog thread follows an event recorded after each
exchange and aborts the communicator when the event is not reached within the timeout. After an
abort every later operation raises :class:`CommunicationError` at once.
"""

from __future__ import annotations

import threading
import time
from collections import deque

from .._bindings import cuda_driver, nccl
from .._core.errors import CommunicationError

__all__ = ["NcclGuard"]

_POLL_SECONDS = 0.002  # the watchdog's pause between two looks at an event
_SETTLE_PAUSE = 1e-3  # the longest pause of settle(), which starts polling at once and backs off


class NcclGuard:
    """One nonblocking NCCL communicator with its timeout (seconds).

    Parameters
    ----------
    comm : the communicator (nccl4py's raw ``Comm``), made by :func:`nccl.comm_init_rank_nonblocking`
    timeout : float
    world_size : int
    device_id : int or None
        The communicator's GPU, made current on the watchdog's thread (None: left as it is).
    """

    def __init__(self, comm, timeout: float, world_size: int, device_id: int | None = None) -> None:
        self.comm = comm
        self.device_id = device_id
        self.timeout = timeout
        self.world_size = world_size
        self.failure: CommunicationError | None = None
        self._lock = threading.Lock()
        self._pending: deque = deque()  # (event, deadline, operation), oldest first
        self._watchdog: threading.Thread | None = None

    @property
    def aborted(self) -> bool:
        """Whether the communicator was aborted (it must not be destroyed again)."""
        return self.failure is not None

    def check(self, operation: str) -> None:
        """CommunicationError when an earlier operation failed (the communicator is gone)."""
        failure = self.failure
        if failure is not None:
            raise CommunicationError(f"{operation}: an earlier NCCL operation failed ({failure}); the ranks no longer "
                                     "make the same calls: end the run (finalize() and start again)", failure.rank,
                                     operation)

    def settle(self, operation: str) -> None:
        """Wait until the communicator leaves ``ncclInProgress`` (after its creation and after every
        group of operations), within the timeout; CommunicationError on an error or the deadline,
        the communicator aborted."""
        deadline = time.monotonic() + self.timeout
        pause = 0.0
        while True:
            state = nccl.comm_get_async_error(self.comm)
            if state == nccl.SUCCESS:
                return
            if state != nccl.IN_PROGRESS:
                raise self._abort(operation, f"NCCL reported {nccl.status_name(state)} (a rank probably died)")
            if time.monotonic() > deadline:
                raise self._abort(operation, f"did not finish within {self.timeout:g} s (a rank died, hangs, or "
                                             "makes other calls; initialize(timeout=) sets the limit)")
            time.sleep(pause)
            pause = min(2 * pause + 1e-6, _SETTLE_PAUSE)

    def exchange(self, operation: str, enqueue, stream_handle: int) -> None:
        """Run ``enqueue()`` (sends and receives on ``stream_handle``) as one NCCL group, wait until
        NCCL has set it up, and have the watchdog follow it on the stream."""
        self.check(operation)
        nccl.group_start()
        try:
            enqueue()
        finally:
            nccl.group_end()
        self.settle(operation)
        self.watch(operation, stream_handle)

    def watch(self, operation: str, stream_handle: int) -> None:
        """Abort the communicator unless the stream passes this point within the timeout (nothing is
        recorded while the stream is being captured into a graph: the graph runs later)."""
        if cuda_driver.stream_is_capturing(stream_handle):
            return
        event = cuda_driver.event_create()
        cuda_driver.event_record(event, stream_handle)
        with self._lock:
            self._pending.append((event, time.monotonic() + self.timeout, operation))
            if self._watchdog is None:
                self._watchdog = threading.Thread(target=self._watch_pending, name="nvmathx-nccl-watchdog",
                                                  daemon=True)
                self._watchdog.start()

    def synchronize(self, operation: str, stream_handle: int) -> None:
        """Wait for the stream (a blocking call), then raise CommunicationError if the watchdog
        aborted the communicator meanwhile (its work then returned no result)."""
        try:
            cuda_driver.stream_synchronize(stream_handle)
        except Exception:
            self.check(operation)  # an aborted exchange surfaces as its CommunicationError
            raise
        self.check(operation)

    def _watch_pending(self) -> None:
        if self.device_id is not None:
            from .._core import device

            device.ensure_device(self.device_id)  # the events' context, current on this thread too
        while True:
            with self._lock:
                if not self._pending or self.failure is not None:
                    self._watchdog = None
                    return
                event, deadline, operation = self._pending[0]
            if cuda_driver.event_query(event):
                with self._lock:
                    self._pending.popleft()
                cuda_driver.event_destroy(event)
                continue
            state = nccl.comm_get_async_error(self.comm)
            if state not in (nccl.SUCCESS, nccl.IN_PROGRESS):
                self._abort(operation, f"NCCL reported {nccl.status_name(state)} (a rank probably died)")
            elif time.monotonic() > deadline:
                self._abort(operation, f"did not finish on the GPU within {self.timeout:g} s (a rank died, hangs, "
                                       "or makes other calls; initialize(timeout=) sets the limit)")
            else:
                time.sleep(_POLL_SECONDS)

    def _abort(self, operation: str, why: str) -> CommunicationError:
        """Abort the communicator (once) and record, then return, the failure."""
        with self._lock:
            if self.failure is None:
                self.failure = CommunicationError(f"{operation}: the NCCL operation among the {self.world_size} ranks "
                                                  f"{why}; the communicator was aborted", None, operation)
                nccl.comm_abort(self.comm)
            return self.failure

    def close(self) -> None:
        """Forget the events still followed (at finalize, after the last operation)."""
        with self._lock:
            pending, self._pending = self._pending, deque()
        for event, _, _ in pending:
            cuda_driver.event_destroy(event)
