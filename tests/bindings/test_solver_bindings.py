"""The cuSOLVER and cuBLAS bindings without a GPU: every routine the solvers call is declared with
its C argument count, status codes carry their C names, and a missing library raises the typed
error that names the wheel."""

import ctypes
import pickle

import pytest

from nvmathx._bindings import _loader, cublas, cusolver
from nvmathx._core.errors import CudaLibraryError, LibraryNotFoundError

DTYPES = ("float32", "float64", "complex64", "complex128")

# C argument counts, from cusolverDn.h and cublas_api.h.
CUSOLVER_ARITY = {
    "cusolverDnCreate": 1, "cusolverDnDestroy": 1, "cusolverDnSetStream": 2, "cusolverDnCreateParams": 1,
    "cusolverDnDestroyParams": 1, "cusolverDnXgetrf_bufferSize": 10, "cusolverDnXgetrf": 14,
    "cusolverDnXgetrs": 13, "cusolverDnXpotrf_bufferSize": 10, "cusolverDnXpotrf": 13, "cusolverDnXpotrs": 12,
    **{f"cusolverDn{t}getrf_bufferSize": 6 for t in "SDCZ"}, **{f"cusolverDn{t}getrf": 8 for t in "SDCZ"},
    **{f"cusolverDn{t}getrs": 10 for t in "SDCZ"}, **{f"cusolverDn{t}potrfBatched": 7 for t in "SDCZ"},
    **{f"cusolverDn{t}potrsBatched": 10 for t in "SDCZ"},
}
CUBLAS_ARITY = {
    "cublasCreate_v2": 1, "cublasDestroy_v2": 1, "cublasSetStream_v2": 2,
    **{f"cublas{t}getrfBatched": 7 for t in "SDCZ"}, **{f"cublas{t}getrsBatched": 11 for t in "SDCZ"},
    **{f"cublas{t}trsm_v2": 12 for t in "SDCZ"}, **{f"cublas{t}trsmBatched": 13 for t in "SDCZ"},
}


@pytest.mark.parametrize("module, arity", [(cusolver, CUSOLVER_ARITY), (cublas, CUBLAS_ARITY)])
def test_signatures_have_the_c_argument_counts(module, arity):
    signatures = module._lib.signatures
    assert set(arity) <= set(signatures)
    for name, count in arity.items():
        restype, argtypes = signatures[name][:2]
        assert restype is ctypes.c_int and len(argtypes) == count, name


def test_64_bit_api_takes_64_bit_sizes():
    argtypes = cusolver._lib.signatures["cusolverDnXgetrs"][1]
    # handle, params, trans, n, nrhs, dataTypeA, A, lda, ipiv, dataTypeB, B, ldb, info
    assert [argtypes[i] for i in (3, 4, 7, 11)] == [ctypes.c_int64] * 4
    assert argtypes[2] is ctypes.c_int and argtypes[5] is ctypes.c_int


@pytest.mark.parametrize("module", [cusolver, cublas])
def test_every_called_function_is_declared(module):
    import inspect
    import re

    source = inspect.getsource(module)
    called = set(re.findall(r'_call\(\s*"(\w+)"', source))
    for template in re.findall(r'_call\(\s*f"(\w*)\{\w+\[dtype\]\}(\w+)"', source):
        called |= {f"{template[0]}{t}{template[1]}" for t in "SDCZ"}
    called |= {f"cusolverDn{t}{kind}" for t in "SDCZ" for kind in ("potrfBatched", "potrsBatched", "getrf",
                                                                    "getrs", "getrf_bufferSize")
               if module is cusolver}
    assert called and called <= set(module._lib.signatures)


def test_constants_follow_the_headers():
    assert (cusolver.FillMode.LOWER, cusolver.FillMode.UPPER) == (0, 1)
    assert (cublas.Operation.N, cublas.Operation.T, cublas.Operation.C) == (0, 1, 2)
    assert (cublas.SideMode.LEFT, cublas.DiagType.NON_UNIT) == (0, 0)
    assert cusolver.DATA_TYPES == {"float32": 0, "float64": 1, "complex64": 4, "complex128": 5}
    assert set(cusolver.BATCHED_PREFIX) == set(cublas.PREFIX) == set(DTYPES)


@pytest.mark.parametrize("module, code, name", [
    (cusolver, 3, "CUSOLVER_STATUS_INVALID_VALUE"), (cusolver, 10, "CUSOLVER_STATUS_ZERO_PIVOT"),
    (cusolver, 999, "CUSOLVER_STATUS_999"), (cublas, 7, "CUBLAS_STATUS_INVALID_VALUE"),
    (cublas, 15, "CUBLAS_STATUS_NOT_SUPPORTED"), (cublas, 99, "CUBLAS_STATUS_99"),
])
def test_status_becomes_typed_error(module, code, name):
    error_class = module.CusolverError if module is cusolver else module.CublasError
    module.check(0, "anything")  # success raises nothing
    with pytest.raises(error_class) as info:
        module.check(code, "someFunction", "detail")
    error = info.value
    assert isinstance(error, CudaLibraryError) and error.status == code and error.status_name == name
    assert "someFunction" in str(error) and error.hint in str(error)
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is error_class and copy.status_name == name


@pytest.mark.parametrize("module, library, package", [(cusolver, "cusolver", "nvidia-cusolver"),
                                                      (cublas, "cublas", "nvidia-cublas")])
def test_missing_library_names_the_wheel(module, library, package, monkeypatch, tmp_path):
    monkeypatch.setattr(_loader, "_loaded", {})
    monkeypatch.setenv(f"NVMATHX_{library.upper()}_PATH", str(tmp_path / f"lib{library}.so.99"))
    table = _loader.FunctionTable(library, module._lib.signatures)
    with pytest.raises(LibraryNotFoundError) as info:
        table()
    assert package in str(info.value) and f"NVMATHX_{library.upper()}_PATH" in str(info.value)


def test_both_libraries_are_reported():
    assert {"cusolver", "cublas"} <= set(_loader.LIBRARIES)
