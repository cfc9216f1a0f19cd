"""cuDSS bindings: the dialect of each release, the header values, the declared signatures, typed
errors where the library (or what it links to) is missing, and, on a GPU machine, the loaded
library itself."""

import pickle
import re
from pathlib import Path

import pytest

from nvmathx._bindings import _loader, cudss
from nvmathx._core.errors import LibraryNotFoundError

BINDING = Path(__file__).resolve().parents[2] / "nvmathx" / "_bindings" / "cudss.py"


@pytest.mark.parametrize("release", [(0, 8, 0), (0, 8, 4)])
def test_release_0_8_dialect(release):
    dialect = cudss.dialect_for(release)
    assert dialect.soname == "libcudss.so.0" and dialect.release == release
    assert (dialect.data_type_unset, dialect.data_type_r_64f_64f) == (1024, 1026)  # 0.8's cudssDataType_t
    assert not dialect.transposed_solves and not dialect.bunch_kaufman and not dialect.jit_kernels


@pytest.mark.parametrize("release", [(1, 0, 0), (1, 2, 3)])
def test_release_1_dialect(release):
    dialect = cudss.dialect_for(release)
    assert dialect.soname == "libcudss.so.1"
    assert (dialect.data_type_unset, dialect.data_type_r_64f_64f) == (63, 62)  # 1.0's aliases of cudaDataType_t
    assert dialect.transposed_solves and dialect.bunch_kaufman and dialect.jit_kernels


@pytest.mark.parametrize("release, shown", [((0, 7, 1), "0.7.1"), ((0, 6, 0), "0.6.0"), ((0, 9, 0), "0.9.0"),
                                            ((2, 0, 0), "2.0.0")])
def test_other_releases_are_refused(release, shown):
    with pytest.raises(LibraryNotFoundError, match=f"binds cuDSS 0.8 and 1.x; the loaded libcudss is {shown}") as info:
        cudss.dialect_for(release)
    assert info.value.library == "cudss" and "nvidia-cudss-cu13>=0.8,<2" in str(info.value)
    assert str(pickle.loads(pickle.dumps(info.value))) == str(info.value)


def test_values_follow_the_headers():
    """cudss_data_types.h of 0.8.0 and 1.0.0 (the same values in both)."""
    assert cudss.ConfigParam.MATCHING_ALG == 3 and cudss.ConfigParam.SOLVE_MODE == 4  # 0.7 had USE_MATCHING at 3
    assert cudss.ConfigParam.IR_N_STEPS == 5 and cudss.ConfigParam.PIVOT_TYPE == 7
    assert cudss.ConfigParam.PIVOT_EPSILON == 9 and cudss.ConfigParam.ND_UBFACTOR == 25
    assert cudss.DataParam.MEMORY_ESTIMATES == 13 and cudss.DataParam.IR_N_STEPS == 24
    assert [int(p) for p in cudss.Phase] == [1, 2, 3, 4, 8, 1008]
    assert list(cudss.PivotType) == list(range(7)) and cudss.PivotType.BUNCH_KAUFMAN == 6
    assert cudss.ReorderingAlg.NESTED_DISSECTION == 4 and cudss.ReorderingAlg.NONE == 5
    assert [int(t) for t in cudss.DataType] == [0, 1, 4, 5, 10, 24]  # cudaDataType_t's
    assert cudss.Status.IR_FAILED == 7


def test_called_functions_are_declared():
    source = BINDING.read_text()
    called = set(re.findall(r'_call\(\s*"(\w+)"', source)) | set(re.findall(r'_lib\(\)\.get\("(\w+)"\)', source))
    assert {"cudssExecute", "cudssMatrixCreateCsr", "cudssSetJitCacheDir"} <= called
    assert called - set(cudss._SIGNATURES) == set()
    # cudssMatrixCreateCsr takes an offset type before the index type from 0.8 on: 14 arguments
    assert len(cudss._SIGNATURES["cudssMatrixCreateCsr"][1]) == 14


@pytest.mark.parametrize("options", [{}, {"pivot_threshold": 0.5, "refinement_steps": 2},
                                     {"solve_mode": "transpose", "pivoting": "bunch_kaufman",
                                      "matrix_type": "symmetric"}])
def test_every_parameter_set_has_a_c_type(options):
    from nvmathx.sparse import DirectSolverOptions
    from nvmathx.sparse._solver_options import cudss_settings

    settings = cudss_settings(DirectSolverOptions(**options), cudss.dialect_for((1, 0, 0)))
    assert settings["config"]
    for name in settings["config"]:
        assert cudss.ConfigParam[name] in cudss._CONFIG_TYPES


