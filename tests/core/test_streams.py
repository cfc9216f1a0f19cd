"""Stream argument normalisation (no GPU needed: only handles are looked at)."""

import pytest

from nvmathx._core.errors import OptionsError
from nvmathx._core.streams import CallStreams, StreamHolder, order_after, resolve_stream


class ProtocolStream:
    def __init__(self, handle):
        self.handle = handle

    def __cuda_stream__(self):
        return (0, self.handle)


class TorchLikeStream:
    """An older torch.cuda.Stream: the handle in ``cuda_stream``, no ``__cuda_stream__``."""

    def __init__(self, handle):
        self.cuda_stream = handle


class CupyLikeStream:
    """An older cupy.cuda.Stream: the handle in ``ptr``."""

    def __init__(self, handle):
        self.ptr = handle


# streams recognises a library's older stream objects by their module, as the adapters recognise its arrays.
TorchLikeStream.__module__ = "torch.cuda.streams"
CupyLikeStream.__module__ = "cupy.cuda.stream"


class OtherLibraryStream:
    """Any other object with a ``ptr`` is no stream nvmathx knows."""

    def __init__(self, handle):
        self.ptr = handle


@pytest.mark.parametrize("make", [int, ProtocolStream, TorchLikeStream, CupyLikeStream])
def test_each_stream_kind_gives_its_handle(make):
    handle = 0x7F0000 + id(make) % 4096 * 16
    holder = resolve_stream(make(handle), device_id=0)
    assert isinstance(holder, StreamHolder)
    assert holder.handle == handle and holder.device_id == 0


def test_holders_are_cached_per_handle_and_device():
    first = resolve_stream(0x1234560, 0)
    assert resolve_stream(ProtocolStream(0x1234560), 0) is first
    assert resolve_stream(0x1234560, 1) is not first


def test_none_uses_the_package_current_stream():
    calls = []

    def current(device_id):
        calls.append(device_id)
        return 0xABC0

    assert resolve_stream(None, 3, current).handle == 0xABC0
    assert calls == [3]


@pytest.mark.parametrize("bad", ["stream", 1.5, object(), -4, True, OtherLibraryStream(0x7F0000)])
def test_bad_streams_name_the_argument(bad):
    with pytest.raises(OptionsError, match="^stream:"):
        resolve_stream(bad, 0)


def test_failing_protocol_is_typed():
    class Broken:
        def __cuda_stream__(self):
            raise RuntimeError("closed")

    with pytest.raises(OptionsError, match="^stream:.*closed"):
        resolve_stream(Broken(), 0)


# -- the stream-order rule, with the CUDA driver faked ----------------------------------------------


class FakeDriver:
    """The driver calls order_after makes, recorded; streams listed in ``capturing`` capture a graph,
    and a query on a stream in ``failing`` fails (as on the legacy stream during another's capture)."""

    class CUevent_flags:
        CU_EVENT_DISABLE_TIMING = 2

    class CUstreamCaptureStatus:
        CU_STREAM_CAPTURE_STATUS_NONE = 0
        CU_STREAM_CAPTURE_STATUS_ACTIVE = 1

    def __init__(self):
        self.calls = []
        self.capturing, self.failing = set(), set()

    def cuStreamIsCapturing(self, stream):
        if stream in self.failing:
            return (_FailingStatus(), None)
        return (0, int(stream in self.capturing))

    def cuEventCreate(self, flags):
        self.calls.append(("create", flags))
        return (0, "event")

    def cuEventRecord(self, event, stream):
        self.calls.append(("record", event, stream))
        return (0,)

    def cuStreamWaitEvent(self, stream, event, flags):
        self.calls.append(("wait", stream, event))
        return (0,)

    def cuEventDestroy(self, event):
        self.calls.append(("destroy", event))
        return (0,)


class _FailingStatus(int):
    name = "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT"

    def __new__(cls):
        return super().__new__(cls, 906)


@pytest.fixture
def driver(monkeypatch):
    from nvmathx._bindings import cuda_driver

    fake = FakeDriver()
    monkeypatch.setattr(cuda_driver, "_driver", fake)
    return fake


def test_order_after_records_a_wait_when_the_stream_changes(driver):
    first, second = StreamHolder(0x100, 0), StreamHolder(0x200, 0)
    assert order_after(second, first)
    assert driver.calls == [("create", 2), ("record", "event", 0x100), ("wait", 0x200, "event"), ("destroy", "event")]
    driver.calls.clear()
    assert not order_after(second, second) and not order_after(second, None)
    assert driver.calls == []


@pytest.mark.parametrize("state", ["waiting stream captures", "previous stream captures", "query fails"])
def test_order_after_records_nothing_during_a_capture(driver, state):
    first, second = StreamHolder(0x100, 0), StreamHolder(0x200, 0)
    if state == "waiting stream captures":
        driver.capturing.add(0x200)
    elif state == "previous stream captures":
        driver.capturing.add(0x100)
    else:
        driver.failing.add(0x100)  # a failed query counts as capturing: a wait could break the capture
    assert not order_after(second, first)
    assert not [call for call in driver.calls if call[0] in ("record", "wait")]


def test_workspace_orders_a_new_stream_after_its_last_use(driver):
    from nvmathx._core.memory import Workspace

    class Buffer:
        handle = 0x5000

        def close(self, stream=None):
            pass

    class Resource:
        def allocate(self, size, *, stream):
            return Buffer()

        def deallocate(self, *args, **kwargs):
            pass

    first, second = StreamHolder(0x100, 0), StreamHolder(0x200, 0)
    workspace = Workspace(0, Resource())
    workspace.ensure(64, first)
    workspace.ensure(64, first)
    assert driver.calls == []
    workspace.ensure(64, second)
    assert ("wait", 0x200, "event") in driver.calls and ("record", "event", 0x100) in driver.calls
    driver.calls.clear()
    driver.capturing.add(0x100)
    workspace.ensure(64, first)  # back to a capturing stream: no event
    assert driver.calls == []


def test_call_streams_follow_the_library_and_keep_one_holder(monkeypatch):
    from nvmathx._core import streams

    monkeypatch.setattr(streams, "default_stream_handle", lambda device_id: 0x7000)
    current = {"handle": 0x1230}
    queries = []

    def library_current(device_id):
        queries.append(device_id)
        return current["handle"]

    choose = CallStreams(2, library_current)
    first = choose()
    assert first.handle == 0x1230 and first.device_id == 2 and choose() is first and queries == [2, 2]
    current["handle"] = 0x4560  # the library's current stream changed (torch.cuda.stream(...), a capture)
    assert choose().handle == 0x4560
    current["handle"] = None  # the library has none: the device's default stream
    assert choose().handle == 0x7000
    assert choose(0x9990).handle == 0x9990 and choose().handle == 0x7000  # a stream= argument wins per call
    fixed = resolve_stream(0xABC0, 2)
    assert CallStreams(2, library_current, fixed)() is fixed
    assert CallStreams(2)().handle == 0x7000  # a library without current streams
    with pytest.raises(OptionsError, match="^stream:"):
        choose("bad")
