"""NcclGuard's logic with NCCL's state and CUDA events scripted (no GPU): a nonblocking communicator
is polled until it leaves ncclInProgress, an error or a deadline aborts it once and raises
CommunicationError, the watchdog aborts it when an event is not reached in time, and every later
operation raises at once. The same guard on a GPU: test_gpu_worlds.py and test_faults_gpu.py."""

import threading
import time

import pytest

from nvmathx import CommunicationError, NvmathxError
from nvmathx._bindings import cuda_driver, nccl
from nvmathx.distributed._nccl_guard import NcclGuard


class _Script:
    """The communicator's states in turn (the last one repeats), the events' completion, and what
    was aborted."""

    def __init__(self, monkeypatch, states, *, event_done=lambda event: True, capturing=False):
        self.states = list(states)
        self.aborted = []
        self.events = []
        self.destroyed = []
        self.groups = []
        monkeypatch.setattr(nccl, "comm_get_async_error", self._state)
        monkeypatch.setattr(nccl, "comm_abort", self.aborted.append)
        monkeypatch.setattr(nccl, "status_name", lambda status: f"status {status}")
        monkeypatch.setattr(nccl, "group_start", lambda: self.groups.append("start"))
        monkeypatch.setattr(nccl, "group_end", lambda: self.groups.append("end"))
        monkeypatch.setattr(cuda_driver, "stream_is_capturing", lambda stream: capturing)
        monkeypatch.setattr(cuda_driver, "event_create", lambda: len(self.events))
        monkeypatch.setattr(cuda_driver, "event_record", lambda event, stream: self.events.append((event, stream)))
        monkeypatch.setattr(cuda_driver, "event_query", event_done)
        monkeypatch.setattr(cuda_driver, "event_destroy", self.destroyed.append)

    def _state(self, comm):
        return self.states.pop(0) if len(self.states) > 1 else self.states[0]


def _wait_for(condition, seconds=5.0):
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.005)
    return condition()


def test_settle_polls_until_success(monkeypatch):
    script = _Script(monkeypatch, [nccl.IN_PROGRESS] * 5 + [nccl.SUCCESS])
    NcclGuard("comm", 5.0, 2).settle("initialize")
    assert script.states == [nccl.SUCCESS] and script.aborted == []


def test_an_error_state_aborts_once_and_raises(monkeypatch):
    script = _Script(monkeypatch, [nccl.IN_PROGRESS, 2])  # 2: ncclSystemError
    guard = NcclGuard("comm", 5.0, 3)
    with pytest.raises(CommunicationError) as info:
        guard.settle("all_to_all")
    error = info.value
    assert isinstance(error, NvmathxError) and error.operation == "all_to_all" and error.rank is None
    assert str(error).startswith("all_to_all:") and "status 2" in str(error) and "3 ranks" in str(error)
    assert script.aborted == ["comm"] and guard.aborted
    with pytest.raises(CommunicationError, match="^all_gather: an earlier NCCL operation failed"):
        guard.exchange("all_gather", lambda: pytest.fail("nothing is enqueued after a failure"), 5)
    assert script.aborted == ["comm"] and script.groups == []


def test_a_communicator_that_stays_in_progress_times_out(monkeypatch):
    script = _Script(monkeypatch, [nccl.IN_PROGRESS])
    guard = NcclGuard("comm", 0.2, 2)
    start = time.monotonic()
    with pytest.raises(CommunicationError, match="did not finish within 0.2 s"):
        guard.settle("initialize")
    assert 0.2 <= time.monotonic() - start < 2.0
    assert script.aborted == ["comm"]


def test_exchange_groups_settles_and_watches(monkeypatch):
    script = _Script(monkeypatch, [nccl.IN_PROGRESS, nccl.SUCCESS])
    guard = NcclGuard("comm", 5.0, 2)
    enqueued = []
    guard.exchange("all_to_all", lambda: enqueued.append(script.groups[:]), 42)
    assert enqueued == [["start"]] and script.groups == ["start", "end"]
    assert script.events == [(0, 42)]
    assert _wait_for(lambda: script.destroyed == [0])  # the watchdog saw the event reached
    assert script.aborted == []


def test_watchdog_aborts_when_the_stream_does_not_get_there(monkeypatch):
    script = _Script(monkeypatch, [nccl.SUCCESS], event_done=lambda event: False)
    guard = NcclGuard("comm", 0.2, 4)
    guard.watch("matmul", 9)
    assert _wait_for(lambda: guard.aborted)
    assert script.aborted == ["comm"]
    with pytest.raises(CommunicationError, match="^matmul: an earlier NCCL operation failed.*on the GPU within 0.2 s"):
        guard.check("matmul")
    guard.close()
    assert script.destroyed == [0]


def test_watchdog_aborts_on_an_asynchronous_error(monkeypatch):
    script = _Script(monkeypatch, [nccl.SUCCESS, 6], event_done=lambda event: False)  # 6: ncclRemoteError
    guard = NcclGuard("comm", 30.0, 2)
    guard.watch("all_to_all", 3)
    assert _wait_for(lambda: guard.aborted)
    assert script.aborted == ["comm"] and "status 6" in str(guard.failure)


def test_nothing_is_watched_while_capturing(monkeypatch):
    script = _Script(monkeypatch, [nccl.SUCCESS], capturing=True)
    guard = NcclGuard("comm", 5.0, 2)
    guard.watch("all_to_all", 3)
    assert script.events == [] and guard._watchdog is None


def test_one_abort_when_both_threads_fail_together(monkeypatch):
    script = _Script(monkeypatch, [5], event_done=lambda event: False)  # 5: ncclInvalidUsage
    guard = NcclGuard("comm", 30.0, 2)
    threads = [threading.Thread(target=lambda: pytest.raises(CommunicationError, guard.settle, "x"))
               for _ in range(4)]
    guard.watch("y", 1)
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert _wait_for(lambda: guard._watchdog is None)
    assert script.aborted == ["comm"]


def test_synchronize_surfaces_an_abort_as_communication_error(monkeypatch):
    script = _Script(monkeypatch, [nccl.SUCCESS])
    guard = NcclGuard("comm", 5.0, 2)
    synchronized = []
    monkeypatch.setattr(cuda_driver, "stream_synchronize", synchronized.append)
    guard.synchronize("all_to_all", 4)
    assert synchronized == [4]

    def failing(stream):
        raise cuda_driver.CudaDriverError(999, "CUDA_ERROR_UNKNOWN", "cuStreamSynchronize")

    monkeypatch.setattr(cuda_driver, "stream_synchronize", failing)
    with pytest.raises(cuda_driver.CudaDriverError):
        guard.synchronize("all_to_all", 4)  # not aborted: the driver's own error
    guard._abort("all_to_all", "was aborted")
    with pytest.raises(CommunicationError, match="^all_to_all: an earlier NCCL operation failed"):
        guard.synchronize("all_to_all", 4)
    monkeypatch.setattr(cuda_driver, "stream_synchronize", synchronized.append)
    with pytest.raises(CommunicationError):
        guard.synchronize("all_to_all", 4)  # finished, but on an aborted communicator: no result
    assert script.aborted == ["comm"]
