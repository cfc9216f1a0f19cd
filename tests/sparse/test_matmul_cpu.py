"""nvmathx.sparse.matmul and Matmul on the CPU execution space (scipy), against numpy in float64 on
dense copies of the operands."""

import gc

import numpy as np
import pytest
import scipy.sparse as sp

import nvmathx
from nvmathx import InvalidStateError, OperandError, UnsupportedLayoutError, UnsupportedOperandError
from nvmathx.sparse import Matmul, MatmulOptions, matmul, plan_cache, plan_key

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

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # torch: "sparse CSR support is in beta"

DTYPES = ["float32", "float64", "complex64", "complex128"]


def _operands(rng, shape, n, dtype, *, with_c=False, **kwargs):
    dense, b, c = random_operands(rng, shape, n, dtype, **kwargs)
    return dense, b, c if with_c else None


@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("vector", [False, True])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("dtype", DTYPES)
def test_scipy_operands(rng, dtype, index_dtype, vector, transpose):
    dense, b, _ = _operands(rng, (13, 9), 4, dtype, vector=vector, empty_rows=(0, 5), transpose=transpose)
    a = make_sparse("scipy", csr_parts(dense, index_dtype), dense.shape)
    result = matmul(a, b, transpose_a=transpose)
    assert isinstance(result, np.ndarray) and result.dtype == np.dtype(dtype)
    assert result.shape == ((9,) if transpose else (13,)) + (() if vector else (4,))
    assert_close(result, reference(dense, b, None, 1, 0, transpose), dtype)


@pytest.mark.parametrize("alpha, beta", [(1, 0), (2.5, 0), (1, 1), (-0.5, 2.0), (0, 3.0)])
@pytest.mark.parametrize("vector", [False, True])
def test_alpha_beta_c(rng, alpha, beta, vector):
    dense, b, c = _operands(rng, (8, 11), 3, "float64", vector=vector, with_c=True)
    a = sp.csr_array(dense)
    c_before = c.copy()
    result = matmul(a, b, c, alpha=alpha, beta=beta)
    assert_close(result, reference(dense, b, c, alpha, beta, False), "float64")
    np.testing.assert_array_equal(c, c_before)  # c is read, never written


def test_complex_scalars(rng):
    dense, b, c = _operands(rng, (6, 5), 2, "complex128", with_c=True)
    result = matmul(sp.csr_array(dense), b, c, alpha=1 - 2j, beta=0.5j)
    assert_close(result, reference(dense, b, c, 1 - 2j, 0.5j, False), "complex128")


def test_beta_zero_does_not_read_c(rng):
    dense, b, _ = _operands(rng, (5, 4), 3, "float64")
    c = np.full((5, 3), np.nan)
    result = matmul(sp.csr_array(dense), b, c, beta=0)
    assert np.isfinite(result).all()
    assert_close(result, reference(dense, b, None, 1, 0, False), "float64")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("index_dtype", [torch.int32, torch.int64])
def test_torch_cpu_operands(rng, dtype, index_dtype):
    torch_dtype = getattr(torch, dtype)
    dense, b, c = _operands(rng, (10, 7), 3, "complex128" if dtype.startswith("complex") else "float64",
                            with_c=True)
    # the values as torch rounds them: the reference is computed from those
    dense_t = torch.from_numpy(dense).to(torch_dtype)
    a = dense_t.to_sparse_csr()
    a = torch.sparse_csr_tensor(a.crow_indices().to(index_dtype), a.col_indices().to(index_dtype), a.values(),
                                a.shape)
    b_t, c_t = torch.from_numpy(b).to(torch_dtype), torch.from_numpy(c).to(torch_dtype)
    result = matmul(a, b_t, c_t, alpha=2.0, beta=-1.0)
    assert isinstance(result, torch.Tensor) and result.dtype == torch_dtype and result.device.type == "cpu"
    wide = torch.complex128 if dtype.startswith("complex") else torch.float64
    expected = reference(*(t.to(wide).numpy() for t in (dense_t, b_t, c_t)), 2.0, -1.0, False)
    assert_close(result.to(wide).numpy(), expected, dtype)


@pytest.mark.parametrize("library", ["scipy", "torch"])
@pytest.mark.parametrize("vector", [False, True])
def test_unsorted_and_duplicate_indices_are_summed(rng, library, vector):
    dense, b, _ = _operands(rng, (9, 12), 5, "float64", vector=vector, density=0.5, empty_rows=(3,))
    a = make_sparse(library, scrambled_parts(rng, dense, np.int64), dense.shape)
    result = to_host(matmul(a, make_dense(library, b)))
    assert_close(result, reference(dense, b, None, 1, 0, False), "float64")


