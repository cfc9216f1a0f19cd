"""The fft example scripts run and check their own results (CPU here; cuFFT where there is a GPU).

An example that cannot check anything without a GPU exits with status 77 and says SKIPPED; that is
accepted only on a machine without one."""

import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("fft_*.py"))
SKIPPED = 77


@pytest.mark.parametrize("script", EXAMPLES, ids=[path.name for path in EXAMPLES])
def test_example(script):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    from nvmathx._bindings.cuda_driver import driver_available

    if done.returncode == SKIPPED and not driver_available():
        assert done.stdout.startswith("SKIPPED: ") and "checked nothing" in done.stdout, done.stdout
        return
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok" in done.stdout and "SKIPPED" not in done.stdout


def test_there_are_examples():
    assert len(EXAMPLES) >= 2
