"""examples/train_mlp.py trains with nvmathx.torch layers and with torch's and checks that the
losses agree (CPU here, cuBLASLt on a GPU)."""

import os
import pathlib
import subprocess
import sys

import pytest

pytest.importorskip("torch")

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "examples" / "train_mlp.py"


def _run(*args, expect="losses agree within bfloat16 tolerance"):
    root = str(SCRIPT.parents[1])
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=600,
                          check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert expect in done.stdout


def test_train_mlp_on_cpu():
    _run("--device", "cpu", "--steps", "200")


@pytest.mark.gpu
def test_train_mlp_on_gpu():
    _run("--device", "cuda")


def test_train_mlp_fp8_runs_unquantised_on_cpu():
    _run("--device", "cpu", "--steps", "200", "--fp8", expect="float8 final loss within 2% of bfloat16")


@pytest.mark.gpu
def test_train_mlp_fp8_on_gpu():
    """A few hundred float8 steps end within 2% of the bfloat16 run's loss."""
    _run("--device", "cuda", "--fp8", expect="float8 final loss within 2% of bfloat16")
