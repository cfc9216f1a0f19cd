"""The README's figures table cannot go stale: every figure in it is checked against the JSON its row
names (``benchmarks/results/SUITE.json``, case ``CASE``, column ``COLUMN``), to the digits shown."""

import json
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
UNITS = {"ms": "ms", "s": "s", "us": "us_per_call"}
FIGURE = re.compile(r"`([\w.\-]+)` (\d+(?:\.\d+)?) (ms|us|s)\b")
SOURCE = re.compile(r"^`(\w+)/(\w+)`$")


def figures_table(text):
    """The rows of the table under ``## Figures``: lists of cells, header and rule left out."""
    section = text.split("\n## Figures\n", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    assert header == ["what", "suite/case", "nvmathx", "others"], header
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[2:]]


def figures(row):
    """``(suite, case, [(column, shown, unit), ...])`` of one row."""
    match = SOURCE.match(row[1])
    assert match, f"second cell names no suite/case: {row[1]!r}"
    return match.group(1), match.group(2), [m.groups() for m in FIGURE.finditer(" ".join(row[2:]))]


def agrees(shown, measured):
    """``shown`` is ``measured`` rounded to the digits ``shown`` has."""
    decimals = len(shown.partition(".")[2])
    return abs(float(shown) - measured) <= 0.5 * 10.0 ** -decimals * (1 + 1e-9)


ROWS = figures_table((ROOT / "README.md").read_text())


def test_the_table_has_a_row_per_area():
    suites = {figures(row)[0] for row in ROWS}
    assert {"matmul", "fft", "fft_callbacks", "device", "mlp", "distributed_ws1"} <= suites


@pytest.mark.parametrize("row", ROWS, ids=[row[1].strip("`") for row in ROWS])
def test_every_figure_is_the_json_it_names(row):
    suite, case_name, found = figures(row)
    assert found, f"no figure in {row}"
    assert all(column == "nvmathx" or column.startswith("nvmathx.") for column, _, _ in FIGURE.findall(row[2]))
    result = json.loads((RESULTS / f"{suite}.json").read_text())
    cases = {case["name"]: case for case in result["cases"]}
    assert case_name in cases, f"{suite}.json has no case {case_name}"
    case = cases[case_name]
    for column, shown, unit in found:
        assert UNITS[unit] == case["unit"], (column, unit, case["unit"])
        assert column in case["times"], f"{suite}/{case_name} has no column {column}"
        assert agrees(shown, case["times"][column]), (column, shown, case["times"][column])


@pytest.mark.parametrize(("shown", "measured", "expected"), [
    ("0.180", 0.18003, True), ("10.9", 10.855, True), ("1.52", 1.5168, True), ("498", 498.01, True),
    ("0.181", 0.18003, False), ("10.8", 10.855, False), ("12.98", 12.921, False), ("3", 3.6, False),
])
def test_agreement_is_to_the_digits_shown(shown, measured, expected):
    assert agrees(shown, measured) is expected


def test_a_changed_figure_is_caught():
    row = next(row for row in ROWS if row[1] == "`matmul/gemm_8192_fp8e4m3`")
    shown = FIGURE.search(row[2]).group(2)
    changed = f"{float(shown) * 0.95:.3f}"  # 5% off: beyond the rounding a figure may carry
    suite, case_name, found = figures([row[0], row[1], row[2].replace(shown, changed), row[3]])
    assert changed != shown
    case = next(c for c in json.loads((RESULTS / f"{suite}.json").read_text())["cases"] if c["name"] == case_name)
    assert not all(agrees(shown, case["times"][column]) for column, shown, _ in found)