@pytest.mark.parametrize("library", ["scipy", "torch"])
@pytest.mark.parametrize("layout", ["csc", "coo"])
def test_csc_and_coo_operands(rng, library, layout):
    dense, b, _ = _operands(rng, (7, 6), 2, "float64")
    if library == "scipy":
        a = sp.csr_array(dense).asformat(layout)
    else:
        a = torch.from_numpy(dense).to_sparse_csc() if layout == "csc" else torch.from_numpy(dense).to_sparse()
    result = to_host(matmul(a, make_dense(library, b)))
    assert_close(result, reference(dense, b, None, 1, 0, False), "float64")


@pytest.mark.parametrize("shape, n", [((0, 0), 3), ((1, 1), 1), ((3, 0), 2), ((0, 4), 2), ((4, 5), 0)])
@pytest.mark.parametrize("transpose", [False, True])
def test_empty_and_tiny(rng, shape, n, transpose):
    dense, b, c = _operands(rng, shape, n, "float64", with_c=True, density=0.9, transpose=transpose)
    result = matmul(sp.csr_array(dense), b, c, alpha=2.0, beta=0.5, transpose_a=transpose)
    expected = reference(dense, b, c, 2.0, 0.5, transpose)
    assert result.shape == expected.shape
    assert_close(result, expected, "float64")


def test_matrix_without_entries(rng):
    _, b, c = _operands(rng, (6, 4), 3, "float32", with_c=True)
    a = sp.csr_array((6, 4), dtype=np.float32)
    assert_close(matmul(a, b, c, beta=2.0), 2.0 * c.astype(np.float64), "float32")


def test_dense_operand_layouts(rng):
    dense, _, _ = _operands(rng, (8, 6), 1, "float64")
    a = sp.csr_array(dense)
    wide = rng.standard_normal((6, 10))
    for b in (np.asfortranarray(wide), wide[:, ::2], wide[:, 3:4], wide[:, 0]):
        assert_close(matmul(a, b), reference(dense, b, None, 1, 0, False), "float64")


def test_lists_are_taken_as_numpy_arrays():
    a = sp.csr_array(np.array([[1.0, 2.0], [0.0, 3.0]]))
    np.testing.assert_array_equal(matmul(a, [1.0, 1.0]), [3.0, 3.0])


def test_dense_operand_of_another_library_is_refused():
    a = sp.csr_array(np.eye(3))
    with pytest.raises(UnsupportedOperandError, match=r"^b: is a torch array but a is a scipy.sparse matrix"):
        matmul(a, torch.ones(3, dtype=torch.float64))
    with pytest.raises(UnsupportedOperandError, match=r"^c: is a numpy array but a is a torch sparse tensor"):
        matmul(torch.eye(3, dtype=torch.float64).to_sparse_csr(), torch.ones(3, dtype=torch.float64), np.ones(3),
               beta=1)


# -- stateful -----------------------------------------------------------------------------------


def test_stateful_life_cycle(rng):
    dense, b, c = _operands(rng, (9, 7), 3, "float64", with_c=True)
    a = sp.csr_array(dense)
    with Matmul(a, b, c, alpha=2.0, beta=1.0) as mm:
        assert mm.result_shape == (9, 3) and mm.result_dtype == "float64"
        with pytest.raises(InvalidStateError, match="plan"):
            mm.execute()
        mm.plan()
        assert_close(mm.execute(), reference(dense, b, c, 2.0, 1.0, False), "float64")
        # new values of the same pattern, new b and c, new scalars
        new_a = sp.csr_array((a.data * -3.0, a.indices.copy(), a.indptr.copy()), shape=a.shape)
        new_b, new_c = rng.standard_normal(b.shape), rng.standard_normal(c.shape)
        mm.reset_operands(new_a, new_b, new_c, alpha=0.5, beta=-2.0)
        assert_close(mm.execute(), reference(new_a.toarray(), new_b, new_c, 0.5, -2.0, False), "float64")
        mm.reset_operands(b=b)
        assert_close(mm.execute(), reference(new_a.toarray(), b, new_c, 0.5, -2.0, False), "float64")
    with pytest.raises(InvalidStateError, match="freed"):
        mm.execute()
    with pytest.raises(InvalidStateError, match="freed"):
        mm.reset_operands(b=b)
    mm.free()  # twice is fine


def test_reset_refuses_another_pattern_shape_or_dtype(rng):
    dense, b, _ = _operands(rng, (6, 6), 2, "float64", density=0.5)
    a = sp.csr_array(dense)
    mm = Matmul(a, b)
    mm.plan()
    moved = sp.csr_array((a.data, (a.indices + 1) % 6, a.indptr), shape=a.shape)
    with pytest.raises(OperandError, match=r"^a: has another sparsity pattern"):
        mm.reset_operands(moved)
    with pytest.raises(OperandError, match=r"^a: expected"):
        mm.reset_operands(sp.csr_array(np.eye(6)))
    with pytest.raises(OperandError, match=r"^b: expected shape \(6, 2\)"):
        mm.reset_operands(b=np.ones((6, 3)))
    with pytest.raises(OperandError, match=r"^c: was not given"):
        mm.reset_operands(c=np.ones((6, 2)))
    assert_close(mm.execute(), reference(dense, b, None, 1, 0, False), "float64")  # unchanged


