import threading

import pytest

from nvmathx._core.errors import OptionsError
from nvmathx._core.plan_cache import PlanCache


class Plan:
    def __init__(self, name, workspace_bytes=0):
        self.name = name
        self.workspace_bytes = workspace_bytes
        self.freed = False

    def free(self):
        self.freed = True


def test_lru_eviction_frees_the_oldest():
    cache = PlanCache("test", max_size=2)
    plans = [Plan(i) for i in range(3)]
    for i, plan in enumerate(plans):
        cache.put(0, ("key", i), plan)
        if i == 1:
            assert cache.get(0, ("key", 0)) is plans[0]  # 0 becomes most recent
    assert plans[1].freed and not plans[0].freed and not plans[2].freed
    assert cache.keys(0) == [("key", 0), ("key", 2)]


def test_hits_misses_and_info():
    cache = PlanCache("test", max_size=4)
    assert cache.get(0, "a") is None
    cache.put(0, "a", Plan("a", 100))
    assert cache.get(0, "a").name == "a"
    info = cache.info(0)
    assert (info.size, info.hits, info.misses, info.memory_bytes) == (1, 1, 1, 100)


def test_memory_limit_evicts_but_keeps_the_newest():
    cache = PlanCache("test", max_size=10, max_memory_bytes=250)
    plans = [Plan(i, 100) for i in range(3)]
    for i, plan in enumerate(plans):
        cache.put(0, i, plan)
    assert plans[0].freed and cache.keys(0) == [1, 2]
    big = Plan("big", 1000)
    cache.put(0, "big", big)
    assert cache.keys(0) == ["big"] and not big.freed


def test_devices_are_separate_and_clear_frees_all():
    cache = PlanCache("test", max_size=1)
    on0, on1 = Plan(0), Plan(1)
    cache.put(0, "k", on0)
    cache.put(1, "k", on1)
    assert cache.get(0, "k") is on0 and cache.get(1, "k") is on1
    cache.clear()
    assert on0.freed and on1.freed and len(cache) == 0
    assert cache.info(0).hits == 0


def test_set_limits_evicts_and_validates():
    cache = PlanCache("test", max_size=5)
    plans = [Plan(i) for i in range(5)]
    for i, plan in enumerate(plans):
        cache.put(0, i, plan)
    cache.set_limits(max_size=2)
    assert sum(plan.freed for plan in plans) == 3
    cache.set_limits(max_size=0)
    cache.put(0, "x", Plan("x"))
    assert len(cache) == 0
    with pytest.raises(OptionsError, match="max_size"):
        cache.set_limits(max_size=-1)


def test_threads_do_not_share_plans():
    cache = PlanCache("test", max_size=4)
    cache.put(0, "k", Plan("main"))
    seen = []
    thread = threading.Thread(target=lambda: seen.append(cache.get(0, "k")))
    thread.start()
    thread.join()
    assert seen == [None]


def test_replacing_a_key_frees_the_old_plan():
    cache = PlanCache("test", max_size=4)
    old, new = Plan("old"), Plan("new")
    cache.put(0, "k", old)
    cache.put(0, "k", new)
    assert old.freed and cache.get(0, "k") is new


@pytest.mark.parametrize("bad", ["x", -5, -1, 1.0, True, None])
@pytest.mark.parametrize("method", ["info", "keys"])
def test_device_id_must_be_an_ordinal(bad, method):
    cache = PlanCache("test")
    with pytest.raises(OptionsError, match="^device_id: expected an int >= 0") as info:
        getattr(cache, method)(bad)
    assert info.value.argument == "device_id"
    assert cache.info(0).size == 0 and cache.keys(0) == []


def test_a_hashed_key_finds_what_its_plain_tuple_filed_and_back():
    """HashedKey equals and hashes as the tuple of its items, so a plan filed under either is found
    by the other; a pickled copy hashes anew (str hashes differ between processes)."""
    import pickle

    from nvmathx._core.plan_cache import HashedKey

    cache = PlanCache("test", max_size=4)
    items = (("torch", (3, 4), "bfloat16"), 16, "BIAS", None)
    cache.put(0, items, Plan("a"))
    hashed = HashedKey(items)
    assert hashed == items and hash(hashed) == hash(items) and cache.get(0, hashed) is not None
    other = HashedKey((("torch", (4, 4), "bfloat16"), 16, "BIAS", None))
    cache.put(0, other, Plan("b"))
    assert cache.get(0, tuple(other)) is not None and cache.get(0, HashedKey(tuple(other)[:-1])) is None
    copied = pickle.loads(pickle.dumps(hashed))
    assert type(copied) is HashedKey and copied == items and copied.__reduce__() == (HashedKey, (items,))
