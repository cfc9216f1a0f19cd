"""The sparse @ dense example scripts run and check their own results (CPU here, and CUDA on a GPU)."""

import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("sparse_conjugate_gradient.py"))


def _run(script, *args, check=True):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, env=env, timeout=300)
    if check:
        assert done.returncode == 0, done.stdout + done.stderr
        assert "matches numpy" in done.stdout
    return done


def test_there_is_an_example():
    assert EXAMPLES


@pytest.mark.parametrize("script", EXAMPLES, ids=[path.name for path in EXAMPLES])
def test_example_on_cpu(script):
    _run(script)


@pytest.mark.gpu
@pytest.mark.parametrize("script", EXAMPLES, ids=[path.name for path in EXAMPLES])
def test_example_on_gpu(script):
    _run(script, "--execution", "cuda")


@pytest.mark.parametrize("script", EXAMPLES, ids=[path.name for path in EXAMPLES])
def test_example_asked_for_cuda_without_a_gpu_says_so(script):
    from nvmathx._bindings.cuda_driver import driver_available

    if driver_available():
        pytest.skip("this machine has a GPU")
    done = _run(script, "--execution", "cuda", check=False)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"{script.name}: execution: CUDA execution needs an NVIDIA GPU" in done.stderr
