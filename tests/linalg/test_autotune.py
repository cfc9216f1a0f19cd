"""Autotune's choice and the workspace every call gets, on the host stand-in for cuBLASLt."""

import gc

import pytest

from nvmathx.linalg import Matmul, plan_cache
from nvmathx.linalg._autotune import rank, sample_runs
from nvmathx.linalg._cublaslt_plan import (
    EPILOG_WORKSPACE_PAD,
    MatmulAlgorithm,
    custom_option_variants,
    workspace_bytes_for,
)

from ._fake_cublaslt import FakeMemoryResource, install, to_device
from ._reference import random


@pytest.fixture
def fake(monkeypatch):
    fake_lt, resource = install(monkeypatch)
    yield fake_lt, resource
    plan_cache.clear()
    gc.collect()


def _algorithm(workspace):
    return MatmulAlgorithm(bytes(64), workspace, 1.0)


def test_workspace_bytes_for_is_the_largest_candidate_plus_a_pad_with_an_epilog():
    algorithms = [_algorithm(0), _algorithm(4096), _algorithm(1024)]
    assert workspace_bytes_for(algorithms, epilog=False) == 4096
    assert workspace_bytes_for(algorithms, epilog=True) == 4096 + EPILOG_WORKSPACE_PAD
    assert workspace_bytes_for([_algorithm(0)], epilog=True) == 0  # nothing needed, nothing padded


@pytest.mark.parametrize("epilog", [None, "RELU"])
def test_every_call_gets_the_whole_workspace(rng, fake, epilog):
    """cublasLtMatmul is given the whole allocated workspace whichever algorithm runs, as torch and
    nvmath-python do, not only the bytes the heuristic reported for that algorithm."""
    fake_lt, _ = fake
    resource = FakeMemoryResource()
    expected = 2048 + (EPILOG_WORKSPACE_PAD if epilog else 0)
    with Matmul(
        to_device(random(rng, (8, 5))), to_device(random(rng, (5, 6))), options={"memory_resource": resource}
    ) as mm:
        algorithms = mm.plan(epilog=epilog)
        assert [alg.workspace_size for alg in algorithms] == [0, 1024, 2048]
        assert [size for size, _ in resource.allocations] == [expected]
        mm.execute()
        algo_id, pointer, size = fake_lt.last_launch
        assert (algo_id, size) == (1, expected) and pointer == resource.allocations[0][1].handle
        mm.execute(algorithm=algorithms[1], release_workspace=True)
        assert fake_lt.last_launch[0] == 2 and fake_lt.last_launch[2] == expected
        mm.execute()  # the workspace comes back, at its full size
        assert fake_lt.last_launch[0] == 1 and fake_lt.last_launch[2] == expected
        assert [size for size, _ in resource.allocations].count(expected) == 2  # (results come from it too)


def test_sample_runs_fill_a_sustained_sample():
    assert sample_runs(5, 1.5) == 14  # about 20 ms of back-to-back runs
    assert sample_runs(5, 21.0) == 5  # never fewer than asked
    assert sample_runs(10, 1e-4) == 200  # bounded for tiny problems
    assert sample_runs(7, float("inf")) == 7


def test_rank_sorts_by_time_and_ties_keep_the_heuristic_order():
    assert rank({0: 1.0, 1: 0.995, 2: 1.2}) == [1, 0, 2]
    assert rank({0: 1.0, 1: 0.98, 2: 0.5}) == [2, 1, 0]
    assert rank({1: 0.98, 2: 0.98, 0: float("inf")}) == [1, 2, 0]


def _cost_model(monkeypatch, runner, costs):
    """Make each launch of ``runner`` advance the fake event clock by ``costs[algorithm](streak)``,
    where streak counts the launches since that algorithm was selected."""
    from . import _fake_cublaslt

    launch, state = runner.launch, {"algorithm": None, "streak": 0}

    def run():
        if runner.algorithm is not state["algorithm"]:
            state["algorithm"], state["streak"] = runner.algorithm, 0
        state["streak"] += 1
        _fake_cublaslt._FakeEvent.clock += costs[runner.algorithm](state["streak"])
        launch()

    monkeypatch.setattr(runner, "launch", run)

    def select(algorithm, _select=runner.select):
        state["algorithm"] = None  # a new sample starts its streak again
        _select(algorithm)

    monkeypatch.setattr(runner, "select", select)


