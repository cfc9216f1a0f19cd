"""The public surface is pinned: renaming or adding a public name is a deliberate act."""

import importlib
import pkgutil

import pytest

import nvmathx

TOP_LEVEL = {
    "__version__", "ExecutionCUDA", "ExecutionCPU", "NvmathxError", "LibraryNotFoundError", "CudaLibraryError",
    "OperandError", "UnsupportedOperandError", "UnsupportedLayoutError", "OptionsError", "InvalidStateError",
    "DeviceUnavailableError", "SingularMatrixError", "CommunicationError", "linalg", "fft", "sparse", "device_api",
    "distributed", "typing", "autotune_cache",
    "CacheInfo", "cache_dir", "cache_info", "clear_cache", "set_cache_dir",
}

# Public (non-underscore) modules allowed anywhere in the package.
PUBLIC_MODULES = {"nvmathx", "nvmathx.linalg", "nvmathx.fft", "nvmathx.sparse", "nvmathx.device_api",
                  "nvmathx.typing", "nvmathx.torch", "nvmathx.distributed", "nvmathx.distributed.fft",
                  "nvmathx.distributed.linalg", "nvmathx.autotune_cache"}


def test_top_level_all_is_pinned():
    assert set(nvmathx.__all__) == TOP_LEVEL


@pytest.mark.parametrize("name", sorted(TOP_LEVEL - {"__version__"}))
def test_top_level_names_resolve_and_are_documented(name):
    try:
        value = getattr(nvmathx, name)
    except ImportError as error:  # an area not in this build
        pytest.skip(str(error))
    assert (value.__doc__ or "").strip(), f"{name} has no docstring"


def test_no_unexpected_public_modules():
    found = set()
    for info in pkgutil.walk_packages(nvmathx.__path__, "nvmathx."):
        parts = info.name.split(".")
        if not any(part.startswith("_") for part in parts[1:]):
            found.add(info.name)
    assert found <= PUBLIC_MODULES, f"unexpected public modules: {sorted(found - PUBLIC_MODULES)}"


@pytest.mark.parametrize("module_name", sorted(PUBLIC_MODULES))
def test_every_listed_name_resolves(module_name):
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        pytest.skip(f"{module_name} not in this build ({error})")
    for name in getattr(module, "__all__", []):
        try:
            getattr(module, name)
        except ModuleNotFoundError:  # a lazily imported area not in this build
            continue
        except AttributeError:
            pytest.fail(f"{module_name}.{name} is listed but missing")


def test_typing_names():
    from nvmathx import typing

    assert set(typing.__all__) == {"CudaStreamProtocol", "StreamLike", "SupportsDLPack", "SupportsCudaArrayInterface",
                                   "SupportsArrayInterface", "HostArrayLike", "ArrayLike", "ArrayT", "NumpyArrayT",
                                   "SparseArrayLike", "AnyArray", "ExecutionLike", "OptionsLike"}


def test_sparse_names():
    from nvmathx import sparse

    assert set(sparse.__all__) == {"Matmul", "matmul", "MatmulOptions", "plan_cache", "plan_key", "DirectSolver",
                                   "DirectSolverOptions", "FactorizationInfo", "spsolve", "spsolve_plan_key",
                                   "spsolve_plan_cache"}


def test_torch_names():
    pytest.importorskip("torch")
    from nvmathx import torch as nvmathx_torch

    assert set(nvmathx_torch.__all__) == {"Float8Recipe", "Float8State", "FusedLinear", "FusedMLP", "fused_linear",
                                          "fused_mlp", "set_autotune"}
    for name in nvmathx_torch.__all__:
        assert (getattr(nvmathx_torch, name).__doc__ or "").strip(), name



def test_the_code_cache_is_one_library_wide_service(tmp_path):
    """fft's compiled callbacks and device_api's code share one on-disk cache: nvmathx.clear_cache and the
    rest are device_api's functions, reachable without naming device_api."""
    import nvmathx.device_api
    from nvmathx._codegen import cache as _cache

    for name in ("CacheInfo", "cache_dir", "cache_info", "clear_cache", "set_cache_dir"):
        assert getattr(nvmathx, name) is getattr(nvmathx.device_api, name), name
        assert name in dir(nvmathx)
    nvmathx.set_cache_dir(tmp_path)
    try:
        _cache.store({"kind": "fft-callback", "function": "f"}, _cache.CodeEntry("symbol", b"ltoir"))
        assert nvmathx.cache_info().entries == 1
        assert nvmathx.clear_cache() == 1
        assert nvmathx.cache_info().entries == 0
    finally:
        nvmathx.set_cache_dir(None)


def test_import_leaves_the_code_cache_unloaded():
    import subprocess
    import sys

    code = ("import sys, nvmathx; nvmathx.cache_dir(); "
            "assert 'nvmathx.device_api' not in sys.modules and 'numba' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)
