"""The main job: an environment report and a demo that checks every result against numpy.

Each area contributes demos through a ``DEMOS`` list in its ``_demo`` module (``nvmathx.linalg._demo``,
``nvmathx.fft._demo``); a demo is ``(name, run)`` where ``run(execution)`` returns
``(result, reference, relative_tolerance)`` as numpy arrays, for ``execution`` "cuda" or "cpu".
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import os
import platform
import time
from typing import Callable

import numpy as np

from ._bindings import cuda_driver
from ._bindings._loader import DISTRIBUTED_LIBRARIES, LIBRARIES, library_report, library_version, load_library
from ._codegen.compilers import report as compiler_report
from ._core.device import device_properties
from ._version import __version__

_PACKAGES = (
    "numpy", "scipy", "cuda-core", "cuda-bindings", "cuda-pathfinder", "ml_dtypes", "torch", "cupy-cuda13x",
    "cupy-cuda12x", "jax", "numba", "numba-cuda", "numba-cuda-mlir", "cffi", "nvmath-python", "nvidia-libmathdx-cu13",
    "nvidia-libmathdx-cu12",
)
_DEMO_MODULES = ("nvmathx._core._demo", "nvmathx.linalg._demo", "nvmathx.linalg._solver_demo", "nvmathx.fft._demo")


def supported_range(name: str) -> tuple[Callable[[tuple], bool], str] | None:
    """(test of a version tuple, the range in words) for the libraries nvmathx binds one range of."""
    from ._bindings import cublasmp, mathdx

    if name == "mathdx":
        return mathdx.is_supported_release, mathdx.SUPPORTED_TEXT
    if name == "nccl":
        low = cublasmp.MINIMUM_NCCL[cublasmp.SUPPORTED_MINOR]
        return (lambda version: low <= tuple(version) < (3,)), f"{'.'.join(map(str, low))} to < 3"
    if name == "cublasmp":
        minor = cublasmp.SUPPORTED_MINOR
        return (lambda version: tuple(version[:2]) == minor), f"{'.'.join(map(str, minor))}.x"
    return None


def version_text(name: str, version: tuple | None) -> str:
    """A library's version for the report, with a plain warning when nvmathx does not support it."""
    if version is None:
        return "version ?"
    text = ".".join(map(str, version))
    rule = supported_range(name)
    if rule is not None and not rule[0](version):
        return f"{text} OUTSIDE the supported range ({rule[1]}): nvmathx refuses it"
    return text


NO_DRIVER = ("No NVIDIA GPU driver found: running the CPU demo. For the GPU: install the driver, then "
             "`pip install nvmathx[cu13]`.")


def gpu_report() -> list[str]:
    """Lines describing the GPUs and driver, or why there are none. Never raises."""
    try:
        count = cuda_driver.device_count()
        version = cuda_driver.driver_version()
    except Exception as error:
        if "driver" in str(error).lower() or isinstance(error, (ImportError, OSError)):
            return ["no GPU: no NVIDIA driver (libcuda) on this machine"]
        return [f"no GPU: {_short(error)}"]
    if count == 0:
        return ["no GPU: the driver reports no device"]
    lines = [f"CUDA driver {version // 1000}.{version % 1000 // 10}, {count} device(s)"]
    for device_id in range(count):
        props = device_properties(device_id)
        major, minor = props["compute_capability"]
        lines.append(f"  GPU {device_id}: {props['name']} (sm_{major}{minor}, {props['multiprocessor_count']} SMs)")
    return lines


def distributed_report() -> list[str]:
    """What nvmathx.distributed would use: NCCL (through nccl4py), cuBLASMp and MPI; never raises,
    never initialises MPI or a communicator."""
    lines = []
    try:
        from ._bindings import nccl

        lines.append(f"NCCL      {version_text('nccl', tuple(nccl.version()))} "
                     f"(nccl4py {importlib.metadata.version('nccl4py')}) {load_library('nccl').path}")
    except Exception as error:  # noqa: BLE001  (a report, never fatal)
        lines.append(f"NCCL      not available: {_short(error)}")
    try:
        from ._bindings import cublasmp

        lines.append(f"cuBLASMp  {version_text('cublasmp', tuple(cublasmp.version()))} {load_library('cublasmp').path}")
    except Exception as error:  # noqa: BLE001
        lines.append(f"cuBLASMp  not available: {_short(error)}")
    try:
        lines.append(f"MPI       mpi4py {importlib.metadata.version('mpi4py')}")
    except importlib.metadata.PackageNotFoundError:
        lines.append("MPI       mpi4py not installed (torch.distributed groups work without it)")
    return lines


