"""A thread-safe memo for values that are expensive to build (compiled code, loaded modules)."""

from __future__ import annotations

import threading

__all__ = ["BuildOnce"]


class BuildOnce(dict):
    """A dict whose values :meth:`get_or_build` builds at most once per key, also when several
    threads ask for the same key together (the lookup of a built value takes no lock)."""

    def __init__(self):
        super().__init__()
        self._lock = threading.Lock()

    def get_or_build(self, key, build):
        """The value of ``key``, made by ``build()`` (under the lock) when there is none yet."""
        value = self.get(key)
        if value is None:
            with self._lock:
                value = self.get(key)
                if value is None:
                    value = self[key] = build()
        return value
