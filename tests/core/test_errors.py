import pickle

import pytest

from nvmathx import (
    CudaLibraryError,
    DeviceUnavailableError,
    InvalidStateError,
    LibraryNotFoundError,
    NvmathxError,
    OperandError,
    OptionsError,
    UnsupportedLayoutError,
    UnsupportedOperandError,
)


@pytest.mark.parametrize(
    "error, builtin",
    [
        (OperandError("a", "bad shape"), ValueError),
        (UnsupportedOperandError("b", "not an array"), TypeError),
        (UnsupportedLayoutError("c", "overlapping strides", "pass a copy"), ValueError),
        (OptionsError("options", "bad"), ValueError),
        (InvalidStateError("freed"), RuntimeError),
        (LibraryNotFoundError("cufft", "nvidia-cufft", "NVMATHX_CUFFT_PATH"), ImportError),
        (CudaLibraryError(15, "CUBLAS_STATUS_NOT_SUPPORTED", "cublasLtMatmul"), RuntimeError),
        (DeviceUnavailableError("execution", "no CUDA driver"), RuntimeError),
    ],
)
def test_hierarchy_and_pickling(error, builtin):
    assert isinstance(error, NvmathxError) and isinstance(error, builtin)
    clone = pickle.loads(pickle.dumps(error))
    assert type(clone) is type(error) and str(clone) == str(error)
    if hasattr(error, "argument"):
        assert clone.argument == error.argument


def test_messages_carry_the_details():
    error = CudaLibraryError(15, "CUBLAS_STATUS_NOT_SUPPORTED", "cublasLtMatmul", "no algorithm")
    assert error.status == 15 and error.status_name == "CUBLAS_STATUS_NOT_SUPPORTED"
    assert "CUBLAS_STATUS_NOT_SUPPORTED (15) in cublasLtMatmul: no algorithm" in str(error)
    layout = UnsupportedLayoutError("b", "overlapping strides", "pass b.copy()")
    assert layout.remedy == "pass b.copy()" and str(layout).startswith("b: ")
    missing = LibraryNotFoundError("cufft", "nvidia-cufft", "NVMATHX_CUFFT_PATH")
    assert "pip install nvidia-cufft" in str(missing) and "NVMATHX_CUFFT_PATH" in str(missing)