def test_stateful_with_torch_matrix_and_transpose(rng):
    dense, b, _ = _operands(rng, (5, 8), 2, "float32", transpose=True)
    a = torch.from_numpy(dense).to_sparse_csr()
    mm = Matmul(a, torch.from_numpy(b), transpose_a=True)
    mm.plan()
    result = mm.execute()
    assert isinstance(result, torch.Tensor) and result.shape == (8, 2)
    assert_close(result.numpy(), reference(dense, b, None, 1, 0, True), "float32")
    mm.free()


def test_freed_matmul_is_collected_without_warnings(rng):
    dense, b, _ = _operands(rng, (4, 4), 1, "float64")
    mm = Matmul(sp.csr_array(dense), b)
    mm.plan()
    del mm
    gc.collect()


# -- the function form's cache ---------------------------------------------------------------------


def test_plan_cache_is_hit_by_operands_of_one_kind(rng):
    plan_cache.clear()
    dense, b, _ = _operands(rng, (7, 5), 2, "float64")
    a = sp.csr_array(dense)
    first = matmul(a, b)
    second = matmul(sp.csr_array(dense * 2), b * 3)
    assert_close(first, reference(dense, b, None, 1, 0, False), "float64")
    assert_close(second, reference(dense * 2, b * 3, None, 1, 0, False), "float64")
    assert len(plan_cache) == 1
    matmul(a, b, transpose_a=False, options={"algorithm": "csr_alg1"})
    assert len(plan_cache) == 2
    plan_cache.clear()


def test_plan_key():
    a = sp.csr_array(np.eye(3))
    b = np.ones((3, 2))
    assert plan_key(a, b) == plan_key(sp.csr_array(np.eye(3) * 2), b + 1)
    assert plan_key(a, b) != plan_key(a, b, transpose_a=True)
    assert plan_key(a, b) != plan_key(a, np.ones((3, 4)))
    assert plan_key(a, b) != plan_key(a, np.ones((3, 2), np.float32))
    assert plan_key(a, b) != plan_key(a, b, options=MatmulOptions(algorithm="csr_alg2"))
    hash(plan_key(a, b, np.ones((3, 2)), execution="cpu"))


def test_gpu_layout_rules_are_checked_without_a_gpu():
    from nvmathx.sparse._problem import dense_layout

    assert dense_layout((4, 3), (3, 1), "b") == ("row", 3)
    assert dense_layout((4, 3), (5, 1), "b") == ("row", 5)
    assert dense_layout((4, 3), (1, 4), "b") == ("col", 4)
    assert dense_layout((4, 1), (1, 1), "b") == ("row", 1)
    assert dense_layout((4, 1), (7, 1), "b") == ("row", 7)
    assert dense_layout((1, 3), (3, 5), "b") == ("col", 5)
    assert dense_layout((5,), (1,), "b") == ("vector", 1)
    assert dense_layout((0, 3), (0, 0), "b") == ("row", 3)  # cupy's strides of an empty matrix
    assert dense_layout((4, 0), (0, 0), "b") == ("row", 1)
    with pytest.raises(UnsupportedLayoutError, match="^b: a vector with stride 2"):
        dense_layout((5,), (2,), "b")
    with pytest.raises(UnsupportedLayoutError, match="^c: strides"):
        dense_layout((4, 3), (6, 2), "c")


def test_sparse_is_a_public_area():
    assert "sparse" in nvmathx.__all__
    for name in ("Matmul", "matmul", "MatmulOptions", "plan_cache", "plan_key"):
        assert name in nvmathx.sparse.__all__
        assert (getattr(nvmathx.sparse, name).__doc__ or "").strip()


def test_function_form_keeps_no_operand_alive(rng):
    import weakref

    plan_cache.clear()
    dense, b, c = _operands(rng, (6, 5), 2, "float64", with_c=True)
    refs = [weakref.ref(x) for x in (b, c)]
    matmul(sp.csr_array(dense), b, c, beta=1.0)
    del b, c
    gc.collect()
    assert all(ref() is None for ref in refs) and len(plan_cache) == 1
    plan_cache.clear()


def test_importing_the_area_imports_no_array_library():
    import subprocess
    import sys

    code = ("import sys, nvmathx.sparse; "
            "print(sorted(m for m in ('torch', 'cupy', 'scipy.sparse', 'numba') if m in sys.modules))")
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert completed.stdout.strip() == "[]"
