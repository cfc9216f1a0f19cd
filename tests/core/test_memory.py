"""Workspaces go through the memory resource they are given (a recording fake here; the GPU tests
use a real cuda.core MemoryResource subclass)."""

import pytest

from nvmathx._core.errors import OptionsError
from nvmathx._core.memory import Workspace, allocate, check_memory_resource


class FakeBuffer:
    def __init__(self, resource, size):
        self.resource, self.size = resource, size
        self.handle = 0x1000 * (len(resource.allocations) + 1)

    def close(self, stream=None):
        self.resource.closed.append((self.size, stream))


class RecordingResource:
    def __init__(self):
        self.allocations, self.closed = [], []

    def allocate(self, size, *, stream):
        self.allocations.append((size, stream))
        return FakeBuffer(self, size)

    def deallocate(self, ptr, size, *, stream):
        pass


class FakeStream:
    handle = 7
    core = "core-stream"


def test_allocate_uses_the_given_resource_and_stream():
    resource = RecordingResource()
    buffer = allocate(100, FakeStream(), 0, resource)
    assert resource.allocations == [(100, "core-stream")] and buffer.size == 100


def test_workspace_grows_reuses_and_releases():
    resource = RecordingResource()
    workspace = Workspace(0, resource)
    assert workspace.ensure(0, FakeStream()) == 0 and resource.allocations == []
    first = workspace.ensure(1024, FakeStream())
    assert first and workspace.nbytes == 1024
    assert workspace.ensure(512, FakeStream()) == first  # no new allocation
    second = workspace.ensure(4096, FakeStream())
    assert [size for size, _ in resource.allocations] == [1024, 4096] and second != first
    # the outgrown buffer stays allocated: a graph captured with it still reads it when replayed
    assert resource.closed == [] and workspace.retired_bytes == 1024
    workspace.release()
    workspace.release()  # twice is safe
    assert [size for size, _ in resource.closed] == [1024, 4096] and workspace.ptr == 0
    assert workspace.retired_bytes == 0


def test_workspace_without_keeping_outgrown_buffers_frees_them_at_once():
    resource = RecordingResource()
    workspace = Workspace(0, resource, keep_outgrown=False)
    workspace.ensure(1024, FakeStream())
    workspace.ensure(4096, FakeStream())
    assert resource.closed == [(1024, "core-stream")] and workspace.retired_bytes == 0
    workspace.release()
    assert [size for size, _ in resource.closed] == [1024, 4096]


def test_check_memory_resource():
    assert check_memory_resource(None) is None
    resource = RecordingResource()
    assert check_memory_resource(resource) is resource
    with pytest.raises(OptionsError, match="^memory_resource:"):
        check_memory_resource(object())
