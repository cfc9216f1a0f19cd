"""Sparse operands (the operand layer in nvmathx._core.tensor): CSR from scipy and torch, CSC/COO
converted, index dtypes, canonical format, and refusals."""

import numpy as np
import pytest
import scipy.sparse as sp

from nvmathx import OperandError, UnsupportedOperandError
from nvmathx._core.tensor import check_dense_companion, host_array, is_sparse, wrap_operand, wrap_sparse_operand

from ._matrices import csr_parts, dense_from_parts, random_dense, scipy_csr, scrambled_parts

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # torch: "sparse CSR support is in beta"


def dense_of(operand):
    arrays = (host_array(array).astype(np.complex128) if array is operand.values else host_array(array)
              for array in (operand.indptr, operand.indices, operand.values))
    return dense_from_parts(*arrays, operand.shape)


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("kind", ["csr_matrix", "csr_array"])
def test_scipy_csr_is_viewed_without_a_copy(rng, kind, index_dtype):
    dense = random_dense(rng, (7, 5), np.float64)
    matrix = scipy_csr(csr_parts(dense, index_dtype), dense.shape, kind)
    operand = wrap_sparse_operand(matrix, "a")
    assert (operand.package, operand.format, operand.shape, operand.nnz) == ("scipy", "csr", (7, 5), matrix.nnz)
    assert operand.index_dtype == index_dtype and operand.dtype == np.float64 and operand.device_id == -1
    assert operand.values.ptr == matrix.data.ctypes.data  # no copy
    assert operand.converted_from is None and not operand.canonicalized
    assert operand.dense_package == "numpy"
    np.testing.assert_array_equal(dense_of(operand), dense)


@pytest.mark.parametrize("index_dtype", [torch.int32, torch.int64])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex64, torch.complex128,
                                   torch.float16, torch.bfloat16])
def test_torch_csr(rng, dtype, index_dtype):
    dense = random_dense(rng, (6, 8), np.float64)
    indptr, indices, data = csr_parts(dense, np.int64)
    indptr, indices = (torch.from_numpy(array).to(index_dtype) for array in (indptr, indices))
    tensor = torch.sparse_csr_tensor(indptr, indices, torch.from_numpy(data).to(dtype), dense.shape)
    operand = wrap_sparse_operand(tensor, "a")
    assert operand.package == "torch" and operand.dense_package == "torch"
    assert operand.index_dtype == np.dtype(str(index_dtype).rpartition(".")[2])
    assert operand.dtype.name == str(dtype).rpartition(".")[2]
    assert operand.values.ptr == tensor.values().data_ptr()
    expected = torch.from_numpy(dense).to(dtype).to(torch.float64).numpy()
    np.testing.assert_array_equal(dense_of(operand).real, expected)


@pytest.mark.parametrize("layout", ["csc", "coo"])
def test_scipy_csc_and_coo_are_converted_once(rng, layout):
    dense = random_dense(rng, (5, 9), np.complex128)
    operand = wrap_sparse_operand(sp.csr_array(dense).asformat(layout), "b")
    assert operand.converted_from == layout
    np.testing.assert_array_equal(dense_of(operand), dense)


@pytest.mark.parametrize("layout", ["csc", "coo"])
def test_torch_csc_and_coo_are_converted_once(rng, layout):
    dense = random_dense(rng, (5, 9), np.float32)
    tensor = torch.from_numpy(dense)
    operand = wrap_sparse_operand(tensor.to_sparse_csc() if layout == "csc" else tensor.to_sparse(), "a")
    assert operand.converted_from == layout and operand.format == "csr"
    np.testing.assert_array_equal(dense_of(operand), dense)


def test_uncoalesced_torch_coo_sums_duplicates():
    indices = torch.tensor([[0, 0, 1, 0], [1, 1, 0, 1]])
    tensor = torch.sparse_coo_tensor(indices, torch.tensor([1.0, 2.0, 3.0, 4.0]), (2, 2))
    np.testing.assert_array_equal(dense_of(wrap_sparse_operand(tensor, "a")), [[0.0, 7.0], [3.0, 0.0]])


@pytest.mark.parametrize("library", ["scipy", "torch"])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_unsorted_and_duplicate_columns_are_summed_as_scipy_does(rng, library, index_dtype):
    dense = random_dense(rng, (9, 6), np.float64, density=0.5, empty_rows=(0, 4))
    indptr, indices, data = scrambled_parts(rng, dense, index_dtype)
    if library == "scipy":
        matrix = scipy_csr((indptr, indices, data), dense.shape)
    else:
        matrix = torch.sparse_csr_tensor(torch.from_numpy(indptr), torch.from_numpy(indices), torch.from_numpy(data),
                                         dense.shape)
    operand = wrap_sparse_operand(matrix, "a")
    assert operand.canonicalized and operand.nnz == np.count_nonzero(dense)
    assert operand.index_dtype == index_dtype and operand.obj is matrix
    np.testing.assert_allclose(dense_of(operand).real, dense, rtol=1e-15, atol=0)
    if library == "scipy":
        assert matrix.nnz == len(data)  # the caller's matrix is left as it was


