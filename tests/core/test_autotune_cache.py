"""The autotune cache's store, without a GPU: keys, mismatches, corrupt files, concurrent writers,
save and load. (Matmul.autotune's use of it, with cuBLASLt's re-check, is tested on a GPU.)"""

import json
import multiprocessing
import os

import pytest

import nvmathx.autotune_cache as autotune_cache
from nvmathx import OptionsError
from nvmathx._core.autotune_cache import AutotuneCache, entry_digest


def key_of(m=256, sm_count=132, cublaslt=130100):
    return {"gpu": "NVIDIA H100", "sm_count": sm_count, "driver": 13000, "cublaslt": cublaslt,
            "problem": f"MatmulProblem(m={m}, n=8192, k=8192, bf16)", "epilog": None, "workspace_limit": 1 << 25,
            "alignment": [256, 256, 256]}


def algorithms_of(rng, count=3):
    return [{"algo": rng.bytes(64).hex(), "workspace_size": int(rng.integers(0, 1 << 20)),
             "waves_count": float(rng.random()), "ms": float(rng.random())} for _ in range(count)]


@pytest.fixture
def cache(tmp_path):
    store = AutotuneCache()
    store.enable(tmp_path / "autotune")
    return store


def test_an_entry_is_found_by_its_key_and_by_no_other(cache, rng):
    algorithms = algorithms_of(rng)
    cache.record(key_of(), algorithms)
    assert cache.lookup(key_of()) == algorithms
    for other in (key_of(m=128), key_of(sm_count=114), key_of(cublaslt=130200)):
        assert cache.lookup(other) is None
    assert cache.info()[3:] == (1, 3, 0)


def test_a_second_process_finds_what_the_first_recorded(tmp_path, rng):
    first, second = AutotuneCache(), AutotuneCache()  # two processes: nothing shared but the folder
    first.enable(tmp_path)
    second.enable(tmp_path)
    algorithms = algorithms_of(rng)
    first.record(key_of(), algorithms)
    assert second.lookup(key_of()) == algorithms


def test_a_file_under_the_right_name_with_another_key_is_a_miss(cache, rng):
    cache.record(key_of(), algorithms_of(rng))
    path = os.path.join(cache.info().path, entry_digest(key_of()) + ".json")
    entry = json.load(open(path))
    entry["key"]["m"] = "tampered"
    json.dump(entry, open(path, "w"))
    fresh = AutotuneCache()
    fresh.enable(cache.info().path)
    assert fresh.lookup(key_of()) is None


@pytest.mark.parametrize("content", ["", "{not json", "[]", '{"format": 1, "key": {}, "algorithms": []}',
                                     '{"format": 99, "key": {}, "algorithms": [{}]}'])
def test_a_corrupt_entry_is_a_miss_and_is_replaced(tmp_path, rng, content):
    store = AutotuneCache()
    store.enable(tmp_path)
    (tmp_path / (entry_digest(key_of()) + ".json")).write_text(content)
    assert store.lookup(key_of()) is None
    algorithms = algorithms_of(rng)
    store.record(key_of(), algorithms)
    again = AutotuneCache()
    again.enable(tmp_path)
    assert again.lookup(key_of()) == algorithms


def test_reject_drops_the_entry_everywhere(cache, rng):
    cache.record(key_of(), algorithms_of(rng))
    cache.reject(key_of())
    assert cache.lookup(key_of()) is None and cache.info().rejected == 1 and cache.info().entries == 0


def test_nothing_is_recorded_while_disabled(rng):
    store = AutotuneCache()
    store.record(key_of(), algorithms_of(rng))
    assert not store.active and store.lookup(key_of()) is None


def test_save_and_load_carry_the_entries_to_a_fresh_process(cache, tmp_path, rng):
    entries = {m: algorithms_of(rng) for m in (1, 16, 256)}
    for m, algorithms in entries.items():
        cache.record(key_of(m=m), algorithms)
    bundle = tmp_path / "tuning.json"
    assert cache.save(bundle) == 3
    fresh = AutotuneCache()  # not enabled: loading is asking for the entries
    assert fresh.load(bundle) == 3 and fresh.active
    assert all(fresh.lookup(key_of(m=m)) == algorithms for m, algorithms in entries.items())
    enabled = AutotuneCache()
    enabled.enable(tmp_path / "elsewhere")
    enabled.load(bundle)
    assert enabled.info().entries == 3 and len(os.listdir(tmp_path / "elsewhere")) == 3


@pytest.mark.parametrize("content, reason", [("{broken", "cannot read"), ('{"format": 1}', "not an nvmathx"),
                                             ("[1, 2]", "not an nvmathx")])
def test_load_refuses_what_is_no_saved_cache(tmp_path, content, reason):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(OptionsError, match=f"^path: .*{reason}"):
        AutotuneCache().load(path)
    with pytest.raises(OptionsError, match="^path: cannot read"):
        AutotuneCache().load(tmp_path / "missing.json")


def test_clear_forgets_memory_and_folder(cache, rng):
    cache.record(key_of(), algorithms_of(rng))
    cache.clear()
    assert cache.info()[2:] == (0, 0, 0, 0) and cache.lookup(key_of()) is None


def test_bad_paths_are_refused(tmp_path):
    with pytest.raises(OptionsError, match="^path: "):
        AutotuneCache().enable(3)
    (tmp_path / "file").write_text("")
    with pytest.raises(OptionsError, match="^path: .* is a file"):
        AutotuneCache().enable(tmp_path / "file")
    with pytest.raises(OptionsError, match="^path: "):
        AutotuneCache().save(None)


def _writer(folder, worker, rounds):
    import numpy as np

    store = AutotuneCache()
    store.enable(folder)
    rng = np.random.default_rng(worker)
    for round_ in range(rounds):
        # Every writer writes the same keys, with its own values: the last rename wins, whole.
        store.record(key_of(m=round_ % 4), algorithms_of(rng))


def test_concurrent_writers_leave_whole_entries(tmp_path):
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_writer, args=(str(tmp_path), worker, 40)) for worker in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
        assert worker.exitcode == 0
    reader = AutotuneCache()
    reader.enable(tmp_path)
    assert reader.info().entries == 4
    assert all(len(reader.lookup(key_of(m=m))) == 3 for m in range(4))
    assert not [name for name in os.listdir(tmp_path) if name.startswith(".tmp-")]


def test_the_public_module_serves_the_process_store(tmp_path):
    autotune_cache.enable(tmp_path)
    try:
        assert autotune_cache.info().enabled and autotune_cache.info().path == str(tmp_path)
    finally:
        autotune_cache.disable()
    assert not autotune_cache.info().enabled
