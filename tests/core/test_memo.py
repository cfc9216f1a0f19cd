"""BuildOnce: one build per key, also when threads ask together."""

import threading

import pytest

from nvmathx._core.memo import BuildOnce


def test_each_key_is_built_once_across_threads():
    memo = BuildOnce()
    builds = []
    start = threading.Barrier(8)

    def build(key):
        builds.append(key)
        return ("value", key)

    def ask(key):
        start.wait()
        for _ in range(200):
            assert memo.get_or_build(key, lambda: build(key)) == ("value", key)

    threads = [threading.Thread(target=ask, args=(index % 2,)) for index in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(builds) == [0, 1]
    assert dict(memo) == {0: ("value", 0), 1: ("value", 1)}


def test_a_failed_build_leaves_no_entry_and_is_retried():
    memo = BuildOnce()

    def fail():
        raise RuntimeError("no compiler")

    with pytest.raises(RuntimeError, match="no compiler"):
        memo.get_or_build("k", fail)
    assert "k" not in memo
    assert memo.get_or_build("k", lambda: 3) == 3
