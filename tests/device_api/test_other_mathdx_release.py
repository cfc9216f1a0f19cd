"""Descriptors, traits, code generation and kernel compilation against a second libmathdx release.

The GPU machine runs libmathdx 0.3.1 while development machines may have 0.4.x; the releases
differ in what they require (0.3.1 refuses every cuFFTDx trait query without the API operator).
Set ``NVMATHX_TEST_OTHER_MATHDX`` to another release's ``libmathdx.so.0`` (e.g. from
``pip download --no-deps nvidia-libmathdx-cu13==0.3.1.9``, unzipped) to run a subset of the
device_api and binding tests (about a minute) in a subprocess that loads it.
"""

import os
import subprocess
import sys

import pytest

OTHER = os.environ.get("NVMATHX_TEST_OTHER_MATHDX", "")

pytestmark = pytest.mark.skipif(not OTHER, reason="NVMATHX_TEST_OTHER_MATHDX names no second libmathdx release")

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_TESTS = [
    "tests/bindings/test_mathdx.py",
    "tests/device_api/test_fft_descriptor.py",
    "tests/device_api/test_codegen.py",
    "tests/device_api/test_kernel_compile.py",
]


def _run(arguments):
    path = os.pathsep.join(p for p in (_ROOT, os.environ.get("PYTHONPATH", "")) if p)
    env = dict(os.environ, NVMATHX_MATHDX_PATH=OTHER, PYTHONPATH=path)
    env.pop("NVMATHX_TEST_OTHER_MATHDX")
    return subprocess.run([sys.executable, *arguments], cwd=_ROOT, env=env, capture_output=True, text=True, timeout=900)


def test_the_other_release_is_the_one_loaded():
    code = "from nvmathx._bindings import mathdx; print(*mathdx.version()); print(mathdx.load_library('mathdx').path)"
    result = _run(["-c", code])
    assert result.returncode == 0, result.stderr
    version, path = result.stdout.split("\n")[:2]
    assert os.path.samefile(path, OTHER)
    assert tuple(map(int, version.split())) >= (0, 3, 0)


def test_descriptor_tests_pass_on_the_other_release():
    result = _run(["-m", "pytest", "-q", "-p", "no:cacheprovider", *_TESTS])
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert " passed" in result.stdout.splitlines()[-1]


def test_traits_of_a_1024_point_block_fft_on_the_other_release():
    script = (
        "import numpy as np\n"
        "from nvmathx._bindings import mathdx\n"
        "from nvmathx.device_api import FFT\n"
        "f = FFT(1024, np.float32, direction='forward', elements_per_thread=8, ffts_per_block=2, sm=(9, 0))\n"
        "print(mathdx.version()[:2], f.block_dim, f.storage_size, f.stride, f.shared_memory_size)\n"
    )
    result = _run(["-c", script])
    assert result.returncode == 0, result.stderr
    version, rest = result.stdout.strip().split(") ", 1)
    # 0.3.1 (cuFFTDx 1.6.1) reports 16384 bytes; 0.4.x (newer cuFFTDx) pads its scratch differently.
    expected_shared = "16384" if version == "(0, 3" else ""
    assert rest.startswith("(128, 2, 1) 8 128 ")
    assert rest.endswith(expected_shared) and int(rest.split()[-1]) >= 8192
