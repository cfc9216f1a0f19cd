import ast
import importlib
import pathlib
import pickle

import numpy as np
import pytest

import nvmathx
from nvmathx import (
    CommunicationError,
    CudaLibraryError,
    DeviceUnavailableError,
    InvalidStateError,
    LibraryNotFoundError,
    NvmathxError,
    OperandError,
    OptionsError,
    SingularMatrixError,
    UnsupportedLayoutError,
    UnsupportedOperandError,
)
from nvmathx._bindings.cublas import CublasError
from nvmathx._bindings.cublaslt import CublasLtError
from nvmathx._bindings.cublasmp import CublasMpError
from nvmathx._bindings.cuda_driver import CudaDriverError
from nvmathx._bindings.cudss import CudssError
from nvmathx._bindings.cufft import CufftError
from nvmathx._bindings.curand import CurandError
from nvmathx._bindings.cusolver import CusolverError
from nvmathx._bindings.cusparse import CusparseError
from nvmathx._bindings.mathdx import MathdxError
from nvmathx._bindings.nccl import NcclError
from nvmathx.fft import CallbackCompileError, CallbacksUnavailableError

# One instance of every exception class nvmathx defines, with the attributes its docs promise.
EXAMPLES = [
    (NvmathxError("something failed"), ()),
    (OperandError("a", "bad shape"), ("argument",)),
    (UnsupportedOperandError("b", "not an array"), ("argument",)),
    (UnsupportedLayoutError("c", "overlapping strides", "pass a copy"), ("argument", "remedy")),
    (OptionsError("options.limit", "expected an int"), ("argument",)),
    (InvalidStateError("freed"), ()),
    (DeviceUnavailableError("execution", "no CUDA driver"), ("argument",)),
    (SingularMatrixError("a: exactly singular", batch_index=3, pivot=7), ("batch_index", "pivot")),
    (CommunicationError("rank 2 died", rank=2, operation="all_to_all"), ("rank", "operation")),
    (LibraryNotFoundError("cufft", "nvidia-cufft", "NVMATHX_CUFFT_PATH", "not on the path"),
     ("library", "pip_package", "env_var", "detail", "msg")),
    (CudaLibraryError(15, "CUBLAS_STATUS_NOT_SUPPORTED", "cublasLtMatmul", "no algorithm"),
     ("status", "status_name", "function", "detail", "library", "hint")),
    (CublasLtError(7, "CUBLAS_STATUS_INVALID_VALUE", "cublasLtMatmul"), ("status", "status_name", "function", "hint")),
    (CufftError(4, "CUFFT_INVALID_VALUE", "cufftExec", "bad stride"), ("status", "status_name", "detail", "hint")),
    (NcclError(4, "ncclInvalidArgument", "ncclSend", "peer 9"), ("status", "status_name", "function", "detail")),
    (CurandError(104, "CURAND_STATUS_OUT_OF_RANGE", "curandGetDirectionVectors32"),
     ("status", "status_name", "function")),
    (CublasMpError(3, "CUBLASMP_STATUS_INVALID_VALUE", "cublasMpMatmul"), ("status", "status_name", "function")),
    (CudaDriverError(700, "CUDA_ERROR_ILLEGAL_ADDRESS", "cuMemcpyAsync"), ("status", "status_name", "hint")),
    (CublasError(7, "CUBLAS_STATUS_INVALID_VALUE", "cublasDtrsmBatched"), ("status", "status_name", "function")),
    (CusolverError(3, "CUSOLVER_STATUS_INVALID_VALUE", "cusolverDnXgetrf"), ("status", "status_name", "function")),
    (CudssError(5, "CUDSS_STATUS_EXECUTION_FAILED", "cudssExecute"), ("status", "status_name", "function")),
    (CusparseError(3, "CUSPARSE_STATUS_INVALID_VALUE", "cusparseSpMM"), ("status", "status_name", "function")),
    (MathdxError(1, "COMMONDX_INVALID_VALUE", "cufftdxFinalizeCode"), ("status", "status_name", "hint")),
    (CallbackCompileError("prolog", "does not compile: bad types"), ("argument",)),
    (CallbacksUnavailableError("cuFFT 11.0 cannot link LTO callbacks"), ()),
]


def _error_classes() -> set:
    """Every class in nvmathx's source that derives from NvmathxError (found by reading the source,
    so that a new one without a row above fails the test below)."""
    root = pathlib.Path(nvmathx.__file__).parent
    found = {NvmathxError}
    for path in root.rglob("*.py"):
        module = ".".join(path.relative_to(root.parent).with_suffix("").parts)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and any("Error" in ast.unparse(base) for base in node.bases):
                cls = getattr(importlib.import_module(module), node.name)
                if issubclass(cls, NvmathxError):
                    found.add(cls)
    return found


def test_every_exception_class_is_in_the_table():
    assert _error_classes() == {type(error) for error, _ in EXAMPLES}


@pytest.mark.parametrize("error, attributes", EXAMPLES, ids=[type(error).__name__ for error, _ in EXAMPLES])
def test_pickling_keeps_the_message_and_every_attribute(error, attributes):
    error.add_note("while planning")
    clone = pickle.loads(pickle.dumps(error))
    assert type(clone) is type(error) and str(clone) == str(error) and clone.args == error.args
    for name in attributes:
        assert getattr(error, name) is not None, name
        assert getattr(clone, name) == getattr(error, name), name
    assert vars(clone) == vars(error)  # everything else it carries, the note included
    assert clone.__notes__ == ["while planning"]


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
        (SingularMatrixError("a: singular"), np.linalg.LinAlgError),
        (CommunicationError("rank 1 died", rank=1), RuntimeError),
    ],
)
def test_hierarchy(error, builtin):
    assert isinstance(error, NvmathxError) and isinstance(error, builtin)


def test_messages_carry_the_details():
    error = CudaLibraryError(15, "CUBLAS_STATUS_NOT_SUPPORTED", "cublasLtMatmul", "no algorithm")
    assert error.status == 15 and error.status_name == "CUBLAS_STATUS_NOT_SUPPORTED"
    assert "CUBLAS_STATUS_NOT_SUPPORTED (15) in cublasLtMatmul: no algorithm" in str(error)
    layout = UnsupportedLayoutError("b", "overlapping strides", "pass b.copy()")
    assert layout.remedy == "pass b.copy()" and str(layout).startswith("b: ")
    missing = LibraryNotFoundError("cufft", "nvidia-cufft", "NVMATHX_CUFFT_PATH")
    assert "pip install nvidia-cufft" in str(missing) and "NVMATHX_CUFFT_PATH" in str(missing)
    assert "CUBLASLT_LOG_LEVEL" in str(CublasLtError(15, "CUBLAS_STATUS_NOT_SUPPORTED"))
