"""nvmathx.sparse.matmul and Matmul on cuSPARSE, against numpy in float64 on dense copies of the
operands: torch CUDA and CuPy operands, host operands with execution="cuda", graph capture."""

import numpy as np
import pytest
import scipy.sparse as sp

from helpers.torch_cuda import torch_with_cuda
from nvmathx import OperandError, OptionsError
from nvmathx.sparse import Matmul, matmul, plan_cache

from ._matrices import (
    assert_close,
    csr_parts,
    make_dense,
    make_sparse,
    random_operands,
    reference,
    scrambled_parts,
    to_host,
)

pytestmark = [pytest.mark.gpu, pytest.mark.filterwarnings("ignore::UserWarning")]

LIBRARIES = ["torch", "cupy"]
DTYPES = ["float32", "float64", "complex64", "complex128"]


def _library(name):
    """Skip unless the library has a GPU here."""
    if name == "torch":
        torch_with_cuda()
    else:
        cupy = pytest.importorskip("cupy")
        pytest.importorskip("cupyx.scipy.sparse")
        if cupy.cuda.runtime.getDeviceCount() == 0:
            pytest.skip("cupy sees no GPU")
    return name


def _on_gpu(library, dense, index_dtype=np.int32, parts=None):
    parts = csr_parts(dense, index_dtype) if parts is None else parts
    return make_sparse(library, parts, dense.shape, device="cuda")


def _dense(library, array):
    return make_dense(library, array, device="cuda")


_operands = random_operands


@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("vector", [False, True])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("library", LIBRARIES)
def test_dtypes_indices_vectors_transposes(rng, library, dtype, index_dtype, vector, transpose):
    _library(library)
    dense, b, c = _operands(rng, (67, 45), 9, dtype, vector=vector, transpose=transpose, empty_rows=(0, 30))
    a = _on_gpu(library, dense, index_dtype)
    result = matmul(a, _dense(library, b), _dense(library, c), alpha=1.5, beta=-0.5, transpose_a=transpose)
    assert type(result).__module__.partition(".")[0] == library
    assert_close(to_host(result), reference(dense, b, c, 1.5, -0.5, transpose), dtype)


@pytest.mark.parametrize("vector", [False, True])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_with_float32_compute(rng, dtype, vector):
    torch = torch_with_cuda()
    torch_dtype = getattr(torch, dtype)
    dense, b, c = _operands(rng, (40, 32), 8, "float64", vector=vector)
    dense_t = torch.from_numpy(dense).to(torch_dtype)
    b_t, c_t = (torch.from_numpy(x).to(torch_dtype) for x in (b, c))
    result = matmul(dense_t.cuda().to_sparse_csr(), b_t.cuda(), c_t.cuda(), alpha=2.0, beta=1.0)
    assert result.dtype == torch_dtype and result.is_cuda
    expected = reference(dense_t.double().numpy(), b_t.double().numpy(), c_t.double().numpy(), 2.0, 1.0, False)
    assert_close(result.double().cpu().numpy(), expected, dtype)


@pytest.mark.parametrize("vector", [False, True])
@pytest.mark.parametrize("library", LIBRARIES)
def test_unsorted_and_duplicate_indices(rng, library, vector):
    _library(library)
    dense, b, _ = _operands(rng, (30, 25), 4, "float64", vector=vector, density=0.4, empty_rows=(7,))
    a = _on_gpu(library, dense, parts=scrambled_parts(rng, dense, np.int32))
    assert_close(to_host(matmul(a, _dense(library, b))), reference(dense, b, None, 1, 0, False), "float64")


@pytest.mark.parametrize("shape, n", [((0, 0), 3), ((1, 1), 1), ((3, 0), 2), ((0, 4), 2), ((4, 5), 0), ((6, 5), 3)])
@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("library", LIBRARIES)
def test_empty_tiny_and_entryless(rng, library, shape, n, transpose):
    _library(library)
    dense, b, c = _operands(rng, shape, n, "float32", transpose=transpose, density=0.0 if shape == (6, 5) else 0.9)
    result = matmul(_on_gpu(library, dense), _dense(library, b), _dense(library, c), alpha=2.0, beta=0.5,
                    transpose_a=transpose)
    expected = reference(dense, b, c, 2.0, 0.5, transpose)
    assert tuple(result.shape) == expected.shape
    assert_close(to_host(result), expected, "float32")


def test_beta_zero_does_not_read_c(rng):
    _library("torch")
    dense, b, _ = _operands(rng, (20, 10), 3, "float32")
    c = np.full((20, 3), np.nan, np.float32)
    result = to_host(matmul(_on_gpu("torch", dense), _dense("torch", b), _dense("torch", c), beta=0))
    assert np.isfinite(result).all()


@pytest.mark.parametrize("library", LIBRARIES)
def test_column_major_and_strided_b(rng, library):
    _library(library)
    dense, _, _ = _operands(rng, (33, 20), 1, "float64")
    a = _on_gpu(library, dense)
    wide = rng.standard_normal((20, 12))
    wide_gpu = _dense(library, wide)
    fortran = wide_gpu.T.contiguous().T if library == "torch" else wide_gpu.T.copy().T
    for b_gpu, b in ((wide_gpu[:, 2:7], wide[:, 2:7]), (fortran, wide), (wide_gpu[:, 3], wide[:, 3])):
        if b.ndim == 1 and library == "torch":
            b_gpu = b_gpu.contiguous()
        elif b.ndim == 1:
            b_gpu = b_gpu.copy()
        assert_close(to_host(matmul(a, b_gpu)), reference(dense, b, None, 1, 0, False), "float64")


