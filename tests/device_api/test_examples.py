"""The device examples run: on a GPU they check themselves against numpy; without one they say SKIPPED and
exit with status 77 (nothing was checked)."""

import os
import subprocess
import sys

import pytest

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")
NAMES = ["device_fft_convolution.py", "device_block_gemm.py"]


def _run(name):
    return subprocess.run([sys.executable, os.path.join(EXAMPLES, name)], capture_output=True, text=True, timeout=900)


@pytest.mark.gpu
@pytest.mark.parametrize("name", NAMES)
def test_example_passes_on_a_gpu(name):
    result = _run(name)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "relative error" in result.stdout


@pytest.mark.parametrize("name", NAMES)
def test_example_exits_cleanly(name):
    result = _run(name)
    try:
        from numba import cuda
    except ImportError:  # no numba (a [test]-only install): the example says it cannot run
        cuda = None
    if cuda is None or not cuda.is_available():
        assert result.returncode == 77, result.stdout + result.stderr
        assert result.stdout.startswith("SKIPPED: ") and "needs an NVIDIA GPU" in result.stdout
    else:
        assert result.returncode == 0, result.stdout + result.stderr
