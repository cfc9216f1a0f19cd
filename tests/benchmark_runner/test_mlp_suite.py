"""The mlp suite: its declarations on CPU, and a quick real run on a GPU."""

import importlib.util
import json
import sys

import pytest

from benchmarks import Context
from benchmarks._cli import main
from benchmarks._report import validate_result
from benchmarks.suites import mlp

COLUMNS = {"nvmathx", "nvmathx.autotuned", "torch", "torch.compile", "torch.gemm_only", "nvmathx.fp8",
           "nvmathx.graphed", "torch.graphed", "nvmathx.fp8.graphed", "torchao.float8"}


def test_cases_declare_without_importing_torch():
    before = "torch" in sys.modules
    cases = mlp.cases(Context())
    assert ("torch" in sys.modules) == before
    assert [case.name for case in cases] == ["mlp_fwd_bwd_16384x1024x4096_bf16", "mlp_fwd_bwd_32768x768x3072_bf16",
                                             "mlp_fwd_bwd_8192x4096x16384_bf16"]
    for case in cases:
        assert set(case.setups) == COLUMNS and case.unit == "ms" and case.gpu
        assert case.params["peak_bytes"] == {} and case.params["retained_bytes"] == {}
        flops = 12 * case.params["tokens"] * case.params["d_model"] * case.params["hidden"]
        assert case.derive(1.0) == pytest.approx(flops / 1e9)  # TFLOP/s at 1 ms


@pytest.mark.gpu
def test_mlp_quick_run_on_gpu(tmp_path):
    pytest.importorskip("torch")
    out = tmp_path / "results"
    assert main(["mlp", "--quick", "--no-plot", "--out", str(out), "--case", "mlp_fwd_bwd_2048x*"]) == 0
    with open(out / "mlp.json") as file:
        result = json.load(file)
    validate_result(result)
    (case,) = result["cases"]
    ran = COLUMNS - ({"torchao.float8"} if importlib.util.find_spec("torchao") is None else set())
    assert set(case["times"]) == ran and all(time > 0 for time in case["times"].values()), case
    assert set(case["params"]["peak_bytes"]) == ran and all(b > 0 for b in case["params"]["peak_bytes"].values())
    assert set(case["params"]["host_us"]) == ran - {"torch.gemm_only"}
