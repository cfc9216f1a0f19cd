"""The smoke suite: its declarations on CPU, and a quick real run on a GPU."""

import json
import sys

import pytest

from benchmarks import Context
from benchmarks._cli import main
from benchmarks._report import validate_result
from benchmarks.suites import smoke


def test_cases_declare_without_importing_peers():
    before = {name for name in sys.modules if name.split(".")[0] in ("cupy", "nvmath")}
    cases = smoke.cases(Context(quick=True))
    after = {name for name in sys.modules if name.split(".")[0] in ("cupy", "nvmath")}
    assert after == before
    names = [case.name for case in cases]
    assert len(names) == len(set(names))
    assert {"view_operand_torch", "view_operand_cupy", "resolve_stream_torch", "resolve_stream_default",
            "copy_64MiB_d2d", "import_time"} == set(names)
    assert all(case.gpu and "nvmathx" in case.setups for case in cases)


def test_full_size_copy_is_one_gib():
    (copy,) = [case for case in smoke.cases(Context()) if case.name.startswith("copy_")]
    assert copy.name == "copy_1GiB_d2d" and copy.params["nbytes"] == 1 << 30
    assert copy.unit == "ms" and copy.derive.unit == "TB/s"


@pytest.mark.gpu
def test_smoke_quick_run_on_gpu(tmp_path):
    out = tmp_path / "results"
    argv = ["smoke", "--quick", "--no-plot", "--out", str(out),
            "--case", "view_*", "--case", "resolve_*", "--case", "copy_*"]
    assert main(argv) == 0  # non-zero means an nvmathx column failed
    with open(out / "smoke.json") as file:
        result = json.load(file)
    validate_result(result)
    assert result["device"] != "cpu"
    by_name = {case["name"]: case for case in result["cases"]}
    assert set(by_name) == {"view_operand_torch", "view_operand_cupy", "resolve_stream_torch",
                            "resolve_stream_default", "copy_64MiB_d2d"}
    for case in by_name.values():
        assert case["times"]["nvmathx"] > 0, case
    copy = by_name["copy_64MiB_d2d"]
    assert 0.05 < copy["derived"]["nvmathx"] < 20  # TB/s: a real copy, neither missed nor impossible


@pytest.mark.gpu
def test_gpu_time_scales_with_work_on_torch_current_stream():
    torch = pytest.importorskip("torch")
    from benchmarks import gpu_time_ms

    def copier(nbytes):
        src = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
        dst = torch.empty_like(src)
        return lambda: dst.copy_(src)

    small = gpu_time_ms(copier(256 << 20), warmup=3, repeats=10)
    large = gpu_time_ms(copier(512 << 20), warmup=3, repeats=10)
    assert small > 0.02  # events saw the copy (about 0.1 ms on an H100/H200)
    assert 1.5 < large / small < 2.5
