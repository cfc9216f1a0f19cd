"""NCCL through nccl4py's raw bindings (``nccl.bindings.nccl``): the calls nvmathx.distributed
makes, with typed errors.

nccl4py's high-level objects import torch and cupy on first use and refuse complex dtypes; the raw
bindings take pointers and counts, so every exchange here moves bytes (``ncclUint8``). libnccl is
loaded by our own search first (NVIDIA wheels, ``nvidia/*/lib`` under ``sys.path``), so a
``pip install --target`` layout works too; nccl4py then finds it already loaded.
"""

from __future__ import annotations

import functools

from .._errors import CudaLibraryError, LibraryNotFoundError
from ._loader import load_library

__all__ = [
    "NcclError",
    "available",
    "version",
    "unique_id",
    "comm_init_rank",
    "comm_init_rank_nonblocking",
    "comm_get_async_error",
    "status_name",
    "SUCCESS",
    "IN_PROGRESS",
    "handle",
    "comm_destroy",
    "comm_abort",
    "group_start",
    "group_end",
    "send_bytes",
    "recv_bytes",
]


class NcclError(CudaLibraryError):
    """An NCCL call returned a nonzero ``ncclResult_t``."""

    library = "NCCL"
    hint = "Set NCCL_DEBUG=WARN (or INFO) to see NCCL's own explanation"


_UINT8 = 1  # ncclUint8
SUCCESS = 0  # ncclSuccess
IN_PROGRESS = 7  # ncclInProgress: a nonblocking communicator's operation is still being set up


@functools.lru_cache(maxsize=1)
def _raw():
    """nccl4py's raw bindings, with libnccl loaded (once)."""
    try:
        from nccl.bindings import nccl as raw
    except ImportError as error:
        raise LibraryNotFoundError("nccl4py", "nccl4py (or nvmathx[distributed])", "NVMATHX_NCCL_PATH",
                                   str(error)) from None
    load_library("nccl")
    return raw


def available() -> bool:
    """Whether nccl4py imports and libnccl loads (never raises)."""
    try:
        _raw()
        return True
    except Exception:  # noqa: BLE001  (reported by `python -m nvmathx`, never fatal)
        return False


def _call(name: str, *args):
    raw = _raw()
    try:
        return getattr(raw, name)(*args)
    except raw.NCCLError as error:
        status = _status(error)
        raise NcclError(status, _status_name(raw, status), f"nccl{_camel(name)}", str(error)) from None


def _status(error) -> int:
    """The ncclResult_t an NCCLError was made with (its constructor takes the status)."""
    for value in (getattr(error, "status", None), *error.args[:1]):
        if isinstance(value, int):
            return int(value)
    return -1


def _status_name(raw, status: int) -> str:
    try:
        return f"nccl{raw.Result(status).name}"
    except ValueError:
        return "ncclUnknownResult"


def _camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


def version() -> tuple:
    """The loaded libnccl's (major, minor, patch)."""
    code = int(_call("get_version"))
    if code >= 10000:  # NCCL >= 2.9 encodes major * 10000 + minor * 100 + patch
        return code // 10000, code // 100 % 100, code % 100
    return code // 1000, code // 100 % 10, code % 100


def unique_id() -> bytes:
    """A new ``ncclUniqueId`` (made on one rank, sent to the others over the host group)."""
    return bytes(_call("get_unique_id"))


def comm_init_rank(world_size: int, uid: bytes, rank: int):
    """A communicator (nccl4py's raw ``Comm``; :func:`handle` gives its ``ncclComm_t``); collective
    over the ranks sharing ``uid``. The current CUDA device is the communicator's."""
    raw = _raw()
    return _call("comm_init_rank", int(world_size), raw.UniqueId.from_buffer(bytearray(uid)), int(rank))


def comm_init_rank_nonblocking(world_size: int, uid: bytes, rank: int):
    """A nonblocking communicator (``ncclConfig_t.blocking = 0``): its calls return at once, and
    :func:`comm_get_async_error` says when each has finished (``IN_PROGRESS`` until then), so the
    caller can give up on a peer that never comes and :func:`comm_abort` the communicator."""
    raw = _raw()
    config = raw.Config()  # NCCL_CONFIG_INITIALIZER's values
    config.blocking = 0
    # the struct's address, as nccl4py's own Communicator passes it (``config`` keeps it alive)
    return _call("comm_init_rank_config", int(world_size), raw.UniqueId.from_buffer(bytearray(uid)), int(rank),
                 config.ptr)


def comm_get_async_error(comm) -> int:
    """The communicator's state: ``SUCCESS``, ``IN_PROGRESS``, or the ``ncclResult_t`` of an error
    (a peer gone, a network failure) seen by an operation in flight."""
    return int(_call("comm_get_async_error", comm))


def status_name(status: int) -> str:
    """``ncclSystemError`` and the like, for messages."""
    return _status_name(_raw(), status)


def handle(comm) -> int:
    """The raw ``ncclComm_t`` of a communicator, for C libraries that take one (cuBLASMp)."""
    return int(comm.handle)


def comm_destroy(comm: int) -> None:
    """Release the communicator (collective: every rank destroys its own, after its last operation)."""
    _call("comm_destroy", comm)


def comm_abort(comm) -> None:
    """Free the communicator at once, ending operations in flight (kernels waiting for a peer
    return); safe from another thread while one of its calls blocks."""
    _call("comm_abort", comm)


def group_start() -> None:
    _call("group_start")


def group_end() -> None:
    _call("group_end")


def send_bytes(pointer: int, nbytes: int, peer: int, comm: int, stream_handle: int) -> None:
    """Send ``nbytes`` at ``pointer`` to ``peer`` on a stream (inside :func:`group_start`/``end``)."""
    _call("send", pointer, nbytes, _UINT8, peer, comm, stream_handle)


def recv_bytes(pointer: int, nbytes: int, peer: int, comm: int, stream_handle: int) -> None:
    """Receive ``nbytes`` from ``peer`` into ``pointer`` on a stream."""
    _call("recv", pointer, nbytes, _UINT8, peer, comm, stream_handle)
