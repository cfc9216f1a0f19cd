"""The distributed bad-input catalogue on every rank of worlds of 1 to 3 processes: every rank
raises the same typed error naming the argument, and no rank hangs."""

import pytest

from helpers.distributed import mpiexec, run_world


def _check(per_rank):
    from distributed._bad_input_cases import ROWS

    assert len(ROWS) >= 30
    failures = []
    for name, _, _, _ in ROWS:
        outcomes = [outcomes[name] for outcomes in per_rank]
        if outcomes[0][0] == "FAILED" or any(outcome != outcomes[0] for outcome in outcomes):
            failures.append(f"{name}: {outcomes}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("world_size", [1, 2, 3])
def test_gloo_world(world_size, seed):
    pytest.importorskip("torch")
    _check(run_world(world_size, "distributed._bad_input_cases:run", seed=seed, timeout=180))


def test_mpi_world(seed):
    pytest.importorskip("mpi4py")
    if mpiexec() is None:
        pytest.skip("no mpiexec")
    _check(run_world(2, "distributed._bad_input_cases:run", seed=seed, launcher="mpi", timeout=180))
