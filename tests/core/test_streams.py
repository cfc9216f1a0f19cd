"""Stream argument normalisation (no GPU needed: only handles are looked at)."""

import pytest

from nvmathx._core.errors import OptionsError
from nvmathx._core.streams import StreamHolder, resolve_stream


class ProtocolStream:
    def __init__(self, handle):
        self.handle = handle

    def __cuda_stream__(self):
        return (0, self.handle)


class TorchLikeStream:
    def __init__(self, handle):
        self.cuda_stream = handle


class CupyLikeStream:
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


@pytest.mark.parametrize("bad", ["stream", 1.5, object(), -4, True])
def test_bad_streams_name_the_argument(bad):
    with pytest.raises(OptionsError, match="^stream:"):
        resolve_stream(bad, 0)


def test_failing_protocol_is_typed():
    class Broken:
        def __cuda_stream__(self):
            raise RuntimeError("closed")

    with pytest.raises(OptionsError, match="^stream:.*closed"):
        resolve_stream(Broken(), 0)
