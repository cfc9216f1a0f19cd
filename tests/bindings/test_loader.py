"""Library loading: overrides, the sys.path fallback, and errors that name the remedy."""

import os
import shutil
import sys

import pytest

from nvmathx._bindings import _loader
from nvmathx._core.errors import LibraryNotFoundError


@pytest.fixture
def fresh_loader(monkeypatch):
    monkeypatch.setattr(_loader, "_loaded", {})
    return _loader


def test_bad_override_names_package_and_variable(fresh_loader, monkeypatch, tmp_path):
    monkeypatch.setenv("NVMATHX_CUFFT_PATH", str(tmp_path / "libcufft.so.99"))
    with pytest.raises(LibraryNotFoundError) as info:
        fresh_loader.load_library("cufft")
    assert info.value.library == "cufft"
    assert "nvidia-cufft" in str(info.value) and "NVMATHX_CUFFT_PATH" in str(info.value)


def test_missing_library_raises_typed_error(fresh_loader, monkeypatch):
    monkeypatch.setattr(fresh_loader, "_sys_path_candidates", lambda stem: [])

    def no_pathfinder(name):
        raise OSError("not here")

    import cuda.pathfinder

    monkeypatch.setattr(cuda.pathfinder, "load_nvidia_dynamic_lib", no_pathfinder)
    with pytest.raises(LibraryNotFoundError, match="pip install nvidia-cublas"):
        fresh_loader.load_library("cublasLt")


def test_sys_path_fallback_finds_target_installs(fresh_loader, monkeypatch, tmp_path):
    import cuda.pathfinder

    real = _find_any_shared_library()
    folder = tmp_path / "nvidia" / "cu13" / "lib"
    folder.mkdir(parents=True)
    shutil.copy(real, folder / "libcufft.so.12")
    (tmp_path / "nvidia" / "cu12" / "lib").mkdir(parents=True)
    shutil.copy(real, tmp_path / "nvidia" / "cu12" / "lib" / "libcufft.so.11")
    # Only the fake install is searched: the CUDA wheels of this environment (nvidia/cu13/lib in
    # site-packages after `pip install -e .[cu13]`) must not decide the outcome.
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    candidates = fresh_loader._sys_path_candidates("cufft")
    assert candidates == [str(folder / "libcufft.so.12"), str(tmp_path / "nvidia/cu12/lib/libcufft.so.11")]

    def no_pathfinder(name):
        raise OSError("not here")

    monkeypatch.setattr(cuda.pathfinder, "load_nvidia_dynamic_lib", no_pathfinder)
    loaded = fresh_loader.load_library("cufft")
    assert loaded.path == str(folder / "libcufft.so.12") and loaded.found_via == "sys.path search"
    assert fresh_loader.load_library("cufft") is loaded  # loaded once


def test_override_is_used_first(fresh_loader, monkeypatch):
    real = _find_any_shared_library()
    monkeypatch.setenv("NVMATHX_MATHDX_PATH", real)
    loaded = fresh_loader.load_library("mathdx")
    assert loaded.path == real and loaded.found_via == "NVMATHX_MATHDX_PATH"


def test_report_never_raises(fresh_loader, monkeypatch):
    monkeypatch.setenv("NVMATHX_CUFFT_PATH", "/nonexistent/libcufft.so")
    rows = dict((name, where) for name, where, _ in fresh_loader.library_report())
    assert rows["cufft"] == "not found" and set(rows) == set(_loader.LIBRARIES)


def _find_any_shared_library():
    import ctypes.util

    for name in ("z", "m", "c"):
        found = ctypes.util.find_library(name)
        if found:
            for folder in ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib", "/usr/lib", "/lib64"):
                path = os.path.join(folder, found)
                if os.path.exists(path):
                    return path
    pytest.skip("no shared library to copy")


def test_function_table_binds_once_with_types(fresh_loader, monkeypatch):
    import ctypes
    import ctypes.util

    libm = ctypes.util.find_library("m")
    if not libm:
        pytest.skip("no libm")
    fresh_loader._loaded["cufft"] = fresh_loader.LoadedLibrary("cufft", ctypes.CDLL(libm), libm, "test")
    table = fresh_loader.FunctionTable("cufft", {"cos": (ctypes.c_double, [ctypes.c_double])})
    functions = table()
    assert functions["cos"](0.0) == 1.0  # restype and argtypes were applied
    assert table() is functions


def test_function_table_raises_typed_error_when_library_is_missing(fresh_loader, monkeypatch):
    monkeypatch.setenv("NVMATHX_CUFFT_PATH", "/nonexistent/libcufft.so")
    with pytest.raises(LibraryNotFoundError):
        fresh_loader.FunctionTable("cufft", {})()


def test_function_table_leaves_out_missing_optional_symbols_and_runs_before_load(fresh_loader):
    import ctypes
    import ctypes.util

    libm = ctypes.util.find_library("m")
    if not libm:
        pytest.skip("no libm")
    fresh_loader._loaded["mathdx"] = fresh_loader.LoadedLibrary("mathdx", ctypes.CDLL(libm), libm, "test")
    calls = []
    table = fresh_loader.FunctionTable(
        "mathdx",
        {"cos": (ctypes.c_double, [ctypes.c_double], True), "no_such_symbol": (ctypes.c_int, [], False)},
        before_load=lambda: calls.append("before"),
    )
    functions = table()
    assert set(functions) == {"cos"} and functions["cos"](0.0) == 1.0
    assert calls == ["before"]
    missing_required = fresh_loader.FunctionTable("mathdx", {"no_such_symbol": (ctypes.c_int, [], True)})
    with pytest.raises(AttributeError):
        missing_required()
