"""A rank of the float8 amax-reduction world (see tests/nvmathx_torch/test_float8_host.py): a
FusedMLP with a float8 recipe over the world's gloo group, on the host stand-in of the device."""

import pytest
import torch

from helpers.fake_torch_device import present_torch_as_device
from helpers.host_kernels import HostKernels
from linalg._fake_cublaslt import install

__all__ = ["rank_input", "train_two_steps"]


def rank_input(seed: int, rank: int) -> torch.Tensor:
    """Rank ``rank``'s batch: each rank's values span a different range, so the amaxes differ."""
    gen = torch.Generator().manual_seed(seed + rank)
    return (torch.randn(32, 16, generator=gen, dtype=torch.float64) * (1 + 3 * rank)).to(torch.bfloat16)


def train_two_steps(seed: int) -> dict:
    from nvmathx.torch import Float8Recipe, FusedMLP
    from nvmathx.torch._float8 import dispatch, gemms, kernels

    rank = torch.distributed.get_rank()
    with pytest.MonkeyPatch.context() as monkeypatch:
        install(monkeypatch)
        present_torch_as_device(monkeypatch)
        monkeypatch.setattr(gemms, "device_id", lambda device: 0)
        monkeypatch.setattr(gemms, "current_stream_handle", lambda device: 7)
        monkeypatch.setattr(gemms, "capturing", lambda: False)
        host = HostKernels(kernels.KERNEL_SOURCE, kernels.KERNEL_NAMES, "float8")
        monkeypatch.setattr(kernels, "launch", host.launch)
        monkeypatch.setattr(dispatch, "device_reason", lambda x: None)
        torch.manual_seed(seed)  # the same weights on every rank, as data parallelism has them
        block = FusedMLP(16, 32, dtype=torch.bfloat16, fp8=Float8Recipe(process_group=torch.distributed.group.WORLD))
        results = {}
        for step in range(2):
            x = rank_input(seed + step, rank)
            grad = rank_input(seed + 100 + step, rank) * 1e-3
            block(x).backward(grad)
            state = block.fp8_state
            results[step] = {"row0": state.amax_history[0].tolist(), "scale": state.scale.tolist()}
        # Two micro-batches forward, then one backward through both: the second forward's amax
        # reduction must not invalidate the first's saved state (a version-counter error).
        outputs = [block(rank_input(seed + 200 + k, rank)) for k in range(2)]
        (outputs[0].float().sum() + outputs[1].float().sum()).backward()
        results["micro_batches"] = bool(block.fc1.weight.grad.isfinite().all())
        from nvmathx.linalg import plan_cache

        plan_cache.clear()
    return results
