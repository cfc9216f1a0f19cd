"""The main job and the import contract."""

import subprocess
import sys

import pytest


def test_import_is_light_and_fast():
    code = (
        "import sys, time; t = time.perf_counter(); import nvmathx; elapsed = time.perf_counter() - t; "
        "heavy = sorted(m for m in ('torch', 'cupy', 'jax', 'numba', 'cuda.core', 'cffi') if m in sys.modules); "
        "print(elapsed, heavy)"
    )
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    output = completed.stdout.split(" ", 1)
    assert float(output[0]) < 0.5
    assert output[1].strip() == "[]"


def test_main_job_reports_and_runs_the_demo():
    run = subprocess.run([sys.executable, "-m", "nvmathx"], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    for heading in ("GPU", "CUDA libraries", "Packages", "Demo ("):
        assert heading in run.stdout
    assert "demos passed" in run.stdout


def test_main_job_rejects_cuda_without_gpu():
    run = subprocess.run([sys.executable, "-m", "nvmathx", "--execution", "cuda"], capture_output=True, text=True)
    if "\nGPU\n  no GPU" not in run.stdout:
        pytest.skip("a GPU is present")
    assert run.returncode == 2 and "needs a GPU" in run.stdout