def test_a_burst_winner_loses_the_sustained_final(rng, fake, monkeypatch):
    """A candidate fast only in short bursts (boost clocks) loses to one that is faster sustained:
    every sample runs back to back for about 20 ms; execute() then runs the winner."""
    fake_lt, _ = fake
    with Matmul(to_device(random(rng, (8, 4))), to_device(random(rng, (4, 8)))) as mm:
        first, bursty, slow = mm.plan()
        runner = mm._runner
        costs = {
            first: lambda streak: 1.0,
            bursty: lambda streak: 0.8 if streak <= 4 else 1.5,
            slow: lambda streak: 2.0,
        }
        _cost_model(monkeypatch, runner, costs)
        timings = mm.autotune(iterations=4)
        assert [alg for _, alg in timings] == [first, bursty, slow] == mm.algorithms
        assert timings[0][0] == pytest.approx(1.0, abs=0.02)  # the sustained time
        assert timings[1][0] > 1.3
        costs[bursty] = lambda streak: 0.9  # now faster however long it runs
        timings = mm.autotune(iterations=4)
        assert [alg for _, alg in timings] == [bursty, first, slow] == mm.algorithms
        mm.execute()
        assert fake_lt.last_launch[0] == 2  # the algorithm autotune chose is the one that runs


def test_custom_option_variants_order_dedup_and_rejection():
    def algo(ident, option=0):
        return bytes([ident, option]) + bytes(62)

    heuristic = [
        MatmulAlgorithm(algo(1), 0, 1.0),
        MatmulAlgorithm(algo(2, 1), 0, 1.0),
        MatmulAlgorithm(algo(1, 2), 0, 1.0),
    ]
    option_max = {1: 2, 2: 1}
    checked = []

    def check(raw):
        checked.append(raw)
        return None if raw == algo(2, 0) else MatmulAlgorithm(raw, 64, 2.0)

    variants = custom_option_variants(
        heuristic, lambda raw: option_max[raw[0]], lambda raw, option: algo(raw[0], option), check
    )
    # algorithm 1: option 1 is new (0 and 2 are heuristic candidates); algorithm 2: option 0 is
    # rejected by the check; the third candidate adds nothing new
    assert [variant.algo for variant in variants] == [algo(1, 1)]
    assert variants[0].workspace_size == 64
    assert checked == [algo(1, 1), algo(2, 0)]  # each new configuration checked once


def test_algorithms_are_equal_by_configuration_not_bytes():
    """Two heuristic queries may return the same kernel in bytes that differ outside its configuration."""
    import pickle

    config = (21, 18, 1, 0, 0, 3, 20, 0, 2)
    first = MatmulAlgorithm(bytes([1]) + bytes(63), 1024, 0.5, config)
    noisy = MatmulAlgorithm(bytes([1]) + bytes(62) + bytes([7]), 2048, 0.7, config)
    other = MatmulAlgorithm(bytes([1]) + bytes(63), 1024, 0.5, config[:5] + (4,) + config[6:])
    assert first == noisy and hash(first) == hash(noisy) and len({first, noisy}) == 1
    assert first != other
    assert pickle.loads(pickle.dumps(first)) == first and pickle.loads(pickle.dumps(first)).config == config
    assert "custom_option=3" in repr(first) and "workspace_size=1024" in repr(first)
    # without a configuration (not read from cuBLASLt) the bytes decide
    assert MatmulAlgorithm(bytes(64), 0, 1.0) != MatmulAlgorithm(bytes([1]) + bytes(63), 0, 1.0)


class _FakeDevice:
    """The machine facts the autotune cache's key reads, for the host stand-in."""

    @staticmethod
    def install(monkeypatch, name="NVIDIA H100 80GB HBM3"):
        from nvmathx._bindings import cublaslt, cuda_driver
        from nvmathx._core import device

        monkeypatch.setattr(device, "device_properties", lambda device_id: {"name": name, "multiprocessor_count": 132})
        monkeypatch.setattr(cuda_driver, "driver_version", lambda: 13000)
        monkeypatch.setattr(cublaslt, "get_version", lambda: 130100)


