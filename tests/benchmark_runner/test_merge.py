"""Joining the JSON of a suite run in parts (``python -m benchmarks.merge``)."""

import copy
import json

import pytest

from benchmarks.merge import main, merge_results


def _part(date, names, rng, versions=None):
    return {
        "suite": "device",
        "device": "NVIDIA H200 (sm_90, driver 13.0, 132 SMs)",
        "date": date,
        "versions": versions or {"nvmathx": "0.1.0", "torch": "2.11.0"},
        "cases": [
            {"name": name, "params": {}, "unit": "ms",
             "times": {"nvmathx": float(rng.uniform(0.1, 5)), "torch": float(rng.uniform(0.1, 5))}}
            for name in names
        ],
    }


def test_parts_join_in_order_with_their_dates(rng):
    first = _part("2026-12-05T10:00:00+00:00", ["copy", "rng_normal"], rng)
    second = _part("2026-12-05T10:09:00+00:00", ["first_launch_warm_cache"], rng)
    merged = merge_results([first, second])
    assert [case["name"] for case in merged["cases"]] == ["copy", "rng_normal", "first_launch_warm_cache"]
    assert merged["cases"][1]["times"] == first["cases"][1]["times"]
    assert merged["date"] == "2026-12-05T10:09:00+00:00"
    assert merged["parts"] == [
        {"date": first["date"], "cases": ["copy", "rng_normal"]},
        {"date": second["date"], "cases": ["first_launch_warm_cache"]},
    ]


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda part: part.update(suite="fft"), "suite"),
        (lambda part: part.update(device="NVIDIA B200"), "device"),
        (lambda part: part["versions"].update(torch="2.12.0"), "torch 2.11.0 vs 2.12.0"),
        (lambda part: part["cases"].__setitem__(0, dict(part["cases"][0], name="copy")), "'copy' is also in parts"),
        (lambda part: part.pop("versions"), "lacks 'versions'"),
    ],
)
def test_parts_that_are_not_one_run_are_refused(rng, change, message):
    first = _part("2026-12-05T10:00:00+00:00", ["copy"], rng)
    second = _part("2026-12-05T10:09:00+00:00", ["solve"], rng)
    change(second)
    with pytest.raises(ValueError, match=message):
        merge_results([first, copy.deepcopy(second)])


def test_nothing_to_merge_is_refused():
    with pytest.raises(ValueError, match="parts"):
        merge_results([])


def test_command_writes_the_suite_json(tmp_path, rng):
    paths = []
    for index, names in enumerate((["copy"], ["solve"])):
        path = tmp_path / f"part{index}.json"
        path.write_text(json.dumps(_part(f"2026-12-05T10:0{index}:00+00:00", names, rng)))
        paths.append(str(path))
    assert main([*paths, "--out", str(tmp_path / "out"), "--no-plot"]) == 0
    merged = json.loads((tmp_path / "out" / "device.json").read_text())
    assert [case["name"] for case in merged["cases"]] == ["copy", "solve"]
    assert main([paths[0], paths[0], "--out", str(tmp_path / "out"), "--no-plot"]) == 2
