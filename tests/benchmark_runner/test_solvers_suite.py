"""The solvers suite: its case list and columns on CPU, and a quick real run on a GPU."""

import json
import sys

import pytest

from benchmarks import Context
from benchmarks._cli import main
from benchmarks._report import validate_result
from benchmarks.suites import solvers

NAMES = [
    "solve_lu_8192_f64_rhs1", "solve_lu_8192_f64_rhs64", "solve_lu_16384_f32_rhs1", "solve_lu_16384_f32_rhs64",
    "solve_spd_batched_65536x32_f32", "solve_lu_batched_65536x64_f64", "solve_lu_batched_16384x16_f32",
    "solve_refactor_4096_f64", "overhead_solve_stateful_64_f32", "overhead_solve_function_64_f32",
]


def test_cases_declare_without_importing_torch():
    before = "torch" in sys.modules
    cases = solvers.cases(Context())
    assert ("torch" in sys.modules) == before
    assert [case.name for case in cases] == NAMES
    for case in cases:
        assert case.gpu and case.setups["nvmathx"] and "torch" in case.setups
        if case.unit == "ms":
            assert case.params["peak_bytes"] == {} and "nvmathx.nocheck" in case.setups
        else:
            assert case.unit == "us_per_call"
    lu = {case.name: case for case in cases}
    assert set(lu["solve_lu_8192_f64_rhs1"].setups) == {"nvmathx", "nvmathx.nocheck", "torch", "cupy",
                                                        "nvmath-python"}
    assert lu["solve_lu_16384_f32_rhs64"].params == {"n": 16384, "nrhs": 64, "batch": 1, "dtype": "float32",
                                                     "structure": "general", "peak_bytes": {}}
    assert lu["solve_spd_batched_65536x32_f32"].params["structure"] == "positive definite"
    for name in ("solve_spd_batched_65536x32_f32", "solve_lu_batched_65536x64_f64", "solve_lu_batched_16384x16_f32"):
        assert {"nvmathx.fused", "nvmathx.batched"} <= set(lu[name].setups)


def test_quick_cases_are_smaller():
    names = [case.name for case in solvers.cases(Context(quick=True))]
    assert "solve_lu_1024_f64_rhs1" in names and "solve_spd_batched_4096x32_f32" in names
    assert "solve_refactor_512_f64" in names


@pytest.mark.gpu
def test_solvers_quick_run_on_gpu(tmp_path):
    pytest.importorskip("torch")
    out = tmp_path / "results"
    assert main(["solvers", "--quick", "--no-plot", "--out", str(out), "--case", "solve_lu_batched_*"]) == 0
    with open(out / "solvers.json") as file:
        result = json.load(file)
    validate_result(result)
    for case in result["cases"]:
        assert {"nvmathx", "nvmathx.nocheck", "torch"} <= set(case["times"]), case
        assert all(time > 0 for time in case["times"].values())
        assert {"nvmathx", "torch"} <= set(case["params"]["peak_bytes"])