def test_errors_name_the_status_and_the_log_variable():
    error = cudss.CudssError(4, cudss.status_name(4), "cudssExecute", "SOLVE")
    assert str(error).startswith("CUDSS_STATUS_NOT_SUPPORTED (4) in cudssExecute: SOLVE")
    assert "CUDSS_LOG_LEVEL=5" in str(error)
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.status, copy.status_name, str(copy)) == (4, "CUDSS_STATUS_NOT_SUPPORTED", str(error))
    assert cudss.status_name(42) == "CUDSS_STATUS_42"


@pytest.fixture
def fresh(monkeypatch):
    """A loader and a cuDSS table that have loaded nothing yet."""
    monkeypatch.setattr(_loader, "_loaded", {})
    monkeypatch.setattr(cudss, "_state", {})
    monkeypatch.setattr(cudss, "_lib", _loader.FunctionTable("cudss", cudss._SIGNATURES, before_load=cudss._prepare))
    return cudss


def test_a_missing_dependency_is_a_typed_error(fresh, monkeypatch):
    monkeypatch.setenv("NVMATHX_CUBLAS_PATH", "/nonexistent/libcublas.so.13")
    monkeypatch.setenv("NVMATHX_CUBLASLT_PATH", "/nonexistent/libcublasLt.so.13")
    with pytest.raises(LibraryNotFoundError) as info:
        fresh.version()
    assert info.value.library in ("cublasLt", "cublas")
    with pytest.raises(LibraryNotFoundError):  # nothing half-bound: the next call fails the same way
        fresh.create()


def test_a_missing_libcudss_names_the_wheel(fresh, monkeypatch):
    monkeypatch.setattr(_loader, "_loaded", {name: object() for name in ("cublasLt", "cublas", "nvrtc")})
    monkeypatch.setenv("NVMATHX_CUDSS_PATH", "/nonexistent/libcudss.so.1")
    with pytest.raises(LibraryNotFoundError) as info:
        fresh.dialect()
    assert info.value.library == "cudss" and "NVMATHX_CUDSS_PATH" in str(info.value)
    assert "nvidia-cudss-cu13" in str(info.value)


def test_python_m_nvmathx_reports_cudss(fresh, monkeypatch):
    from nvmathx._main import cudss_report

    monkeypatch.setattr(_loader, "_loaded", {name: object() for name in ("cublasLt", "cublas", "nvrtc")})
    monkeypatch.setenv("NVMATHX_CUDSS_PATH", "/nonexistent/libcudss.so.1")
    assert cudss_report().startswith("cuDSS not available: cudss not installed: pip install ")
    monkeypatch.setattr(fresh, "dialect", lambda: fresh.dialect_for((0, 8, 0)))
    assert cudss_report() == ("cuDSS 0.8.0 (libcudss.so.0: no transposed solves; no threading layer: "
                              "single-threaded analysis)")
    monkeypatch.setattr(fresh, "threading_layer_path", lambda: "/site/nvidia/cu13/lib/libcudss_mtlayer_gomp.so.0")
    assert cudss_report().endswith("; threading layer libcudss_mtlayer_gomp.so.0)")


def test_the_threading_layer_is_found_beside_libcudss(fresh, monkeypatch, tmp_path):
    library = tmp_path / "libcudss.so.0"
    library.write_bytes(b"")
    monkeypatch.setattr(fresh, "load_library", lambda name: _loader.LoadedLibrary("cudss", None, str(library), "test"))
    assert fresh.threading_layer_path() is None
    (tmp_path / "libcudss_mtlayer_gomp.so.0").write_bytes(b"")
    assert fresh.threading_layer_path() == str(tmp_path / "libcudss_mtlayer_gomp.so.0")
    monkeypatch.setattr(fresh, "load_library", lambda name: _loader.LoadedLibrary("cudss", None, "", "test"))
    assert fresh.threading_layer_path() is None  # found by the system loader: no folder to look in


@pytest.mark.gpu
def test_loaded_release_is_supported():
    try:
        dialect = cudss.dialect()
    except LibraryNotFoundError as error:
        pytest.skip(f"cuDSS not installed: {error}")
    assert dialect == cudss.dialect_for(dialect.release)
    handle = cudss.create()
    try:
        config = cudss.config_create()
        cudss.config_set(config, cudss.ConfigParam.IR_N_STEPS, 2)
        assert cudss.config_get(config, cudss.ConfigParam.IR_N_STEPS) == 2
        cudss.config_set(config, cudss.ConfigParam.REORDERING_ALG, cudss.ReorderingAlg.AMD)
        assert cudss.config_get(config, cudss.ConfigParam.REORDERING_ALG) == cudss.ReorderingAlg.AMD
        cudss.config_destroy(config)
    finally:
        cudss.destroy(handle)
