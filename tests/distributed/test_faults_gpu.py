"""NCCL's failure handling on GPUs: the nonblocking communicator and its watchdog at world size 1
(in this process), and a rank killed or stalled in GPU worlds of 2 or more (one process per GPU,
``NVMATHX_GPU_WORLD`` ranks, else every GPU; skipped with fewer than 2)."""

import os
import socket

import numpy as np
import pytest

from helpers.distributed import run_world

pytestmark = pytest.mark.gpu

COLLECTIVE_TIMEOUT = 10.0  # NCCL's first exchange sets up its connections: more than the CPU worlds' 5 s
SLACK = 5.0
GPU = {"NVMATHX_WORLD_DEVICE": "cuda", "NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
       "NVSHMEM_DISABLE_NVLS": "1"}


@pytest.fixture
def gpu_context():
    """nvmathx.distributed on GPU 0 in a 1-rank gloo group, with a 10 s timeout; finalized after."""
    torch = pytest.importorskip("torch")
    import torch.distributed as dist

    import nvmathx.distributed
    from nvmathx._bindings import nccl
    from nvmathx.distributed._context import current

    if not nccl.available():
        pytest.skip("nccl4py or libnccl not available")
    if nvmathx.distributed.is_initialized():
        pytest.skip("another test module holds the distributed context")
    created = not dist.is_initialized()
    if created:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
    torch.cuda.set_device(0)
    nvmathx.distributed.initialize(device_id=0, timeout=COLLECTIVE_TIMEOUT)
    yield current()
    if nvmathx.distributed.is_initialized():
        nvmathx.distributed.finalize()
    if created:
        dist.destroy_process_group()


def test_exchanges_run_on_a_settled_nonblocking_communicator(gpu_context, rng):
    import torch

    from nvmathx._bindings import nccl
    from nvmathx.distributed import fft as dfft

    guard = gpu_context.nccl_guard
    assert guard is not None and guard.timeout == COLLECTIVE_TIMEOUT
    assert nccl.comm_get_async_error(guard.comm) == nccl.SUCCESS
    x = rng.standard_normal((16, 12)) + 1j * rng.standard_normal((16, 12))
    for _ in range(3):
        result = dfft.fft(torch.from_numpy(x).cuda(), options={"force_distributed": True, "loopback": True})
        np.testing.assert_allclose(result.cpu().numpy(), np.fft.fft2(x), rtol=1e-12, atol=1e-10)
    torch.cuda.synchronize()
    assert not guard.aborted and nccl.comm_get_async_error(guard.comm) == nccl.SUCCESS


def test_after_an_abort_every_call_raises_and_finalize_works(gpu_context, rng):
    import torch

    import nvmathx.distributed
    from nvmathx import CommunicationError
    from nvmathx.distributed import fft as dfft

    x = torch.from_numpy(rng.standard_normal((8, 8)) + 0j).cuda()
    options = {"force_distributed": True, "loopback": True, "blocking": True}
    dfft.fft(x, options=options)
    gpu_context.nccl_guard._abort("test", "was aborted by the test")
    for _ in range(2):
        with pytest.raises(CommunicationError) as info:
            dfft.fft(x, options=options)
        assert info.value.operation == "all_to_all" and "earlier NCCL operation failed" in str(info.value)
    nvmathx.distributed.finalize()  # the aborted communicator is not destroyed twice
    assert not nvmathx.distributed.is_initialized()


def _gpu_world_size() -> int:
    torch = pytest.importorskip("torch")
    size = int(os.environ.get("NVMATHX_GPU_WORLD", torch.cuda.device_count()))
    if size < 2:
        pytest.skip("needs 2 or more GPUs")
    return size


@pytest.mark.parametrize("phase", ["before", "during", "after", "hang", "stall"])
def test_every_survivor_raises_in_a_gpu_world(phase, seed):
    world_size = _gpu_world_size()
    victim = world_size - 1
    env = dict(GPU, NVMATHX_FAULT_PHASE=phase, NVMATHX_FAULT_VICTIM=str(victim), NVMATHX_FAULT_RUN="0")
    results = run_world(world_size, "distributed._fault_cases:run", seed=seed, timeout=240, extra_env=env,
                        collective_timeout=COLLECTIVE_TIMEOUT, killed=victim)
    for rank, outcomes in enumerate(results):
        if rank == victim:
            continue
        kinds = [kind for kind, _, _ in outcomes]
        assert kinds[-1] == "CommunicationError" and all(kind == "returned" for kind in kinds[:-1]), outcomes
        assert max(seconds for _, seconds, _ in outcomes) <= COLLECTIVE_TIMEOUT + SLACK, outcomes
