"""The CPU worlds' cases again on GPUs: one process per GPU, NCCL and cuBLASMp, each rank's piece
of every result against numpy's on the global problem in float64; the bad-input catalogue on every
rank. World size: ``NVMATHX_GPU_WORLD``, else every GPU of the machine (1 on one H200: the dry
run of the multi-GPU run, ``scripts/gpu-check-distributed``)."""

import os

import pytest

from helpers.distributed import assert_cases_passed, mpiexec, run_world

pytestmark = pytest.mark.gpu

GPU = {"NVMATHX_WORLD_DEVICE": "cuda", "NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
       "NVSHMEM_DISABLE_NVLS": "1"}


def _world_size() -> int:
    torch = pytest.importorskip("torch")
    return int(os.environ.get("NVMATHX_GPU_WORLD", torch.cuda.device_count()))


def test_fft_and_reshape(seed):
    assert_cases_passed(run_world(_world_size(), "distributed._fft_cases:run", seed=seed, extra_env=GPU,
                                  timeout=600), 40)


def test_matmul(seed):
    assert_cases_passed(run_world(_world_size(), "distributed._matmul_cases:run", seed=seed, extra_env=GPU,
                                  timeout=600), 50)


def test_bad_inputs_raise_alike_on_every_rank(seed):
    from distributed._bad_input_cases import ROWS

    per_rank = run_world(_world_size(), "distributed._bad_input_cases:run", seed=seed, extra_env=GPU, timeout=300)
    failures = [name for name, *_ in ROWS if per_rank[0][name][0] == "FAILED"
                or any(outcomes[name] != per_rank[0][name] for outcomes in per_rank)]
    assert not failures, failures


def test_mpiexec_fft(seed):
    pytest.importorskip("mpi4py")
    if mpiexec() is None:
        pytest.skip("no mpiexec")
    assert_cases_passed(run_world(_world_size(), "distributed._fft_cases:run", seed=seed, launcher="mpi",
                                  extra_env=GPU, timeout=600), 40)
