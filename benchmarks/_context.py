"""What a suite's ``cases(ctx)`` sees: selected peers, device, sizes flag, rng, timing stream."""

from __future__ import annotations

import dataclasses
import importlib.util
import os
from typing import Any

import numpy as np

from ._case import KNOWN_PEERS

__all__ = ["Context", "installed_peers", "select_peers", "gpu_status"]

# The module each peer imports as.
_PEER_MODULES = {"torch": "torch", "cupy": "cupy", "nvmath-python": "nvmath", "cuda.core": "cuda.core"}


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def installed_peers() -> tuple[str, ...]:
    """The known peers whose module can be found (without importing them)."""
    return tuple(peer for peer in KNOWN_PEERS if _importable(_PEER_MODULES[peer]))


def select_peers(requested, installed) -> tuple[str, ...]:
    """Peers to run: ``requested`` (names, comma-separated strings allowed) or all ``installed``.

    Raises
    ------
    ValueError
        For a name that is not a known peer (the message lists the known ones).
    """
    if not requested:
        return tuple(installed)
    names = [name.strip() for item in requested for name in item.split(",") if name.strip()]
    unknown = [name for name in names if name not in KNOWN_PEERS]
    if unknown:
        raise ValueError(f"unknown peer(s) {', '.join(unknown)}; known peers: {', '.join(KNOWN_PEERS)}")
    return tuple(peer for peer in KNOWN_PEERS if peer in names and peer in installed)


def gpu_status(device_id: int) -> str | None:
    """None when device ``device_id`` is usable, else why not. Never raises."""
    try:
        from nvmathx._bindings import cuda_driver

        count = cuda_driver.device_count()
    except Exception as error:  # no driver library, no cuda.bindings, cuInit failure
        first_sentence = str(error).split(". ")[0][:120]
        return f"no CUDA device ({type(error).__name__}: {first_sentence})"
    if not 0 <= device_id < count:
        return f"no CUDA device {device_id} (the driver reports {count})"
    return None


@dataclasses.dataclass
class Context:
    """Run settings handed to ``cases(ctx)``; see benchmarks/README.md."""

    peers: tuple[str, ...] = ()
    device_id: int = 0
    has_gpu: bool = False
    quick: bool = False
    seed: int = 0
    rng: Any = None
    l2_bytes: int = 0
    rank: int = 0  # under torchrun or mpiexec: this process's rank and the world size (RANK, WORLD_SIZE)
    world_size: int = 1
    _stream: Any = dataclasses.field(default=None, repr=False)

    @property
    def lockstep(self) -> bool:
        """Whether timed calls are collective across processes (see ``gpu_time_ms_interleaved``)."""
        return self.world_size > 1

    def __post_init__(self):
        if self.rng is None:
            self.rng = np.random.default_rng(self.seed)

    @classmethod
    def for_device(cls, peers, device_id: int = 0, *, quick: bool = False, seed: int = 0) -> "Context":
        """A context for ``device_id``, made current, with its L2 size; a CPU context without GPU."""
        world = {"rank": int(os.environ.get("RANK", 0)), "world_size": int(os.environ.get("WORLD_SIZE", 1))}
        if gpu_status(device_id) is not None:
            return cls(peers=tuple(peers), device_id=device_id, quick=quick, seed=seed, **world)
        from nvmathx._core.device import ensure_device

        device = ensure_device(device_id)
        return cls(
            peers=tuple(peers), device_id=device_id, has_gpu=True, quick=quick, seed=seed,
            l2_bytes=int(device.properties.l2_cache_size), **world,
        )

    @property
    def stream(self):
        """The cuda.core timing stream (the legacy default stream)."""
        if self._stream is None:
            from ._timing import timing_stream

            self._stream = timing_stream(None, self.device_id)
        return self._stream

    def rotations(self, nbytes: int, *, limit: int = 16) -> int:
        """Copies of an ``nbytes`` input to rotate over so that together they exceed twice the L2."""
        if nbytes <= 0:
            raise ValueError(f"nbytes must be positive (got {nbytes})")
        return max(1, min(limit, -(-2 * self.l2_bytes // nbytes)))

    def sync(self) -> None:
        """Wait for all work on the device (no-op without a GPU)."""
        if self.has_gpu:
            from nvmathx._core.device import ensure_device

            ensure_device(self.device_id).sync()
