"""examples/distributed_fft3d.py runs as its docstring says: alone, under torchrun and under mpiexec
(CPU here; ``--gpu`` under the gpu marker), each process under a timeout."""

import os
import pathlib
import subprocess
import sys

import pytest

from helpers.distributed import MPI_AS_ROOT, mpiexec

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "examples" / "distributed_fft3d.py"
ROOT = SCRIPT.parents[1]


def _run(command, timeout=240):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""), OMP_NUM_THREADS="1",
               **MPI_AS_ROOT)
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_one_process():
    pytest.importorskip("torch")
    assert "rank 0 of 1" in _run([sys.executable, str(SCRIPT)])


def test_torchrun_three_processes():
    pytest.importorskip("torch")
    output = _run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "3", "--master-port",
                   str(29600 + os.getpid() % 300), str(SCRIPT)])
    assert all(f"rank {rank} of 3" in output for rank in range(3))


def test_mpiexec_two_processes():
    pytest.importorskip("mpi4py")
    if mpiexec() is None:
        pytest.skip("no mpiexec")
    output = _run([mpiexec(), "-n", "2", sys.executable, str(SCRIPT), "--mpi"])
    assert "rank 0 of 2" in output and "rank 1 of 2" in output


@pytest.mark.gpu
def test_one_gpu():
    pytest.importorskip("torch")
    assert "rank 0 of 1" in _run([sys.executable, str(SCRIPT), "--gpu"])
