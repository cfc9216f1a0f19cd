"""Device memory: stream-ordered allocations from a cuda.core MemoryResource.

Workspaces come from ``options.memory_resource`` (any cuda.core ``MemoryResource``, a user's
subclass included) or the device's default resource, and are released by the owner's ``free()``.
"""

from __future__ import annotations

from . import device
from .errors import OptionsError
from .streams import order_after

__all__ = ["default_memory_resource", "check_memory_resource", "allocate", "Workspace"]


def default_memory_resource(device_id: int):
    """The device's own memory resource (a stream-ordered pool)."""
    return device.ensure_device(device_id).memory_resource


def check_memory_resource(memory_resource, argument: str = "memory_resource"):
    """Accept None or an object with the MemoryResource protocol (``allocate``/``deallocate``)."""
    if memory_resource is None:
        return None
    if not all(callable(getattr(memory_resource, name, None)) for name in ("allocate", "deallocate")):
        raise OptionsError(argument, f"expected a cuda.core MemoryResource (got {type(memory_resource).__name__})")
    return memory_resource


def allocate(nbytes: int, stream, device_id: int, memory_resource=None):
    """A cuda.core ``Buffer`` of ``nbytes`` ordered on ``stream`` (a StreamHolder)."""
    resource = memory_resource if memory_resource is not None else default_memory_resource(device_id)
    return resource.allocate(max(int(nbytes), 1), stream=stream.core)


class Workspace:
    """A scratch buffer that grows on demand and is reused across executions.

    The buffer is ordered on the stream of its last use: when a later use comes on another stream,
    that stream first waits for the earlier one, so a plan shared between streams never races on
    its workspace. With ``keep_outgrown`` (the default), a buffer outgrown by a larger request is
    kept (not freed) until :meth:`release`: a CUDA graph captured while it was current still reads it
    on every replay. Buffers whose size changes from call to call and that no graph captures (the
    distributed exchange's) pass False.
    """

    __slots__ = ("device_id", "memory_resource", "buffer", "ptr", "nbytes", "_stream", "_retired", "_keep_outgrown")

    def __init__(self, device_id: int, memory_resource=None, keep_outgrown: bool = True):
        self.device_id = device_id
        self.memory_resource = memory_resource
        self.buffer = None
        self.ptr = 0
        self.nbytes = 0
        self._stream = None
        self._retired: list = []  # outgrown buffers, freed by release()
        self._keep_outgrown = keep_outgrown

    def ensure(self, nbytes: int, stream) -> int:
        """Pointer to at least ``nbytes`` usable on ``stream`` (a StreamHolder); 0 when none needed."""
        if nbytes == 0:
            return 0
        order_after(stream, self._stream)
        self._stream = stream
        if nbytes > self.nbytes:
            if self.buffer is not None and self._keep_outgrown:
                self._retired.append(self.buffer)
            elif self.buffer is not None:
                self.buffer.close(stream.core)
            buffer = allocate(nbytes, stream, self.device_id, self.memory_resource)
            self.buffer = buffer
            self.ptr = int(buffer.handle)
            self.nbytes = nbytes
            self._stream = stream
        return self.ptr

    @property
    def retired_bytes(self) -> int:
        """Bytes held by outgrown buffers until :meth:`release`."""
        return sum(int(getattr(buffer, "size", 0)) for buffer in self._retired)

    def release(self) -> None:
        """Return the buffer to its resource, ordered after the last use. Safe to call twice."""
        stream = self._stream.core if self._stream is not None else None
        for buffer in self._retired + ([self.buffer] if self.buffer is not None else []):
            buffer.close(stream)
        self._retired = []
        self.buffer = None
        self.ptr = 0
        self.nbytes = 0
