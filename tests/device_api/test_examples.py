"""The device examples run under each Numba compiler: on a GPU they check themselves against numpy;
without one they say SKIPPED and exit with status 77 (nothing was checked).

An example takes numba-cuda-mlir when it imports, else numba-cuda; the numba-cuda run hides
numba-cuda-mlir from the example's process, as an installation without it would.
"""

import os
import subprocess
import sys

import pytest

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")
NAMES = ["device_fft_convolution.py", "device_block_gemm.py", "device_random_option_pricer.py",
         "device_batched_cholesky.py"]

_RUN_WITHOUT_MLIR = (
    "import runpy, sys; sys.modules['numba_cuda_mlir'] = None; sys.argv = sys.argv[1:]; "
    "runpy.run_path(sys.argv[0], run_name='__main__')"
)


def _run(name, compiler):
    path = os.path.join(EXAMPLES, name)
    if compiler.name == "numba-cuda-mlir":
        command = [sys.executable, path]
    else:
        command = [sys.executable, "-c", _RUN_WITHOUT_MLIR, path]
    return subprocess.run(command, capture_output=True, text=True, timeout=900)


@pytest.mark.gpu
@pytest.mark.parametrize("name", NAMES)
def test_example_passes_on_a_gpu(name, compiler):
    result = _run(name, compiler)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "relative error" in result.stdout


@pytest.mark.parametrize("name", NAMES)
def test_example_exits_cleanly(name, compiler):
    result = _run(name, compiler)
    if not compiler.cuda.is_available():
        assert result.returncode == 77, result.stdout + result.stderr
        assert result.stdout.startswith("SKIPPED: ") and "needs an NVIDIA GPU" in result.stdout
    else:
        assert result.returncode == 0, result.stdout + result.stderr
