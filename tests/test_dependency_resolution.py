"""nvmathx's extras resolve beside nvmath-python 1.0.1 and beside torch 2.13's CUDA 13 wheel.

``uv pip compile`` resolves from PyPI's metadata alone (no wheel is downloaded or installed; a few
seconds). It needs the network, so it runs where ``NVMATHX_RESOLVE_DEPENDENCIES=1`` is set (.ci/run
sets it) and is skipped in a developer's plain ``pytest``. A resolution that fails fails the test
with the resolver's own message.

The platform is named (Linux x86-64, manylinux 2.28, Python 3.12): PyPI's ``torch==2.13.0`` for it
is the CUDA 13 build, which pins ``nvidia-nccl-cu13==2.29.7``; on a machine with the CPU build
installed a plain resolution would never meet that pin.
"""

import os
import pathlib
import re
import shutil
import subprocess
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PLATFORM = ("--python-platform", "x86_64-manylinux_2_28", "--python-version", "3.12")
TORCH_CUDA13_NCCL = "2.29.7"  # what torch 2.13.0's CUDA 13 wheel pins

pytestmark = pytest.mark.skipif(
    os.environ.get("NVMATHX_RESOLVE_DEPENDENCIES") != "1",
    reason="needs the network (PyPI): set NVMATHX_RESOLVE_DEPENDENCIES=1 (.ci/run does)",
)


def _resolve(tmp_path, *requirements) -> dict:
    """``{name: version}`` of uv's resolution of ``requirements``; fails with uv's message."""
    uv = shutil.which("uv")
    assert uv, "uv is not installed (pip install uv)"
    source = tmp_path / "requirements.in"
    source.write_text("\n".join(requirements) + "\n")
    environment = dict(os.environ, UV_PYTHON_DOWNLOADS="never")
    start = time.perf_counter()
    run = subprocess.run([uv, "pip", "compile", str(source), *PLATFORM, "--default-index", "https://pypi.org/simple",
                          "--no-header", "--no-annotate", "--quiet"],
                         capture_output=True, text=True, env=environment, timeout=300)
    elapsed = time.perf_counter() - start
    assert run.returncode == 0, f"{' + '.join(requirements)} does not resolve:\n{run.stderr}"
    assert elapsed < 120, f"resolving took {elapsed:.0f} s"
    pins = {}
    for line in run.stdout.splitlines():
        match = re.match(r"^([A-Za-z0-9_.\-]+)==(\S+)", line)
        if match:
            pins[match[1].lower().replace("_", "-")] = match[2]
    return pins


def _nvmathx(extras: str) -> str:
    return f"nvmathx[{extras}] @ {ROOT.as_uri()}"


def test_device_and_distributed_resolve_beside_nvmath_python(tmp_path):
    pins = _resolve(tmp_path, _nvmathx("device,distributed"), "nvmath-python[cu13,cu13-dx]==1.0.1")
    assert pins["nvmath-python"] == "1.0.1"
    assert pins["nvidia-libmathdx-cu13"].startswith("0.4."), pins["nvidia-libmathdx-cu13"]


def test_cu13_device_and_distributed_resolve_beside_torch_cuda13(tmp_path):
    pins = _resolve(tmp_path, _nvmathx("cu13,device,distributed"), "torch==2.13.0")
    assert pins["torch"] == "2.13.0"
    # the CUDA build was resolved (the CPU build pins no NCCL), and NCCL is torch's pin
    assert pins["nvidia-nccl-cu13"] == TORCH_CUDA13_NCCL
    assert "nccl4py" in pins and "nvidia-cublasmp-cu13" in pins
