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


def test_without_a_driver_the_first_line_says_so_in_words():
    run = subprocess.run([sys.executable, "-m", "nvmathx"], capture_output=True, text=True, timeout=600)
    if "\nGPU\n  no GPU: no NVIDIA driver" not in run.stdout:
        pytest.skip("a GPU driver is present")
    first = run.stdout.splitlines()[0]
    assert first.startswith("No NVIDIA GPU driver found: running the CPU demo.")
    assert "pip install nvmathx[cu13]" in first
    assert "Error" not in run.stdout.split("\nGPU\n", 1)[1].split("\n\n", 1)[0]  # no loader exception
    assert "..." not in run.stdout  # no line cut off mid-instruction
    assert "first call, ms" in run.stdout


def test_every_missing_piece_names_its_pip_package(monkeypatch):
    from nvmathx import LibraryNotFoundError
    from nvmathx._codegen import compilers
    from nvmathx._main import _short

    missing = LibraryNotFoundError("nccl", "nvidia-nccl-cu13 (or nvmathx[distributed])", "NVMATHX_NCCL_PATH")
    try:
        try:
            raise missing
        except LibraryNotFoundError as error:
            raise RuntimeError("cuBLASMp needs NCCL") from error
    except RuntimeError as wrapped:
        assert _short(wrapped) == "nccl not installed: pip install nvidia-nccl-cu13 (or nvmathx[distributed])"
    assert _short(ValueError("x")) == "ValueError: x"
    monkeypatch.setattr(compilers, "installed", lambda: [])
    assert compilers.report() == ["numba-cuda-mlir  not installed: pip install numba-cuda-mlir",
                                  "numba-cuda       not installed: pip install numba-cuda"]


def test_main_job_rejects_cuda_without_gpu():
    run = subprocess.run([sys.executable, "-m", "nvmathx", "--execution", "cuda"], capture_output=True, text=True)
    if "\nGPU\n  no GPU" not in run.stdout:
        pytest.skip("a GPU is present")
    assert run.returncode == 2 and "needs a GPU" in run.stdout


def test_main_job_prints_each_loaded_librarys_version_beside_its_path():
    run = subprocess.run([sys.executable, "-m", "nvmathx", "--execution", "cpu"], capture_output=True, text=True,
                         timeout=600)
    section = run.stdout.split("\nCUDA libraries\n", 1)[1].split("\n\n", 1)[0]
    from nvmathx._bindings import _loader

    for line in section.splitlines():
        name, rest = line.split(None, 1)
        if "not found" in rest:
            continue
        version = rest.split()[0]
        assert version == "version" or all(part.isdigit() for part in version.split(".")), line
        assert any(char in rest for char in "/[") and name in _loader.LIBRARIES


@pytest.mark.parametrize("name, version, outside", [
    ("mathdx", (0, 3, 1), False), ("mathdx", (0, 4, 2), False), ("mathdx", (0, 4, 1), True),
    ("mathdx", (0, 5, 0), True), ("nccl", (2, 28, 9), False), ("nccl", (2, 29, 7), False), ("nccl", (2, 27, 7), True),
    ("nccl", (3, 0, 0), True), ("cublasmp", (0, 7, 0), False), ("cublasmp", (0, 8, 1), True),
    ("nvrtc", (13, 5), False),  # no range of its own
])
def test_versions_outside_the_supported_range_are_said_plainly(name, version, outside):
    from nvmathx._main import version_text

    text = version_text(name, version)
    assert text.startswith(".".join(map(str, version)))
    assert ("OUTSIDE the supported range" in text) is outside
    if name == "mathdx" and outside:
        assert "0.3.1 or 0.4.2 and later 0.4 releases" in text


def test_an_unknown_version_is_said_so():
    from nvmathx._main import version_text

    assert version_text("cufft", None) == "version ?"


def test_library_version_reads_what_the_loaded_library_reports():
    from nvmathx._bindings import _loader

    assert _loader.library_version("not a library") is None
    try:
        _loader.load_library("mathdx")
    except Exception as error:  # noqa: BLE001
        pytest.skip(f"no libmathdx here: {error}")
    from nvmathx._bindings import mathdx

    assert _loader.library_version("mathdx") == mathdx.version()
