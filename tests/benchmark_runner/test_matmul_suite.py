"""The matmul suite's case list and its autotune-restart case's bookkeeping (no GPU needed)."""

from benchmarks import Context
from benchmarks.suites import matmul


def test_the_decode_shapes_and_the_restart_case_are_in_the_suite():
    names = {case.name for case in matmul.cases(Context(has_gpu=False))}
    assert {"gemm_1x8192x8192_bf16", "gemm_16x8192x8192_bf16", "gemm_64x8192x8192_bf16", "gemm_128x8192x8192_bf16",
            "gemm_256x8192x8192_bf16", "gemm_16x14336x4096_bf16", "autotune_restart_8192_bf16"} <= names


def test_the_restart_case_times_a_first_and_a_second_process_over_one_cache(monkeypatch):
    calls = []

    def fake_process(folder, n):
        calls.append(folder)
        return {"seconds": 10.0 if calls.count(folder) == 1 else 0.001, "kernel_ms": 2.5}

    monkeypatch.setattr(matmul, "_autotune_process", fake_process)
    case = matmul._autotune_restart_case(Context(has_gpu=False))
    assert case.unit == "s" and set(case.setups) == {"nvmathx.first_process", "nvmathx.second_process"}
    assert case.setups["nvmathx.first_process"]()() == 10.0
    second = case.setups["nvmathx.second_process"]()
    assert second() == 0.001 and calls[-1] == calls[-2]  # the timed process reads what the untimed one wrote
    assert case.params["kernel_ms"] == {"nvmathx.first_process": 2.5, "nvmathx.second_process": 2.5}
