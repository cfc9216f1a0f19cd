"""cuBLASMp bindings: version rules, typed errors where the library (or what it links to) is missing,
and, on a GPU machine, the loaded library itself."""

import os
import pickle

import pytest

from nvmathx._bindings import _loader, cublasmp
from nvmathx._core.errors import LibraryNotFoundError


def test_version_decoding():
    assert cublasmp.decode_version(700) == (0, 7, 0)  # 0.7: major * 1000 + minor * 100 + patch
    assert cublasmp.decode_version(702) == (0, 7, 2)
    assert cublasmp.decode_version(801) == (0, 8, 1)  # 0.8 on: major * 10000 + minor * 100 + patch
    assert cublasmp.decode_version(1000) == (0, 10, 0)


@pytest.mark.parametrize("release, nccl", [((0, 7, 0), (2, 28, 3)), ((0, 8, 1), (2, 29, 2)), ((0, 10, 0), (2, 29, 2))])
def test_minimum_nccl_of_each_release(release, nccl):
    assert cublasmp.minimum_nccl(release) == nccl


def test_cublasmp_08_with_an_older_nccl_names_both_and_what_to_install():
    with pytest.raises(LibraryNotFoundError) as info:
        cublasmp.check_versions(801, (2, 28, 9))
    message = str(info.value)
    assert "cuBLASMp 0.8.1 needs NCCL >= 2.29.2; the loaded libnccl is 2.28.9" in message
    assert "nvidia-cublasmp-cu13==0.7.*" in message and info.value.library == "nccl"


def test_cublasmp_010_with_a_new_enough_nccl_is_refused_for_its_api():
    with pytest.raises(LibraryNotFoundError, match="binds cuBLASMp 0.7's API; the loaded libcublasmp is 0.10.0"):
        cublasmp.check_versions(1000, (2, 29, 7))


def test_a_cublasmp_that_will_not_load_beside_an_old_nccl_is_explained(monkeypatch):
    """cuBLASMp 0.8+ fails to load with NCCL < 2.29.2: the wheel's version and NCCL's say why."""
    def load(name):
        if name == "cublasmp":
            raise LibraryNotFoundError("cublasmp", "nvidia-cublasmp-cu13", "NVMATHX_CUBLASMP_PATH", "undefined symbol")
        return None

    monkeypatch.setattr(cublasmp, "load_library", load)
    monkeypatch.setattr(cublasmp, "_nccl_version", lambda: (2, 28, 9))
    monkeypatch.setattr(cublasmp, "_installed_release", lambda: (0, 8, 1))
    with pytest.raises(LibraryNotFoundError, match=r"cuBLASMp 0\.8\.1 needs NCCL >= 2\.29\.2; the loaded libnccl is "
                                                   r"2\.28\.9") as info:
        cublasmp._prepare()
    assert "undefined symbol" in str(info.value.__cause__)
    monkeypatch.setattr(cublasmp, "_installed_release", lambda: (0, 7, 0))  # not the pair: the loader's own error
    with pytest.raises(LibraryNotFoundError, match="undefined symbol"):
        cublasmp._prepare()


@pytest.mark.parametrize("nccl", [(2, 28, 3), (2, 28, 9), (2, 29, 2), (3, 0, 0)])
def test_supported_pair_passes(nccl):
    cublasmp.check_versions(701, nccl)


def test_old_nccl_names_both_versions():
    with pytest.raises(LibraryNotFoundError) as info:
        cublasmp.check_versions(700, (2, 27, 7))
    message = str(info.value)
    assert info.value.library == "nccl" and "nvidia-nccl-cu13>=2.28.3" in message
    assert "cuBLASMp 0.7.0 needs NCCL >= 2.28.3" in message and "2.27.7" in message
    assert str(pickle.loads(pickle.dumps(info.value))) == message


@pytest.mark.parametrize("code, shown", [(800, "0.8.0"), (601, "0.6.1")])
def test_other_releases_are_refused(code, shown):
    with pytest.raises(LibraryNotFoundError, match=f"binds cuBLASMp 0.7's API; the loaded libcublasmp is {shown}"):
        cublasmp.check_versions(code, (2, 29, 2))


def test_errors_name_the_status_and_the_log_variable():
    error = cublasmp.CublasMpError(7, cublasmp.status_name(7), "cublasMpMatmul", "grid 2 x 1")
    assert str(error).startswith("CUBLASMP_STATUS_NOT_SUPPORTED (7) in cublasMpMatmul: grid 2 x 1")
    assert "CUBLASMP_LOG_LEVEL=5" in str(error)
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.status, copy.status_name, str(copy)) == (7, "CUBLASMP_STATUS_NOT_SUPPORTED", str(error))
    assert cublasmp.status_name(42) == "CUBLASMP_STATUS_42"


