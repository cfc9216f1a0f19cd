"""A stand-in for :class:`nvmathx.distributed._nccl_guard.NcclGuard` in the host models of the GPU
path: the same interface, without NCCL's state or the watchdog (the stand-ins for NCCL carry out a
group when it ends)."""

from nvmathx._bindings import nccl


class PassThroughGuard:
    def __init__(self, comm):
        self.comm = comm
        self.aborted = False
        self.exchanges = 0

    def check(self, operation):
        pass

    def exchange(self, operation, enqueue, stream_handle):
        nccl.group_start()
        try:
            enqueue()
        finally:
            nccl.group_end()
        self.exchanges += 1

    def watch(self, operation, stream_handle):
        pass

    def synchronize(self, operation, stream_handle):
        pass  # the host stand-ins finish each step before returning

    def close(self):
        pass
