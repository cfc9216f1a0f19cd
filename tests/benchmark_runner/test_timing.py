"""Timers: median logic, rotation and event bookkeeping, with fake clocks instead of a GPU."""

import itertools

import pytest

from benchmarks import _timing, gpu_time_ms, host_us_per_call, wall_seconds


class _Clock:
    """A fake time source advanced by the code under test."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class _FakeEvent:
    def __init__(self):
        self.time_ms = None

    def sync(self):
        pass

    def __sub__(self, other):
        return self.time_ms - other.time_ms


class _FakeStream:
    """Records events at a fake GPU clock (ms) that the timed calls advance."""

    def __init__(self):
        self.clock_ms = 0.0
        self.syncs = 0

    def record(self, event=None, options=None):
        event = event or _FakeEvent()
        event.time_ms = self.clock_ms
        return event

    def sync(self):
        self.syncs += 1


def test_gpu_time_ms_takes_median_of_event_pairs():
    stream = _FakeStream()
    durations = itertools.cycle([1.0, 9.0, 2.0, 3.0, 100.0])
    calls = []

    def launch():
        calls.append(1)
        stream.clock_ms += next(durations)

    result = gpu_time_ms(launch, warmup=4, repeats=5, stream=stream)
    # warm-up 4 calls + 1 probe, then 5 timed calls see the cycle from its 6th element on.
    assert len(calls) == 4 + 1 + 5
    assert result == 3.0
    assert stream.syncs >= 2


def test_gpu_time_ms_rotates_inputs():
    stream = _FakeStream()
    seen = []
    functions = [lambda i=i: seen.append(i) for i in range(3)]
    gpu_time_ms(functions, warmup=2, repeats=4, stream=stream)
    timed = seen[-4:]
    assert timed == [2, 0, 1, 2]  # calls continue the rotation after the warm-up


def test_gpu_time_ms_caps_repeats_for_slow_calls():
    stream = _FakeStream()
    count = []

    def slow():
        count.append(1)
        stream.clock_ms += 1000.0  # one second per call

    gpu_time_ms(slow, warmup=1, repeats=50, stream=stream)
    assert len(count) == 1 + 1 + 3  # never fewer than 3 timed calls


def test_host_us_per_call_is_median_loop_over_iterations(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(_timing.time, "perf_counter", clock)
    loop_costs = iter([0.0, 5.0, 1.0, 2.0, 3.0, 4.0])  # warm-up loop, then 5 timed loops
    state = {"cost": 0.0}
    syncs = []

    def sync():
        syncs.append(1)
        clock.now += state["cost"]

    def call():
        pass

    def advancing_sync():
        sync()
        state["cost"] = next(loop_costs, 0.0)

    state["cost"] = next(loop_costs)
    result = host_us_per_call(call, iterations=100, loops=5, sync=advancing_sync)
    # Loop costs 5, 1, 2, 3, 4 seconds for 100 iterations each: median 3 s / 100 = 30000 us.
    assert result == pytest.approx(3.0 / 100 * 1e6)
    assert len(syncs) == 6


def test_host_us_per_call_shrinks_iterations_for_slow_calls(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(_timing.time, "perf_counter", clock)
    count = []

    def slow():
        count.append(1)
        clock.now += 0.01

    result = host_us_per_call(slow, iterations=2000, loops=2)
    assert result == pytest.approx(10_000.0)
    assert len(count) < 2000  # the budget cut the loops short


def test_wall_seconds_median(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(_timing.time, "perf_counter", clock)
    costs = iter([7.0, 1.0, 3.0])

    def run():
        clock.now += next(costs)

    assert wall_seconds(run, repeats=3) == 3.0


def test_wall_seconds_takes_the_seconds_a_call_reports(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(_timing.time, "perf_counter", clock)
    reported = iter([0.5, 0.2, 0.9])

    def run():
        clock.now += 10.0  # e.g. a subprocess's exit, which it does not count
        return next(reported)

    assert wall_seconds(run, repeats=3) == 0.5


@pytest.mark.parametrize("bad", [[], 3, [lambda: None, "x"]])
def test_as_rotation_rejects_non_callables(bad):
    with pytest.raises(TypeError, match="setup must return"):
        _timing.as_rotation(bad)


def test_as_rotation_wraps_single_callable():
    function = lambda: None  # noqa: E731
    assert _timing.as_rotation(function) == [function]


def test_gpu_time_ms_warms_up_for_a_minimum_wall_time(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(_timing.time, "perf_counter", clock)
    stream = _FakeStream()
    calls = []

    def launch():
        calls.append(1)
        clock.now += 0.010  # each call takes 10 ms of wall time
        stream.clock_ms += 10.0

    gpu_time_ms(launch, warmup=2, repeats=3, stream=stream, warmup_ms=95.0)
    # warm-up runs until 95 ms have passed (10 calls, more than warmup=2), then 1 probe, 3 timed
    assert len(calls) == 10 + 1 + 3


def test_interleaved_host_timing_rotates_order_and_takes_each_median(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(_timing.time, "perf_counter", clock)
    order = []

    def costing(name, seconds):
        def call():
            order.append(name)
            clock.now += seconds
        return call

    times = _timing.host_us_per_call_interleaved(
        {"a": costing("a", 1e-5), "b": [costing("b", 3e-5), costing("b", 3e-5)]},
        iterations=50, loops=3, min_warmup_s=0.001)
    assert times == {"a": pytest.approx(10.0), "b": pytest.approx(30.0)}
    # After warm-up: rounds of one loop each, the starting library rotating (a b, b a, a b).
    timed = order[-300:]
    firsts = [timed[0], timed[100], timed[200]]
    assert firsts == ["a", "b", "a"]


def test_interleaved_host_timing_spreads_drift_over_all_libraries(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(_timing.time, "perf_counter", clock)
    state = {"slowdown": 1.0}

    def call():
        clock.now += 1e-5 * state["slowdown"]

    def sync():
        state["slowdown"] *= 1.01  # the host speeds change after every loop

    times = _timing.host_us_per_call_interleaved({"a": call, "b": call}, iterations=100, loops=5, sync=sync,
                                                  min_warmup_s=0.0)
    assert times["a"] == pytest.approx(times["b"], rel=0.02)


def test_gpu_interleaved_rotates_rounds_and_spreads_clock_drift():
    stream = _FakeStream()
    order = []
    state = {"slowdown": 1.0}

    def library(name, ms):
        def launch():
            order.append(name)
            stream.clock_ms += ms * state["slowdown"]
            state["slowdown"] *= 1.002  # the GPU slows down steadily (heat, power limit)
        return launch

    times = _timing.gpu_time_ms_interleaved({"a": library("a", 1.0), "b": library("b", 1.0)}, warmup=2, repeats=10,
                                            rounds=5, stream=stream)
    assert times["a"] == pytest.approx(times["b"], rel=0.01)
    timed = order[-20:]  # 5 rounds of 2 calls per library
    assert [timed[i] for i in range(0, 20, 4)] == ["a", "b", "a", "b", "a"]


def test_gpu_interleaved_reports_each_librarys_median():
    stream = _FakeStream()

    def costing(ms):
        def launch():
            stream.clock_ms += ms
        return launch

    times = _timing.gpu_time_ms_interleaved({"fast": costing(0.5), "slow": [costing(2.0), costing(2.0)]}, warmup=1,
                                            repeats=6, rounds=3, stream=stream)
    assert times == {"fast": pytest.approx(0.5), "slow": pytest.approx(2.0)}


def test_round_order_spreads_start_positions_over_rounds():
    names = list(range(10))
    firsts = [_timing._round_order(names, index, 5)[0] for index in range(5)]
    assert firsts == [0, 2, 4, 6, 8]  # each library's position moves across the whole list
    assert sorted(_timing._round_order(names, 3, 5)) == names
    assert [_timing._round_order([0, 1, 2], index, 5)[0] for index in range(4)] == [0, 1, 2, 0]
