"""Host memory standing in for device allocations, for tests that run GPU code paths on the CPU."""

import numpy as np

__all__ = ["FakeBuffer", "FakeMemoryResource"]


class FakeBuffer:
    """Host memory standing in for a device allocation (filled with garbage, as fresh memory is)."""

    def __init__(self, nbytes):
        self.memory = np.full(max(int(nbytes), 1) + 256, 0xAB, np.uint8)
        self.handle = self.memory.ctypes.data + (-self.memory.ctypes.data % 256)  # 256-byte aligned, like cudaMalloc
        self.closed = False

    def close(self, stream=None):
        self.closed = True


class FakeMemoryResource:
    """Records every allocation (tests check that workspaces come from a user's resource)."""

    def __init__(self):
        self.allocations = []

    def allocate(self, nbytes, stream=None):
        buffer = FakeBuffer(nbytes)
        self.allocations.append((nbytes, buffer))
        return buffer

    def deallocate(self, *args, **kwargs):
        pass
