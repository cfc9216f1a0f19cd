"""Run a function on several processes that form one nvmathx.distributed world (CPU space).

``run_world(world_size, "module:function", seed=...)`` starts ``world_size`` processes (torch.distributed
with gloo over loopback TCP, or ``mpiexec`` with mpi4py), each calls
``nvmathx.distributed.initialize()`` then ``function(seed)``, and returns every rank's return
value. Every process runs under a deadline: a hang kills the world and fails the test.
"""

from __future__ import annotations

import os
import pathlib
import pickle
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"


class WorldFailed(AssertionError):
    """A rank exited abnormally or the world outlived its deadline."""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# Open MPI refuses root (the GPU machines run tests as root) unless told it may.
MPI_AS_ROOT = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def mpiexec() -> str | None:
    """The mpiexec that belongs to the installed mpi4py (the mpich wheel's), or None."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return None
    candidate = pathlib.Path(sys.executable).parent / "mpiexec"
    return str(candidate) if candidate.exists() else shutil.which("mpiexec")


def run_world(world_size: int, target: str, *, seed: int, launcher: str = "torch", timeout: float = 240,
              extra_env: dict | None = None, collective_timeout: float | None = None,
              killed: int | None = None) -> list:
    """Every rank's return value of ``target`` (``"module:function"``, importable from tests/).

    ``collective_timeout`` is ``initialize(timeout=)``. ``killed``: the rank that the target kills
    (SIGKILL); its entry is None, and the other ranks leave without the closing barrier.
    """
    out = pathlib.Path(tempfile.mkdtemp(prefix="nvmathx-world-"))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(TESTS), str(ROOT), os.environ.get("PYTHONPATH", "")]),
               NVMATHX_WORLD_TARGET=target, NVMATHX_WORLD_SEED=str(seed), NVMATHX_WORLD_OUT=str(out),
               NVMATHX_WORLD_TIMEOUT=str(int(timeout)), NVMATHX_WORLD_PARENT=str(os.getpid()),
               OMP_NUM_THREADS="1", **(extra_env or {}))
    if collective_timeout is not None:
        env["NVMATHX_WORLD_COLLECTIVE_TIMEOUT"] = str(collective_timeout)
    if killed is not None:
        env["NVMATHX_WORLD_FAULTS"] = "1"
    worker = [sys.executable, "-m", "helpers.distributed_worker"]
    if launcher == "mpi":
        commands = [[mpiexec(), "-n", str(world_size), *worker]]
        envs = [dict(env, NVMATHX_WORLD_LAUNCHER="mpi", **MPI_AS_ROOT)]
    else:
        port = _free_port()
        commands = [worker for _ in range(world_size)]
        envs = [dict(env, NVMATHX_WORLD_LAUNCHER="torch", RANK=str(rank), WORLD_SIZE=str(world_size),
                     MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port)) for rank in range(world_size)]
    processes = [subprocess.Popen(command, env=environment, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True, start_new_session=True) for command, environment in zip(commands, envs)]
    deadline = time.monotonic() + timeout
    outputs = []
    try:
        for process in processes:
            remaining = max(deadline - time.monotonic(), 1)
            try:
                outputs.append(process.communicate(timeout=remaining)[0])
            except subprocess.TimeoutExpired:
                raise WorldFailed(f"the {launcher} world of {world_size} outlived its {timeout} s deadline (a hang?)") \
                    from None
    finally:
        for process in processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
    failed = [(i, p.returncode) for i, p in enumerate(processes)
              if p.returncode != 0 and not (i == killed and p.returncode == -signal.SIGKILL)]
    if failed:
        raise WorldFailed(f"processes exited with {failed}:\n" + "\n".join(text[-4000:] for text in outputs))
    results = []
    for rank in range(world_size):
        if rank == killed:
            results.append(None)
            continue
        path = out / f"rank{rank}.pickle"
        if not path.exists():
            raise WorldFailed(f"rank {rank} wrote no result:\n" + "\n".join(text[-4000:] for text in outputs))
        results.append(pickle.loads(path.read_bytes()))
    shutil.rmtree(out, ignore_errors=True)
    return results


def assert_cases_passed(outcomes_per_rank, minimum: int) -> None:
    """Every rank's ``{case: None or failure}`` shows no failure (the first failing rank's text per
    case is reported) and at least ``minimum`` cases ran."""
    failures = {}
    for rank, outcomes in enumerate(outcomes_per_rank):
        for name, failure in outcomes.items():
            if failure is not None:
                failures.setdefault(name, f"rank {rank}: {failure}")
    assert len(outcomes_per_rank[0]) >= minimum, f"only {len(outcomes_per_rank[0])} cases ran"
    assert not failures, f"{len(failures)} case(s) failed:\n" + "\n".join(f"{k}\n{v}" for k, v in failures.items())
