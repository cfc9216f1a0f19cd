"""The device suite's first-launch timing: what a fresh interpreter reports, and nvmathx's share
counted from the end of the compiler's import (no GPU needed)."""

import os

import pytest

from benchmarks.suites import device


def test_run_script_reports_start_to_launch_and_after_import(monkeypatch):
    monkeypatch.setitem(device._COMPILERS, "fake", "import time\ntime.sleep(0.3)")  # a slow "import"
    launch = device._run_script("fake", "time.sleep(0.2)\n", dict(os.environ))
    assert launch.seconds >= 0.5
    assert 0.2 <= launch.after_import_seconds < launch.seconds - 0.25


def test_run_script_without_its_report_raises(monkeypatch):
    monkeypatch.setitem(device._COMPILERS, "fake", "import os")
    with pytest.raises(RuntimeError, match="did not report"):
        device._run_script("fake", "os._exit(0)\n", dict(os.environ))


def test_share_is_the_median_of_paired_differences_after_import(monkeypatch):
    # the compiler's import varies (first field minus second) by far more than the share
    plain = iter([device.Launch(5.0, 0.50), device.Launch(7.0, 0.55), device.Launch(4.0, 0.45)])
    fused = iter([device.Launch(4.2, 0.80), device.Launch(6.9, 0.90), device.Launch(5.5, 0.70)])
    monkeypatch.setattr(device, "_compiler", lambda column: None)
    monkeypatch.setattr(device, "_run_script", lambda column, script, environment: next(plain))
    params = {}
    device._measure_compiler_alone("nvmathx", params, paired_with=lambda: next(fused), runs=3)
    assert params["compiler_first_launch_s"] == {"nvmathx": 5.0}
    assert params["nvmathx_share_s"]["nvmathx"] == pytest.approx(0.30)


def test_timed_calls_return_whole_seconds():
    assert device._seconds(lambda: device.Launch(1.5, 0.25))() == 1.5
