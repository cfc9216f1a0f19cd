"""The ranks' agreement: how values compare (pure), the timeout argument, a group that failed
once, and what agrees in worlds of 1 and 2 processes (distributed._agreement_cases)."""

import math

import pytest

from helpers.distributed import assert_cases_passed, run_world
from nvmathx import CommunicationError, OperandError, OptionsError
from nvmathx.distributed._agree import check_same, same_value
from nvmathx.distributed._group import DEFAULT_TIMEOUT, HostGroup, check_timeout

NAN = float("nan")


@pytest.mark.parametrize("x, y", [(NAN, NAN), (complex(NAN, 0), complex(NAN, 0)), (complex(1, NAN), complex(1, NAN)),
                                  (1, 1.0), (2, complex(2, 0)), ((1, NAN, "a"), (1, NAN, "a")), (None, None),
                                  ("ortho", "ortho"), (0.0, -0.0)])
def test_same_values(x, y):
    assert same_value(x, y) and same_value(y, x)


@pytest.mark.parametrize("x, y", [(NAN, 1.0), (complex(NAN, 0), complex(0, NAN)), (1, 2), ((1, NAN), (1, 2.0)),
                                  ((1,), (1, 1)), ("ortho", "forward"), (None, 0), (True, 2)])
def test_different_values(x, y):
    assert not same_value(x, y) and not same_value(y, x)


def test_check_same_names_the_first_rank_that_differs():
    check_same([complex(NAN, 0)] * 3, "alpha", "value")
    with pytest.raises(OperandError, match=r"^alpha: the value differs between ranks: rank 0 has 1, rank 2 has nan"):
        check_same([1, 1, NAN], "alpha", "value")
    with pytest.raises(OptionsError, match="^direction:"):
        check_same([-1, 1], "direction", "direction", error=OptionsError)


def test_timeout_argument():
    assert DEFAULT_TIMEOUT <= 300
    assert check_timeout(5) == 5.0 and check_timeout(0.25) == 0.25
    for bad in (0, -1, math.inf, NAN, True, "60", None):
        with pytest.raises(OptionsError, match="^timeout:"):
            check_timeout(bad)


class _Group(HostGroup):
    rank, size, name, exchanges_host_data = 0, 2, "a test group", True

    def __init__(self, failures):
        self.failures = failures
        self.calls = 0

    def _allgather_bytes(self, data, operation):
        self.calls += 1
        if self.failures:
            raise self._failed(operation, self.failures.pop(0))
        return [1, 1]

    def _alltoallv(self, send, send_counts, recv_counts):
        raise AssertionError("not used")


def test_a_failed_group_refuses_every_later_collective():
    group = _Group([RuntimeError("Connection closed by peer")])
    with pytest.raises(CommunicationError) as info:
        group.allgather_object(1)
    error = info.value
    assert error.operation == "agreement" and error.rank is None
    assert str(error).startswith("agreement: the collective among the 2 ranks of a test group failed")
    assert "Connection closed by peer" in str(error)
    with pytest.raises(CommunicationError, match="^all_to_all: an earlier collective on a test group failed"):
        group.alltoallv(None, [], [])
    assert group.calls == 1


def test_a_timeout_names_the_limit():
    group = _Group([None])
    group.timeout = 7.5
    with pytest.raises(CommunicationError, match=r"did not finish within 7.5 s .*initialize\(timeout=\)"):
        group.allgather_object(1, "agreement")


@pytest.mark.parametrize("world_size", [1, 2])
def test_what_agrees(world_size, seed):
    pytest.importorskip("torch")
    assert_cases_passed(run_world(world_size, "distributed._agreement_cases:run", seed=seed, timeout=180), 4)
