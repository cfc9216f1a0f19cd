"""Fixtures of the distributed tests that run in the test process itself (GPU, world size 1)."""

import os
import socket

import pytest

for _name, _value in (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"),
                      ("NVSHMEM_DISABLE_NVLS", "1")):
    os.environ.setdefault(_name, _value)  # NVLink multicast stays off: it can take a shared host's GPUs down


@pytest.fixture(scope="module")
def gpu_world():
    """A world of one process on GPU 0: a 1-rank gloo group and nvmathx.distributed with NCCL
    (finalized after the module's tests)."""
    torch = pytest.importorskip("torch")
    import torch.distributed as dist

    import nvmathx.distributed
    from nvmathx._bindings import nccl

    if not nccl.available():
        pytest.skip("nccl4py or libnccl not available")
    created = not dist.is_initialized()
    if created:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
    torch.cuda.set_device(0)
    nvmathx.distributed.initialize(device_id=0)
    yield nvmathx.distributed
    nvmathx.distributed.finalize()
    if created:
        dist.destroy_process_group()
