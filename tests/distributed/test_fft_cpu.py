"""The distributed FFT and reshape on the CPU space, in worlds of 1 to 4 processes (torch.distributed
with gloo) and 2 and 3 processes (mpiexec with mpi4py): one world per test runs every case."""

import pytest

from helpers.distributed import assert_cases_passed, mpiexec, run_world


@pytest.mark.parametrize("world_size", [1, 2, 3, 4])
def test_gloo_world(world_size, seed):
    pytest.importorskip("torch")
    assert_cases_passed(run_world(world_size, "distributed._fft_cases:run", seed=seed), 40)


@pytest.mark.parametrize("world_size", [2, 3])
def test_mpi_world(world_size, seed):
    pytest.importorskip("mpi4py")
    if mpiexec() is None:
        pytest.skip("no mpiexec")
    assert_cases_passed(run_world(world_size, "distributed._fft_cases:run", seed=seed, launcher="mpi"), 40)


@pytest.mark.parametrize("world_size", [1, 2, 3])
def test_gpu_code_path_on_host_stand_ins(world_size, seed):
    """The GPU pipeline (buffers, packing, NCCL groups) with cuFFT, kernels and NCCL emulated on the host."""
    pytest.importorskip("torch")
    assert_cases_passed(run_world(world_size, "distributed._fake_gpu_cases:run", seed=seed), 30)


@pytest.mark.parametrize("world_size", [2, 3])
def test_pipelined_gpu_code_path_on_host_stand_ins(world_size, seed):
    """The GPU pipeline with its first pass and move in chunks (exchanges of one chunk beside the
    transform of the next on a GPU)."""
    pytest.importorskip("torch")
    assert_cases_passed(run_world(world_size, "distributed._fake_gpu_cases:run_pipelined", seed=seed), 30)