@pytest.fixture
def fresh(monkeypatch):
    """A loader and a cuBLASMp table that have loaded nothing yet."""
    monkeypatch.setattr(_loader, "_loaded", {})
    monkeypatch.setattr(cublasmp, "_lib", _loader.FunctionTable("cublasmp", cublasmp._SIGNATURES,
                                                                before_load=cublasmp._prepare))
    return cublasmp


def test_a_missing_dependency_is_a_typed_error(fresh, monkeypatch):
    monkeypatch.setenv("NVMATHX_NCCL_PATH", "/nonexistent/libnccl.so.2")
    with pytest.raises(LibraryNotFoundError) as info:
        fresh.get_version()
    assert info.value.library == "nccl" and "NVMATHX_NCCL_PATH" in str(info.value)
    with pytest.raises(LibraryNotFoundError):  # nothing half-bound: the next call fails the same way
        fresh.numroc(10, 3, 0, 0, 4)


def test_nvshmem_is_disabled_unless_asked_for(fresh, monkeypatch):
    monkeypatch.setenv("NVMATHX_NCCL_PATH", "/nonexistent/libnccl.so.2")
    monkeypatch.delenv("CUBLASMP_DISABLE_NVSHMEM", raising=False)
    with pytest.raises(LibraryNotFoundError):
        fresh.get_version()
    assert os.environ["CUBLASMP_DISABLE_NVSHMEM"] == "1"
    monkeypatch.setenv("CUBLASMP_DISABLE_NVSHMEM", "0")
    with pytest.raises(LibraryNotFoundError):
        fresh.get_version()
    assert os.environ["CUBLASMP_DISABLE_NVSHMEM"] == "0"


def test_absence_here_is_a_typed_error():
    """Where cuBLASMp (or NCCL, NVSHMEM, cuBLAS) is not installed, loading raises, never crashes."""
    try:
        version = cublasmp.version()
    except LibraryNotFoundError as error:
        assert error.library in ("nccl", "nvshmem_host", "cublas", "cublasLt", "cublasmp")
        assert "pip install" in str(error)
    else:
        pytest.skip(f"cuBLASMp {version} is installed here")


# -- on a GPU ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def loaded():
    try:
        cublasmp.version()
    except LibraryNotFoundError as error:
        pytest.skip(f"cuBLASMp not available: pip install {error.pip_package} ({error.detail[:200]})")
    return cublasmp


@pytest.mark.gpu
def test_loads_and_reports_its_version(loaded):
    major, minor, patch = loaded.version()
    assert (major, minor) == cublasmp.SUPPORTED_MINOR and patch >= 0
    assert loaded.get_version() == major * 1000 + minor * 100 + patch


@pytest.mark.gpu
def test_numroc_agrees_with_the_pure_one(loaded):
    from nvmathx.distributed.linalg._layout import numroc

    for n, nb, nprocs, source in ((10, 3, 4, 0), (9, 3, 4, 0), (7, 2, 2, 1), (13, 2, 3, 0), (6, 10, 2, 0)):
        for iproc in range(nprocs):
            assert loaded.numroc(n, nb, iproc, source, nprocs) == numroc(n, nb, iproc, source, nprocs)


@pytest.mark.gpu
def test_handle_and_descriptor_attributes(loaded):
    from nvmathx._core.device import ensure_device
    from nvmathx._core.streams import resolve_stream

    ensure_device(0)
    handle = loaded.create(resolve_stream(None, 0).handle)
    try:
        loaded.stream_set(handle, resolve_stream(None, 0).handle)
    finally:
        loaded.destroy(handle)
    desc = loaded.matmul_descriptor_create(loaded.ComputeType.COMPUTE_32F)
    try:
        for attribute, value in ((loaded.MatmulDescAttribute.TRANSA, loaded.Operation.N),
                                 (loaded.MatmulDescAttribute.TRANSB, loaded.Operation.T),
                                 (loaded.MatmulDescAttribute.ALGO_TYPE, loaded.AlgoType.NO_OVERLAP),
                                 (loaded.MatmulDescAttribute.EPILOGUE, 0),
                                 (loaded.MatmulDescAttribute.BIAS_POINTER, 0),
                                 (loaded.MatmulDescAttribute.BIAS_DATA_TYPE, loaded.DataType.R_32F)):
            loaded.matmul_descriptor_set(desc, attribute, value)
    finally:
        loaded.matmul_descriptor_destroy(desc)
