"""Results: running fake CPU cases into the fixed format, the schema check, JSON, plot and table."""

import json
import time

import pytest

from benchmarks import Case, Context, Skip, tflops
from benchmarks._report import best_peer, format_table, normalised_times, validate_result, write_json, write_plot
from benchmarks._runner import run_cases


def _sleeper(seconds):
    return lambda: (lambda: time.sleep(seconds))


def _raising():
    raise RuntimeError("planner exploded")


def _skipping():
    raise Skip("not for this size")


@pytest.fixture
def result():
    cases = [
        Case(
            name="sleep_calls", unit="s", params={"n": 3}, gpu=False, repeats=3,
            setups={"nvmathx": _sleeper(0.002), "torch": _sleeper(0.004), "cupy": _raising, "nvmath-python": _skipping},
            derive=tflops(1e9),
        ),
        Case(name="host_loop", unit="us_per_call", gpu=False, iterations=50, loops=3,
             setups={"nvmathx": lambda: (lambda: None), "python": lambda: [lambda: 1, lambda: 2]}),
        Case(name="needs_gpu", unit="ms", setups={"nvmathx": lambda: (lambda: None)}),
    ]
    ctx = Context(peers=("torch", "cupy", "nvmath-python"), has_gpu=False)
    return run_cases("fake", cases, ctx, progress=lambda line: None)


def test_run_records_times_errors_skips_and_derived(result):
    validate_result(result)
    assert result["suite"] == "fake" and result["device"] == "cpu"
    assert [case["name"] for case in result["cases"]] == ["sleep_calls", "host_loop"]
    sleep, host = result["cases"]
    assert sleep["params"] == {"n": 3} and sleep["unit"] == "s"
    assert 0.002 <= sleep["times"]["nvmathx"] < sleep["times"]["torch"]
    assert sleep["times"]["cupy"] is None
    assert "planner exploded" in sleep["errors"]["cupy"]
    assert "nvmath-python" not in sleep["times"] and sleep["skipped"]["nvmath-python"] == "not for this size"
    assert sleep["derived_unit"] == "TFLOP/s"
    assert sleep["derived"]["nvmathx"] == pytest.approx(1e9 / (sleep["times"]["nvmathx"] * 1e-3) / 1e12, rel=1e-3)
    assert set(host["times"]) == {"nvmathx", "python"} and host["times"]["python"] > 0


def test_run_without_runnable_cases_returns_none():
    cases = [Case(name="needs_gpu", unit="ms", setups={"nvmathx": lambda: (lambda: None)})]
    assert run_cases("fake", cases, Context(has_gpu=False), progress=lambda line: None) is None


def test_unselected_peer_is_not_run():
    calls = []
    case = Case(name="c", unit="s", gpu=False, setups={
        "nvmathx": lambda: (lambda: None), "torch": lambda: calls.append("torch") or (lambda: None)})
    result = run_cases("fake", [case], Context(peers=(), has_gpu=False), progress=lambda line: None)
    assert calls == [] and list(result["cases"][0]["times"]) == ["nvmathx"]


def test_versions_hold_strings_for_core_packages(result):
    versions = result["versions"]
    for key in ("nvmathx", "python", "numpy", "cuda-core", "cuda-bindings"):
        assert isinstance(versions[key], str) and versions[key]


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda r: r.pop("device"), "lacks 'device'"),
        (lambda r: r["cases"][0].pop("unit"), "lacks"),
        (lambda r: r["cases"][0].__setitem__("unit", "min"), "unit 'min'"),
        (lambda r: r["cases"][0]["errors"].pop("cupy"), "null without an 'errors' entry"),
        (lambda r: r["cases"][0]["times"].__setitem__("torch", float("nan")), "finite"),
        (lambda r: r["versions"].__setitem__("torch", 2), "version strings"),
    ],
)
def test_validate_result_rejects(result, mutate, message):
    mutate(result)
    with pytest.raises(ValueError, match=message):
        validate_result(result)


def test_write_json_round_trips(result, tmp_path):
    path = write_json(result, str(tmp_path / "out"))
    assert path.endswith("fake.json")
    with open(path) as file:
        assert json.load(file) == result


def test_normalised_times_divide_by_the_best_peer():
    assert normalised_times({"times": {"nvmathx": 2.0, "torch": 4.0}}) == {"nvmathx": 0.5, "torch": 1.0}
    times = {"nvmathx": 2.0, "torch": 5.0, "cupy": 4.0, "nvmathx.autotuned": 1.0, "x": None}
    assert normalised_times({"times": times}) == {"nvmathx": 0.5, "torch": 1.25, "cupy": 1.0, "nvmathx.autotuned": 0.25}
    # No peer with a time: the fastest column is the base.
    assert normalised_times({"times": {"nvmathx": 2.0, "nvmathx.first": 8.0}}) == {"nvmathx": 1.0, "nvmathx.first": 4.0}
    assert normalised_times({"times": {"nvmathx": None}}) == {}


def test_best_peer_ignores_nvmathx_columns_and_missing_times():
    assert best_peer({"times": {"nvmathx": 1.0, "torch": 3.0, "cupy": 2.0, "nvmath-python": None}}) == ("cupy", 2.0)
    assert best_peer({"times": {"nvmathx": 1.0, "nvmathx.first": 2.0}}) is None


def test_write_plot_makes_a_png(result, tmp_path):
    pytest.importorskip("matplotlib")
    path = write_plot(result, str(tmp_path))
    with open(path, "rb") as file:
        assert file.read(8) == b"\x89PNG\r\n\x1a\n"


def test_format_table_has_a_row_per_case_and_shows_errors(result):
    lines = format_table(result).splitlines()
    assert lines[0].split() == ["case", "unit", "nvmathx", "torch", "cupy", "python"]
    assert lines[1].split()[:2] == ["sleep_calls", "s"] and lines[1].split()[4] == "error"
    assert lines[2].split()[3] == "-"  # host_loop has no torch column
    assert any("planner exploded" in line for line in lines)


def test_per_call_cases_report_failures_per_library():
    case = Case(name="loop", unit="us_per_call", gpu=False, iterations=20, loops=2,
                setups={"nvmathx": lambda: (lambda: None), "torch": lambda: (lambda: 1 / 0), "cupy": _skipping})
    result = run_cases("fake", [case], Context(peers=("torch", "cupy"), has_gpu=False), progress=lambda line: None)
    record = result["cases"][0]
    assert record["times"]["nvmathx"] > 0 and record["times"]["torch"] is None
    assert "ZeroDivisionError" in record["errors"]["torch"] and "cupy" in record["skipped"]


def test_progress_is_reported_per_case_with_a_counter_and_a_time():
    lines = []
    cases = [Case(name=name, unit="s", gpu=False, setups={"nvmathx": lambda: (lambda: None)}, repeats=1)
             for name in ("first", "second")]
    run_cases("fake", cases, Context(peers=(), has_gpu=False), progress=lines.append)
    assert lines[0] == "[fake 1/2] first ..." and lines[1].startswith("[fake 1/2] first: done in ")
    assert lines[3].startswith("[fake 2/2] second: done in ") and lines[3].endswith(" s")
