"""No test folder may shadow an importable package.

pytest puts ``tests/`` on ``sys.path`` (``pythonpath`` in pyproject.toml), so a folder there named
like a package becomes importable under that name: ``tests/torch`` once made
``pytest.importorskip("torch")`` succeed where torch was not installed, and the next import failed.
"""

import importlib.util
import pathlib
import subprocess
import sys

TESTS = pathlib.Path(__file__).parent

# Optional packages that tests import or skip on: shadowing them is wrong even where they are absent.
OPTIONAL_PACKAGES = {"torch", "cupy", "jax", "numba", "numba_cuda_mlir", "mpi4py", "nccl4py", "ml_dtypes",
                     "matplotlib", "nvmath", "cffi", "benchmarks", "nvmathx", "scipy", "numpy", "cuda"}


def _folders():
    return sorted(p.name for p in TESTS.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))


def test_no_folder_is_named_like_an_optional_package():
    assert not set(_folders()) & OPTIONAL_PACKAGES


def test_no_folder_is_named_like_an_installed_package():
    # Looked up in a child process whose path lacks tests/, as a user's interpreter would see it.
    code = ("import importlib.util, sys; names = sys.argv[1:]; "
            "print(' '.join(n for n in names if importlib.util.find_spec(n) is not None))")
    shadowed = subprocess.run([sys.executable, "-c", code, *_folders()], cwd="/", capture_output=True, text=True,
                              check=True).stdout.split()
    assert shadowed == []


def test_the_helpers_are_found_here():
    assert importlib.util.find_spec("helpers").origin.startswith(str(TESTS))
