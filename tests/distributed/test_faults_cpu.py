"""A rank killed before, during or after a collective, or hung before the agreement or the exchange
(CPU space, torch.distributed with gloo, worlds of 2 to 4 processes): every survivor raises
CommunicationError within the collective timeout, and no process outlives its deadline.

``NVMATHX_FAULT_REPEATS`` (default 1) runs each world size and phase that many times, with the
victim rank and the collective it dies in changing from run to run; ``NVMATHX_FAULT_LOG`` names a
file to which every survivor's outcome is appended (one line each) for a summary.
"""

import json
import os

import pytest

from helpers.distributed import run_world

REPEATS = int(os.environ.get("NVMATHX_FAULT_REPEATS", "1"))
COLLECTIVE_TIMEOUT = 5.0  # initialize(timeout=) of the test worlds, seconds
SLACK = 3.0  # what a failing call may take beyond the timeout (the collectives before the one that hangs)


def _phases():
    from distributed._fault_cases import PHASES

    return PHASES


@pytest.mark.parametrize("phase", ["before", "during", "after", "hang", "stall"])
@pytest.mark.parametrize("world_size", [2, 3, 4])
def test_every_survivor_raises_communication_error(world_size, phase, seed):
    pytest.importorskip("torch")
    assert phase in _phases()
    log = os.environ.get("NVMATHX_FAULT_LOG")
    problems = []
    for run in range(REPEATS):
        failing_calls = []
        victim = (run + _phases().index(phase) + world_size) % world_size
        env = {"NVMATHX_FAULT_PHASE": phase, "NVMATHX_FAULT_VICTIM": str(victim), "NVMATHX_FAULT_RUN": str(run)}
        results = run_world(world_size, "distributed._fault_cases:run", seed=seed + run, timeout=90, extra_env=env,
                            collective_timeout=COLLECTIVE_TIMEOUT, killed=victim)
        for rank, outcomes in enumerate(results):
            if rank == victim:
                continue
            kinds = [kind for kind, _, _ in outcomes]
            slowest = max(seconds for _, seconds, _ in outcomes)
            if kinds[-1] != "CommunicationError" or any(kind != "returned" for kind in kinds[:-1]):
                problems.append(f"run {run}, victim {victim}, rank {rank}: {outcomes}")
            failing_calls.append(outcomes[-1][1])
            if slowest > COLLECTIVE_TIMEOUT + SLACK:
                problems.append(f"run {run}, victim {victim}, rank {rank}: a call took {slowest:.1f} s")
            if log:
                with open(log, "a") as file:
                    file.write(json.dumps({"world_size": world_size, "phase": phase, "run": run, "victim": victim,
                                           "rank": rank, "outcomes": outcomes}) + "\n")
        if phase in ("hang", "stall") and min(failing_calls) < 0.9 * COLLECTIVE_TIMEOUT:
            problems.append(f"run {run}: a survivor gave up on a hung rank after {min(failing_calls):.2f} s, before "
                            "the timeout")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("phase", ["hang", "stall"])
def test_mpi_survivors_raise_communication_error(phase, seed):
    """Under mpiexec a rank that dies ends the job, so the MPI world checks the timeout alone: a rank
    that stops taking part (then leaves without a word)."""
    from helpers.distributed import mpiexec

    pytest.importorskip("mpi4py")
    if mpiexec() is None:
        pytest.skip("no mpiexec")
    env = {"NVMATHX_FAULT_PHASE": phase, "NVMATHX_FAULT_VICTIM": "1", "NVMATHX_FAULT_RUN": "0"}
    results = run_world(3, "distributed._fault_cases:run", seed=seed, launcher="mpi", timeout=90, extra_env=env,
                        collective_timeout=COLLECTIVE_TIMEOUT, killed=1)
    for rank in (0, 2):
        (kind, seconds, operation), = results[rank]
        assert kind == "CommunicationError" and 0.9 * COLLECTIVE_TIMEOUT <= seconds <= COLLECTIVE_TIMEOUT + SLACK
        assert operation == ("agreement" if phase == "hang" else "all_to_all")
