"""The distributed FFT and reshape on the CPU space, in worlds of 1 to 4 processes (torch.distributed
with gloo) and 2 and 3 processes (mpiexec with mpi4py): one world per test runs every case."""

import pytest

from helpers.distributed import mpiexec, run_world


def _check(outcomes_per_rank, minimum=40):
    failures = {}
    for rank, outcomes in enumerate(outcomes_per_rank):
        for name, failure in outcomes.items():
            if failure is not None:
                failures.setdefault(name, f"rank {rank}: {failure}")
    assert len(outcomes_per_rank[0]) >= minimum
    assert not failures, f"{len(failures)} case(s) failed:\n" + "\n".join(f"{k}\n{v}" for k, v in failures.items())


@pytest.mark.parametrize("world_size", [1, 2, 3, 4])
def test_gloo_world(world_size, seed):
    pytest.importorskip("torch")
    _check(run_world(world_size, "distributed._fft_cases:run", seed=seed))


@pytest.mark.parametrize("world_size", [2, 3])
def test_mpi_world(world_size, seed):
    pytest.importorskip("mpi4py")
    if mpiexec() is None:
        pytest.skip("no mpiexec")
    _check(run_world(world_size, "distributed._fft_cases:run", seed=seed, launcher="mpi"))


@pytest.mark.parametrize("world_size", [1, 2, 3])
def test_gpu_code_path_on_host_stand_ins(world_size, seed):
    """The GPU pipeline (buffers, packing, NCCL groups) with cuFFT, kernels and NCCL emulated on the host."""
    pytest.importorskip("torch")
    _check(run_world(world_size, "distributed._fake_gpu_cases:run", seed=seed), minimum=30)


@pytest.mark.parametrize("world_size", [2, 3])
def test_pipelined_gpu_code_path_on_host_stand_ins(world_size, seed):
    """The GPU pipeline with its first pass and move in chunks (exchanges of one chunk beside the
    transform of the next on a GPU)."""
    pytest.importorskip("torch")
    _check(run_world(world_size, "distributed._fake_gpu_cases:run_pipelined", seed=seed), minimum=30)