def cudss_report() -> str:
    """The cuDSS release that loads (nvmathx.sparse's direct solver) and what it offers, or why none
    loads; never raises."""
    try:
        from ._bindings import cudss

        dialect = cudss.dialect()
    except Exception as error:  # noqa: BLE001  (a report, never fatal)
        return f"cuDSS not available: {_short(error)}"
    extras = ("transposed solves, Bunch-Kaufman pivoting, NVRTC kernels" if dialect.jit_kernels
              else "no transposed solves")
    try:
        layer = cudss.threading_layer_path()
    except Exception:  # noqa: BLE001
        layer = None
    threads = f"threading layer {os.path.basename(layer)}" if layer else "no threading layer: single-threaded analysis"
    return f"cuDSS {'.'.join(map(str, dialect.release))} ({dialect.soname}: {extras}; {threads})"


def _short(error) -> str:
    """An error in words for the report: what to install where a library is missing (never a message
    cut off mid-instruction), else the error itself."""
    from ._core.errors import LibraryNotFoundError

    cause = error
    while cause is not None and not isinstance(cause, LibraryNotFoundError):
        cause = cause.__cause__ or cause.__context__
    if cause is not None:
        return f"{cause.library} not installed: pip install {cause.pip_package}"
    return f"{type(error).__name__}: {error}"


def package_report() -> list[tuple[str, str]]:
    rows = []
    for name in _PACKAGES:
        try:
            rows.append((name, importlib.metadata.version(name)))
        except importlib.metadata.PackageNotFoundError:
            continue
    return rows


def _demos():
    for module_name in _DEMO_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as error:
            if error.name and module_name.startswith(error.name):  # that area is not in this build
                continue
            raise
        yield from module.DEMOS


def run_demos(execution: str) -> list[tuple[str, str, float, float, float]]:
    """(name, status, relative error, tolerance, milliseconds) for each demo."""
    rows = []
    for name, run in _demos():
        start = time.perf_counter()
        try:
            result, reference, tolerance = run(execution)
        except Exception as error:
            if getattr(error, "demo_skip", False):
                rows.append((name, f"skipped: {error}", float("nan"), float("nan"), 0.0))
                continue
            rows.append((name, f"FAILED: {type(error).__name__}: {error}", float("nan"), float("nan"), 0.0))
            continue
        elapsed = (time.perf_counter() - start) * 1e3
        try:
            relative = _relative_error(result, reference)
        except Exception as failure:  # a demo returned something that is not an array
            rows.append((name, f"FAILED: {type(failure).__name__}: {failure}", float("nan"), float("nan"), elapsed))
            continue
        status = "ok" if relative <= tolerance else "MISMATCH"
        rows.append((name, status, relative, tolerance, elapsed))
    return rows


def _relative_error(result, reference) -> float:
    result = np.asarray(result, dtype=np.complex128 if np.iscomplexobj(reference) else np.float64)
    reference = np.asarray(reference, dtype=result.dtype)
    if result.shape != reference.shape:
        return float("inf")
    scale = np.linalg.norm(reference.ravel()) or 1.0
    return float(np.linalg.norm((result - reference).ravel()) / scale)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m nvmathx", description=__doc__)
    parser.add_argument("--execution", choices=("auto", "cuda", "cpu"), default="auto",
                        help="where the demo runs (auto: the GPU when there is one)")
    args = parser.parse_args(argv)

    gpu_lines = gpu_report()
    if gpu_lines[0].startswith("no GPU: no NVIDIA driver"):
        print(NO_DRIVER)
    print(f"nvmathx {__version__} on Python {platform.python_version()} ({platform.machine()})")
    print("\nGPU")
    for line in gpu_lines:
        print(f"  {line}")
    has_gpu = not gpu_lines[0].startswith("no GPU")

    print("\nCUDA libraries")
    for name, where, how in library_report([name for name in LIBRARIES if name not in DISTRIBUTED_LIBRARIES]):
        version = version_text(name, library_version(name)) if where != "not found" else ""
        print(f"  {name:<10} {version:<8} {where}  [{how}]")
    print("\nSparse direct solver (nvmathx.sparse)")
    print(f"  {cudss_report()}")
    print("\nNumba compilers (nvmathx.device_api)")
    for line in compiler_report():
        print(f"  {line}")
    print("\nDistributed (nvmathx.distributed)")
    for line in distributed_report():
        print(f"  {line}")
    print("\nPackages")
    for name, version in package_report():
        print(f"  {name:<24} {version}")

    execution = args.execution if args.execution != "auto" else ("cuda" if has_gpu else "cpu")
    if execution == "cuda" and not has_gpu:
        print("\n--execution cuda needs a GPU")
        return 2
    print(f"\nDemo ({execution} execution space), each result checked against numpy")
    rows = run_demos(execution)
    print(f"  {'demo':<34} {'status':<10} {'rel. error':>11} {'tolerance':>10} {'first call, ms':>15}")
    for name, status, error, tolerance, elapsed in rows:
        print(f"  {name:<34} {status:<10} {error:>11.2e} {tolerance:>10.0e} {elapsed:>15.1f}")
    failed = [row for row in rows if row[1] not in ("ok",) and not row[1].startswith("skipped")]
    print(f"\n{len(rows) - len(failed)} of {len(rows)} demos passed")
    return 1 if failed else 0