@pytest.mark.parametrize("layout", ["csc", "coo"])
def test_torch_csc_and_coo_on_the_gpu(rng, layout):
    torch = torch_with_cuda()
    dense, b, _ = _operands(rng, (18, 14), 3, "float32")
    dense_t = torch.from_numpy(dense).cuda()
    a = dense_t.to_sparse_csc() if layout == "csc" else dense_t.to_sparse()
    assert_close(matmul(a, torch.from_numpy(b).cuda()).cpu().numpy(), reference(dense, b, None, 1, 0, False),
                 "float32")


@pytest.mark.parametrize("library", ["scipy", "torch"])
def test_host_operands_run_on_cuda_on_request(rng, library):
    _library("torch")
    dense, b, c = _operands(rng, (25, 19), 4, "float64")
    a = make_sparse(library, csr_parts(dense), dense.shape)
    result = matmul(a, make_dense(library, b), make_dense(library, c), beta=2.0, execution="cuda")
    expected_type = np.ndarray if library == "scipy" else type(make_dense("torch", b))
    assert isinstance(result, expected_type)
    assert_close(to_host(result), reference(dense, b, c, 1, 2.0, False), "float64")


@pytest.mark.parametrize("algorithm", ["default", "csr_alg1", "csr_alg2", "csr_alg3"])
@pytest.mark.parametrize("vector", [False, True])
def test_algorithms(rng, algorithm, vector):
    _library("torch")
    dense, b, _ = _operands(rng, (50, 40), 8, "float32", vector=vector)
    call = lambda: matmul(_on_gpu("torch", dense), _dense("torch", b), options={"algorithm": algorithm})  # noqa: E731
    if vector and algorithm == "csr_alg3":
        with pytest.raises(OptionsError, match="^options.algorithm"):
            call()
        return
    assert_close(to_host(call()), reference(dense, b, None, 1, 0, False), "float32")


@pytest.mark.parametrize("library", LIBRARIES)
def test_stateful_reset_and_pattern_check(rng, library):
    _library(library)
    dense, b, c = _operands(rng, (40, 30), 5, "float64", density=0.2)
    parts = csr_parts(dense)
    a = _on_gpu(library, dense, parts=parts)
    with Matmul(a, _dense(library, b), _dense(library, c), beta=1.0) as mm:
        mm.plan()
        assert_close(to_host(mm.execute()), reference(dense, b, c, 1, 1.0, False), "float64")
        new_values = parts[2] * -2.0
        same_pattern = make_sparse(library, (parts[0], parts[1], new_values), dense.shape, device="cuda")
        new_b = rng.standard_normal(b.shape)
        mm.reset_operands(same_pattern, _dense(library, new_b), alpha=3.0)
        assert_close(to_host(mm.execute()), reference(-2.0 * dense, new_b, c, 3.0, 1.0, False), "float64")
        moved = make_sparse(library, (parts[0], (parts[1] + 1) % 30, parts[2]), dense.shape, device="cuda")
        with pytest.raises(OperandError, match="^a: has another sparsity pattern"):
            mm.reset_operands(moved)


def test_graph_capture_of_execute(rng):
    torch = torch_with_cuda()
    dense, b, _ = _operands(rng, (200, 150), 16, "float32")
    a = _on_gpu("torch", dense)
    b_gpu = _dense("torch", b)
    mm = Matmul(a, b_gpu)
    mm.plan()
    vector = _dense("torch", b[:, 0].copy())
    mv = Matmul(a, vector, alpha=2.0)
    mv.plan()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm up outside the capture
        mm.execute()
        mv.execute()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        product = mm.execute()
        matvec = mv.execute()
    new_b = rng.standard_normal(b.shape).astype(np.float32)
    b_gpu.copy_(torch.from_numpy(new_b).cuda())
    vector.copy_(torch.from_numpy(new_b[:, 0].copy()).cuda())
    graph.replay()
    torch.cuda.synchronize()
    assert_close(product.cpu().numpy(), reference(dense, new_b, None, 1, 0, False), "float32")
    assert_close(matvec.cpu().numpy(), reference(dense, new_b[:, 0], None, 2.0, 0, False), "float32")
    mm.free()
    mv.free()


def test_cupy_stream_and_function_form_cache(rng):
    _library("cupy")
    import cupy

    plan_cache.clear()
    dense, b, _ = _operands(rng, (64, 48), 4, "float64")
    a = _on_gpu("cupy", dense)
    stream = cupy.cuda.Stream(non_blocking=True)
    # The operands live until the stream is done: CuPy's pool would hand a freed b to the next
    # array (written on the default stream, which a non-blocking stream does not wait for).
    b_first, b_second = _dense("cupy", b), _dense("cupy", 2 * b)
    cupy.cuda.Device().synchronize()
    first = matmul(a, b_first, stream=stream)
    second = matmul(a, b_second, stream=stream)
    stream.synchronize()
    assert len(plan_cache) == 1
    assert_close(to_host(first), reference(dense, b, None, 1, 0, False), "float64")
    assert_close(to_host(second), reference(dense, 2 * b, None, 1, 0, False), "float64")
    plan_cache.clear()


def test_dense_operand_of_another_library_is_refused(rng):
    torch = torch_with_cuda()
    a = torch.eye(4, device="cuda").to_sparse_csr()
    from nvmathx import UnsupportedOperandError

    with pytest.raises(UnsupportedOperandError, match="^b: is a numpy array"):
        matmul(a, np.ones(4, np.float32))
    with pytest.raises(OperandError, match="^b: lives in host memory"):
        matmul(a, torch.ones(4))
    sp.csr_array(np.eye(2))  # (scipy stays importable alongside)
