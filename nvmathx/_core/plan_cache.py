"""A per-device, per-thread LRU cache of plans for the function forms.

Keys are hashable problem descriptions computed by public pure functions (shapes, strides,
dtypes, options, device); values are plan objects with a ``free()`` method and, optionally, a
``workspace_bytes`` or ``memory_bytes`` attribute counted against the memory limit. Evicted plans are
freed. Each thread has its own entries, so two threads never share a plan's handle or workspace.

One naming rule across the areas: an area's function forms share ``nvmathx.<area>.plan_cache``, a
PlanCache named ``"nvmathx.<area>"``, whose keys come from the area's ``nvmathx.<area>.plan_key``.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from types import EllipsisType
from typing import NamedTuple

from .options import check_positive_int

__all__ = ["HashedKey", "PlanCache", "PlanCacheInfo"]


class HashedKey(tuple):
    """A plan key that computes its hash once, for keys a function form keeps and looks up again on
    every call: a lookup hashes its key twice (the dict, then the LRU order), and a key of nested
    layouts and options costs about half a microsecond to hash. Equal to, and hashing as, the plain
    tuple of the same items, so either finds a plan filed under the other."""

    hash: int

    def __new__(cls, key: tuple):
        self = super().__new__(cls, key)
        self.hash = tuple.__hash__(self)
        return self

    def __hash__(self) -> int:
        return self.hash

    def __reduce__(self):  # a copy in another process hashes anew (str hashes differ between processes)
        return HashedKey, (tuple(self),)


class PlanCacheInfo(NamedTuple):
    """Counts for one device's cache on the calling thread."""

    device_id: int
    size: int
    max_size: int
    memory_bytes: int
    max_memory_bytes: int | None
    hits: int
    misses: int


class _DeviceCache:
    __slots__ = ("plans", "memory", "hits", "misses")

    def __init__(self):
        self.plans: OrderedDict = OrderedDict()
        self.memory: dict = {}
        self.hits = 0
        self.misses = 0


class PlanCache:
    """An LRU cache of plans, one per device and thread.

    Parameters
    ----------
    name : str
        What the cache holds (shown in ``repr``).
    max_size : int
        Most plans kept per device (0 disables caching).
    max_memory_bytes : int or None
        Most workspace bytes held by cached plans per device; None for no limit.
    """

    def __init__(self, name: str, max_size: int = 64, max_memory_bytes: int | None = None):
        self.name = name
        self._local = threading.local()
        self.set_limits(max_size=max_size, max_memory_bytes=max_memory_bytes)

    def _device(self, device_id: int) -> _DeviceCache:
        caches = getattr(self._local, "caches", None)
        if caches is None:
            caches = self._local.caches = {}
        cache = caches.get(device_id)
        if cache is None:
            cache = caches[device_id] = _DeviceCache()
        return cache

    def get(self, device_id: int, key):
        """The cached plan for ``key`` (now most recent), or None."""
        try:  # the hit path is on every function-form call: keep it to a few lookups
            cache = self._local.caches[device_id]
        except (AttributeError, KeyError):
            cache = self._device(device_id)
        plans = cache.plans
        plan = plans.get(key)
        if plan is None:
            cache.misses += 1
            return None
        if len(plans) > 1:
            plans.move_to_end(key)
        cache.hits += 1
        return plan

    def put(self, device_id: int, key, plan) -> None:
        """Insert ``plan`` and evict (and free) least recently used plans beyond the limits."""
        if self.max_size == 0:
            return
        cache = self._device(device_id)
        old = cache.plans.pop(key, None)
        if old is not None and old is not plan:
            _free(old)
        cache.plans[key] = plan
        cache.memory[key] = _plan_bytes(plan)
        self._evict(cache)

    def _evict(self, cache: _DeviceCache) -> None:
        while len(cache.plans) > self.max_size or (
            self.max_memory_bytes is not None
            and sum(cache.memory.values()) > self.max_memory_bytes
            and len(cache.plans) > 1
        ):
            key, plan = cache.plans.popitem(last=False)
            cache.memory.pop(key, None)
            _free(plan)

    def set_limits(self, *, max_size: int | None = None, max_memory_bytes: int | None | EllipsisType = ...) -> None:
        """Change the limits (evicting at once where needed). ``max_memory_bytes=None`` removes it."""
        if max_size is not None:
            self.max_size = check_positive_int(max_size, "max_size", allow_zero=True)
        if max_memory_bytes is not ...:
            self.max_memory_bytes = check_positive_int(
                max_memory_bytes, "max_memory_bytes", allow_none=True, allow_zero=True
            )
        for cache in getattr(self._local, "caches", {}).values():
            self._evict(cache)

    def info(self, device_id: int = 0) -> PlanCacheInfo:
        """Size, memory and hit counts of one device's cache on this thread.

        Raises
        ------
        OptionsError
            When ``device_id`` is not an int >= 0.
        """
        cache = self._device(check_positive_int(device_id, "device_id", allow_zero=True))
        memory = sum(cache.memory.values())
        return PlanCacheInfo(
            device_id, len(cache.plans), self.max_size, memory, self.max_memory_bytes, cache.hits, cache.misses
        )

    def keys(self, device_id: int = 0) -> list:
        """The cached keys, least recently used first (``device_id`` is checked as by :meth:`info`)."""
        return list(self._device(check_positive_int(device_id, "device_id", allow_zero=True)).plans)

    def clear(self) -> None:
        """Free every cached plan of this thread, on every device, and reset the counters."""
        for cache in getattr(self._local, "caches", {}).values():
            while cache.plans:
                _, plan = cache.plans.popitem(last=False)
                _free(plan)
            cache.memory.clear()
            cache.hits = cache.misses = 0

    def __len__(self) -> int:
        return sum(len(cache.plans) for cache in getattr(self._local, "caches", {}).values())

    def __repr__(self) -> str:
        return (f"PlanCache({self.name!r}, max_size={self.max_size}, max_memory_bytes={self.max_memory_bytes}, "
                f"size={len(self)})")


def _plan_bytes(plan) -> int:
    for attribute in ("memory_bytes", "workspace_bytes"):
        value = getattr(plan, attribute, None)
        if isinstance(value, int):
            return value
    return 0


def _free(plan) -> None:
    free = getattr(plan, "free", None)
    if free is not None:
        free()