@pytest.fixture
def tuning_store(monkeypatch, tmp_path):
    """A fresh autotune cache enabled in a temporary folder, and a factory of fresh stores over the
    same folder (a second process)."""
    from nvmathx._core.autotune_cache import AutotuneCache
    from nvmathx.linalg import _autotune

    def fresh():
        store = AutotuneCache()
        store.enable(tmp_path)
        monkeypatch.setattr(_autotune, "autotune_store", store)
        return store

    _FakeDevice.install(monkeypatch)
    return fresh


def _autotuned(rng, shape=(8, 5, 6)):
    m, k, n = shape
    with Matmul(to_device(random(rng, (m, k))), to_device(random(rng, (k, n)))) as mm:
        mm.plan()
        return mm.autotune(iterations=1), mm.algorithms


def test_a_second_process_takes_the_stored_outcome_without_timing(rng, fake, tuning_store, monkeypatch):
    from nvmathx.linalg import _autotune

    first = tuning_store()
    timed = []
    original = _autotune._timed_candidates
    monkeypatch.setattr(_autotune, "_timed_candidates", lambda *args: timed.append(1) or original(*args))
    timings, order = _autotuned(rng)
    assert timed == [1] and first.info().entries == 1 and first.info().misses == 1
    second = tuning_store()  # nothing in memory: only the folder is shared
    again, again_order = _autotuned(rng)
    assert timed == [1] and second.info().hits == 1
    assert again_order == order and [ms for ms, _ in again] == [ms for ms, _ in timings]
    _autotuned(rng, shape=(16, 5, 6))  # another problem: tuned
    assert timed == [1, 1]


def test_opaque_bytes_that_differ_between_processes_still_hit(rng, fake, tuning_store, monkeypatch):
    import itertools

    from nvmathx._bindings import cublaslt as lt
    from nvmathx.linalg import _autotune

    queries = itertools.count(1)
    heuristic = lt.algo_get_heuristic

    def noisy(*args):  # as cuBLASLt does: the same algorithms, other bytes outside their configuration
        results = heuristic(*args)
        for result in results:
            result.algo[7] = next(queries)
        return results

    monkeypatch.setattr(lt, "algo_get_heuristic", noisy)
    tuning_store()
    timed = []
    original = _autotune._timed_candidates
    monkeypatch.setattr(_autotune, "_timed_candidates", lambda *args: timed.append(1) or original(*args))
    _, order = _autotuned(rng)
    store = tuning_store()
    _, again = _autotuned(rng)
    assert timed == [1] and store.info().hits == 1 and again == order


def test_an_algorithm_cublaslt_refuses_is_dropped_and_the_problem_tuned_again(rng, fake, tuning_store, monkeypatch):
    import json
    import os

    from nvmathx.linalg import _autotune

    store = tuning_store()
    _autotuned(rng)
    (entry_file,) = [name for name in os.listdir(store.info().path) if name.endswith(".json")]
    path = os.path.join(store.info().path, entry_file)
    entry = json.load(open(path))
    entry["algorithms"][0]["algo"] = (bytes([9]) + bytes(63)).hex()  # an algorithm id the library lacks
    json.dump(entry, open(path, "w"))
    store = tuning_store()
    timed = []
    original = _autotune._timed_candidates
    monkeypatch.setattr(_autotune, "_timed_candidates", lambda *args: timed.append(1) or original(*args))
    timings, order = _autotuned(rng)
    assert timed == [1] and store.info().rejected == 1
    assert all(1 <= algorithm.config[0] <= 3 for algorithm in order)
    assert json.load(open(path))["algorithms"][0]["algo"] != (bytes([9]) + bytes(63)).hex()  # re-recorded


def test_the_key_holds_the_machine(rng, fake, tuning_store, monkeypatch):
    from nvmathx.linalg import _autotune

    tuning_store()
    _autotuned(rng)
    _FakeDevice.install(monkeypatch, name="NVIDIA H200")
    store = tuning_store()
    timed = []
    original = _autotune._timed_candidates
    monkeypatch.setattr(_autotune, "_timed_candidates", lambda *args: timed.append(1) or original(*args))
    _autotuned(rng)
    assert timed == [1] and store.info().misses == 1
