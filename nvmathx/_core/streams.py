"""Streams: normalise stream arguments once, pick each call's stream, and order one stream after another.

A stream argument may be a cuda.core ``Stream``, anything with ``__cuda_stream__`` (torch and cupy
streams), a raw ``cudaStream_t`` as an int, or ``None`` for the operand package's current stream
(torch, cupy), else the device's default stream. Wrapping a handle in a cuda.core Stream costs
about 13 us, so every handle is wrapped at most once per process (:class:`StreamHolder` is cached
by handle and device). :class:`CallStreams` picks the stream of each call of a plan, and
:func:`order_after` is the one rule for handing a resource from one stream to another.
"""

from __future__ import annotations

import threading

from .._bindings import cuda_driver
from . import device
from .errors import OptionsError

__all__ = ["StreamHolder", "CallStreams", "resolve_stream", "default_stream_handle", "order_after", "is_capturing"]


class StreamHolder:
    """A resolved stream: the raw ``handle`` for C calls and, on demand, a cuda.core Stream.

    Built only by :func:`resolve_stream`; one instance per (handle, device) per process.
    """

    __slots__ = ("handle", "device_id", "_core", "_owner")

    def __init__(self, handle: int, device_id: int, core=None, owner=None):
        self.handle = handle
        self.device_id = device_id
        self._core = core
        self._owner = owner  # keeps a user's stream object alive while we hold its handle

    @property
    def core(self):
        """The cuda.core ``Stream`` for this handle (for MemoryResource calls and events)."""
        if self._core is None:
            from cuda.core import Stream

            self._core = Stream.from_handle(self.handle)
        return self._core

    def __repr__(self):
        return f"StreamHolder(handle={self.handle:#x}, device_id={self.device_id})"


_holders: dict[tuple[int, int], StreamHolder] = {}
_default_handles: dict[int, int] = {}
_lock = threading.Lock()


def _holder(handle: int, device_id: int, core=None, owner=None) -> StreamHolder:
    key = (handle, device_id)
    holder = _holders.get(key)
    if holder is None:
        with _lock:
            holder = _holders.setdefault(key, StreamHolder(handle, device_id, core, owner))
    elif core is not None and holder._core is None:
        holder._core = core
    return holder


def default_stream_handle(device_id: int) -> int:
    """The handle of cuda.core's default stream for ``device_id`` (cached)."""
    handle = _default_handles.get(device_id)
    if handle is None:
        stream = device.ensure_device(device_id).default_stream
        handle = _default_handles[device_id] = int(stream.handle)
        _holder(handle, device_id, core=stream)
    return handle


def resolve_stream(stream, device_id: int, package_current_stream=None) -> StreamHolder:
    """Turn a ``stream=`` argument into a cached :class:`StreamHolder`.

    Parameters
    ----------
    stream : cuda.core.Stream, object with ``__cuda_stream__``, int, or None
        The stream. ``None`` means ``package_current_stream(device_id)`` when given (the operand
        package's current stream), else the device's default stream.
    device_id : int
        The device the work runs on.
    package_current_stream : callable, optional
        Returns the operand package's current stream handle for a device.

    Raises
    ------
    OptionsError
        When ``stream`` is none of the accepted kinds (the message names ``stream``).
    """
    if stream is None:
        if package_current_stream is not None:
            handle = package_current_stream(device_id)
            if handle is not None:
                return _holder(handle, device_id)
        return _holder(default_stream_handle(device_id), device_id)
    if isinstance(stream, int) and not isinstance(stream, bool):
        if stream < 0:
            raise OptionsError("stream", f"a raw stream handle must be a non-negative int (got {stream})")
        return _holder(stream, device_id)
    protocol = getattr(type(stream), "__cuda_stream__", None)
    if protocol is not None:
        try:
            version, handle = stream.__cuda_stream__()
        except Exception as error:
            raise OptionsError("stream", f"{type(stream).__name__}.__cuda_stream__() failed: {error}") from None
        core = stream if type(stream).__module__.startswith("cuda.core") else None
        return _holder(int(handle), device_id, core=core, owner=stream)
    handle = _legacy_stream_handle(stream)
    if handle is not None:
        return _holder(handle, device_id, owner=stream)
    raise OptionsError(
        "stream",
        "expected a cuda.core Stream, an object with __cuda_stream__ (torch or cupy stream), "
        f"a raw stream handle (int) or None (got {type(stream).__name__})",
    )


# Stream objects of older torch and cupy releases lack __cuda_stream__: the attribute that holds
# their handle, by the top-level package of the stream's type (nothing is imported to ask).
_LEGACY_HANDLE_ATTRIBUTES = {"torch": "cuda_stream", "cupy": "ptr"}


def _legacy_stream_handle(stream) -> int | None:
    attribute = _LEGACY_HANDLE_ATTRIBUTES.get(type(stream).__module__.partition(".")[0])
    handle = None if attribute is None else getattr(stream, attribute, None)
    return handle if isinstance(handle, int) and not isinstance(handle, bool) else None


def _no_current_stream(device_id: int) -> None:
    return None


_UNSET = object()


class CallStreams:
    """The stream each call of a plan runs on.

    A call names a stream (``stream=``), or takes the plan's ``fixed`` stream when it has one,
    else the operand library's current stream at the time of the call (so that a plan follows
    ``torch.cuda.stream(...)`` and graph captures), else the device's default stream. The holder
    of the last current stream is kept: a call whose library stream has not changed costs one
    query and one comparison.

    Parameters
    ----------
    device_id : int
    current_stream : callable or None
        The operand library's current-stream query (``Adapter.current_stream``).
    fixed : StreamHolder or None
        The plan's own stream (given at construction), which calls without ``stream=`` use.
    """

    __slots__ = ("device_id", "fixed", "_current", "_handle", "_holder")

    def __init__(self, device_id: int, current_stream=None, fixed: StreamHolder | None = None):
        self.device_id = device_id
        self.fixed = fixed
        self._current = current_stream or _no_current_stream
        self._handle = _UNSET  # equal to no handle: the first call looks its stream up
        self._holder: StreamHolder | None = None

    def __call__(self, stream=None) -> StreamHolder:
        """The StreamHolder for a call with ``stream=`` (see the class; errors as :func:`resolve_stream`)."""
        if stream is not None:
            return resolve_stream(stream, self.device_id)
        if self.fixed is not None:
            return self.fixed
        handle = self._current(self.device_id)
        holder = self._holder
        if handle != self._handle or holder is None:
            holder = _holder(default_stream_handle(self.device_id) if handle is None else handle, self.device_id)
            self._holder = holder
            self._handle = handle
        return holder


def is_capturing(stream_handle: int) -> bool:
    """Whether a stream is capturing a graph; a query that fails (as it does on the legacy default
    stream while another stream captures) counts as capturing."""
    try:
        return cuda_driver.stream_is_capturing(stream_handle)
    except cuda_driver.CudaDriverError:
        return True


def order_after(stream: StreamHolder, previous: StreamHolder | None) -> bool:
    """Make ``stream`` wait for the work queued so far on ``previous`` (the stream that last used a
    resource ``stream`` is about to use). Returns whether a wait was recorded.

    Nothing is recorded when there is no previous stream, when it is ``stream`` itself, or while
    either stream captures a graph: a capture records its own dependencies, and an event from
    outside it would invalidate it (the caller orders capture and replay).
    """
    if previous is None or previous.handle == stream.handle:
        return False
    if is_capturing(stream.handle) or is_capturing(previous.handle):
        return False
    cuda_driver.stream_wait_stream(stream.handle, previous.handle)
    return True
