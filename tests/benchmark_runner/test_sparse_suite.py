"""The sparse suite: its sparse @ dense declarations on CPU (the solver's are tested in
test_sparse_solver_cases.py), and a quick real run on a GPU."""

import json
import sys

import pytest

from benchmarks import Context
from benchmarks._cli import main
from benchmarks._report import validate_result
from benchmarks.suites import _sparse_solver_cases, sparse

PRODUCTS = ["spmm_poisson2d_1e6x64_f32", "spmm_poisson3d_1e6x16_f64", "spmv_poisson3d_1e6_f64",
            "spmv_poisson2d_1e6_f32"]
COLUMNS = {"nvmathx", "nvmathx.function", "torch", "cupy"}


def test_cases_declare_without_importing_torch():
    before = "torch" in sys.modules
    cases = sparse.cases(Context())
    assert ("torch" in sys.modules) == before
    names = [case.name for case in cases]
    assert names[:5] == PRODUCTS + ["overhead_spmv_stateful_1e4_f32"]
    assert names[5:] == [case.name for case in _sparse_solver_cases.solver_cases(Context())]
    for case in cases[:5]:
        assert set(case.setups) == COLUMNS and case.gpu
    assert [case.unit for case in cases[:5]] == ["ms"] * 4 + ["us_per_call"]


@pytest.mark.parametrize("name, build, grid", [("spmm_poisson2d_1e6x64_f32", _sparse_solver_cases.poisson2d, 1000),
                                               ("spmv_poisson3d_1e6_f64", _sparse_solver_cases.poisson3d, 100)])
def test_declared_sizes_match_the_generated_matrices(name, build, grid):
    case = next(case for case in sparse.matmul_cases(Context()) if case.name == name)
    assert case.params["rows"] == 10**6 and case.params["grid"] == grid
    small = build(6)  # the entry count formula, checked on a small grid
    dims = 3 if build is _sparse_solver_cases.poisson3d else 2
    assert small.nnz == (2 * dims + 1) * 6**dims - 2 * dims * 6 ** (dims - 1)


def test_quick_sizes():
    quick = Context()
    quick.quick = True
    sizes = {case.name: case.params["rows"] for case in sparse.matmul_cases(quick)}
    assert sizes["spmm_poisson2d_1e6x64_f32"] == 100**2 and sizes["spmm_poisson3d_1e6x16_f64"] == 20**3


@pytest.mark.gpu
def test_sparse_quick_run_on_gpu(tmp_path):
    pytest.importorskip("torch")
    out = tmp_path / "results"
    assert main(["sparse", "--quick", "--no-plot", "--out", str(out), "--case", "spm*_poisson2d_*",
                 "--case", "overhead_*"]) == 0
    with open(out / "sparse.json") as file:
        result = json.load(file)
    validate_result(result)
    assert {case["name"] for case in result["cases"]} == {"spmm_poisson2d_1e6x64_f32", "spmv_poisson2d_1e6_f32",
                                                          "overhead_spmv_stateful_1e4_f32"}
    for case in result["cases"]:
        assert case["times"]["nvmathx"] > 0 and case["times"]["nvmathx.function"] > 0, case