def test_torch_canonical_answer_is_kept_until_the_indices_change(rng, monkeypatch):
    from nvmathx._core.tensor import _sparse

    checks = []
    compute = _sparse._torch_is_canonical
    monkeypatch.setattr(_sparse, "_torch_is_canonical", lambda csr, operand: checks.append(1) or compute(csr, operand))
    dense = random_dense(rng, (8, 8), np.float64, density=0.6)
    tensor = torch.from_numpy(dense).to_sparse_csr()
    for _ in range(3):
        assert not wrap_sparse_operand(tensor, "a").canonicalized
    assert len(checks) == 1  # computed once for this tensor
    columns, offsets = tensor.col_indices(), tensor.crow_indices().tolist()
    row = next(i for i in range(8) if offsets[i + 1] - offsets[i] >= 2)  # (a density of 0.6 has one)
    entries = slice(offsets[row], offsets[row + 1])
    columns[entries] = columns[entries].flip(0).clone()  # in place: unsorted now
    operand = wrap_sparse_operand(tensor, "a")
    assert len(checks) == 3 and operand.canonicalized  # the write was seen (and its sorted copy checked)
    np.testing.assert_allclose(dense_of(operand).real, torch.sparse_csr_tensor(
        tensor.crow_indices(), columns, tensor.values(), dense.shape).to_dense().numpy(), rtol=0, atol=0)


def test_sorted_torch_csr_is_not_copied(rng):
    tensor = torch.from_numpy(random_dense(rng, (6, 6), np.float64, empty_rows=(2,))).to_sparse_csr()
    operand = wrap_sparse_operand(tensor, "a")
    assert not operand.canonicalized and operand.values.ptr == tensor.values().data_ptr()


def test_mixed_index_dtypes_are_widened(rng):
    dense = random_dense(rng, (4, 4), np.float64)
    indptr, indices, data = csr_parts(dense, np.int32)
    matrix = sp.csr_matrix(dense.shape)
    matrix.indptr, matrix.indices, matrix.data = indptr.astype(np.int64), indices, data
    operand = wrap_sparse_operand(matrix, "a")
    assert operand.indptr.dtype == operand.indices.dtype == operand.index_dtype == np.int64
    np.testing.assert_array_equal(dense_of(operand), dense)


@pytest.mark.parametrize("shape", [(0, 0), (1, 1), (3, 0), (0, 4)])
def test_empty_and_tiny_matrices(shape):
    operand = wrap_sparse_operand(sp.csr_array(np.ones(shape)), "a")
    assert operand.shape == shape and operand.nnz == int(np.prod(shape))


def test_same_pattern():
    first = sp.csr_array(np.array([[1.0, 0.0], [2.0, 3.0]]))
    same = sp.csr_array((first.data * 5, first.indices.copy(), first.indptr.copy()), shape=(2, 2))
    other = sp.csr_array(np.array([[1.0, 4.0], [0.0, 3.0]]))
    a = wrap_sparse_operand(first, "a")
    assert a.same_pattern(wrap_sparse_operand(same, "a"))
    assert not a.same_pattern(wrap_sparse_operand(other, "a"))
    assert not a.same_pattern(wrap_sparse_operand(sp.csr_array(np.ones((2, 3))), "a"))
    assert a.key() == wrap_sparse_operand(same, "a").key()


def test_empty_dense_is_the_library_dense_kind():
    scipy_operand = wrap_sparse_operand(sp.csr_array(np.eye(2)), "a")
    torch_operand = wrap_sparse_operand(torch.eye(2).to_sparse_csr(), "a")
    assert isinstance(scipy_operand.empty_dense((2, 3), np.float32), np.ndarray)
    assert isinstance(torch_operand.empty_dense((2, 3), np.float32), torch.Tensor)


def test_is_sparse():
    assert is_sparse(sp.csr_array(np.eye(2))) and is_sparse(torch.eye(2).to_sparse_csr())
    assert is_sparse(torch.eye(2).to_sparse())
    assert not is_sparse(np.eye(2)) and not is_sparse(torch.eye(2)) and not is_sparse([[1.0]])


def test_dense_companion_must_be_of_the_same_library():
    a = wrap_sparse_operand(torch.eye(2).to_sparse_csr(), "a")
    check_dense_companion(a, wrap_operand(torch.ones(2), "b"), "b")
    with pytest.raises(UnsupportedOperandError, match=r"^b: is a numpy array but a is a torch sparse tensor"):
        check_dense_companion(a, wrap_operand(np.ones(2), "b"), "b")


@pytest.mark.parametrize("make, match", [
    (lambda: np.eye(3), "expected a sparse matrix"),
    (lambda: sp.dia_array(np.eye(3)), "DIA matrices are not supported"),
    (lambda: sp.csr_array(np.eye(3, dtype=np.int64)), "values of dtype int64 are not supported"),
    (lambda: torch.eye(3, dtype=torch.int32).to_sparse_csr(), "torch dtype|values of dtype int32"),
    (lambda: torch.ones(2, 3, 3).to_sparse_csr(), "expected a 2-D torch sparse tensor"),
])
def test_refusals_name_the_operand(make, match):
    with pytest.raises(UnsupportedOperandError, match=rf"^a: .*({match})"):
        wrap_sparse_operand(make(), "a")


def test_bad_index_dtype_is_refused():
    matrix = sp.csr_array(np.eye(3))
    matrix.indices = matrix.indices.astype(np.int16)
    matrix.indptr = matrix.indptr.astype(np.int16)
    with pytest.raises(UnsupportedOperandError, match=r"^a: indices of dtype int16"):
        wrap_sparse_operand(matrix, "a")


def test_device_matrix_has_no_host_view():
    operand = wrap_sparse_operand(sp.csr_array(np.eye(2)), "a")
    operand.device_id = 0
    with pytest.raises(OperandError, match="^a: lives on GPU 0"):
        operand.host_csr()
