"""The GPU code path of nvmathx.sparse.matmul on a machine without a GPU: cuSPARSE and the device
replaced by the host model of tests/sparse/_fake_cusparse.py (host operands with execution="cuda",
and torch tensors presented as CUDA tensors). Checked against numpy in float64."""

import numpy as np
import pytest
import scipy.sparse as sp

from helpers.fake_torch_device import present_torch_as_device
from nvmathx import OperandError, OptionsError, UnsupportedLayoutError
from nvmathx.sparse import Matmul, matmul, plan_cache

from ._fake_cusparse import install
from ._matrices import assert_close, random_dense, random_operands, reference

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # torch: "sparse CSR support is in beta"


@pytest.fixture
def fake(monkeypatch):
    cusparse, _ = install(monkeypatch)
    yield cusparse
    plan_cache.clear()


_operands = random_operands


@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("vector", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
def test_host_operands_on_the_fake_gpu(fake, rng, dtype, vector, transpose):
    dense, b, c = _operands(rng, (11, 7), 3, dtype, vector=vector, transpose=transpose)
    alpha, beta = (1.5 - 0.5j, 0.25j) if dtype.startswith("complex") else (1.5, -2.0)
    result = matmul(sp.csr_array(dense), b, c, alpha=alpha, beta=beta, transpose_a=transpose, execution="cuda")
    assert isinstance(result, np.ndarray) and result.dtype == np.dtype(dtype)
    assert_close(result, reference(dense, b, c, alpha, beta, transpose), dtype)
    assert [name for name, _ in fake.calls] == ["spmv" if vector else "spmm"]  # the function form: no preprocess
    assert len(fake.live) == 3  # the cached plan's A, B and C descriptors ...
    plan_cache.clear()
    assert not fake.live  # ... destroyed with it


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("vector", [False, True])
def test_torch_operands_on_the_fake_gpu(fake, monkeypatch, rng, dtype, vector):
    torch = present_torch_as_device(monkeypatch)
    torch_dtype = getattr(torch, dtype)
    dense, b, c = _operands(rng, (9, 8), 4, "float64", vector=vector)
    dense_t, b_t, c_t = (torch.from_numpy(x).to(torch_dtype) for x in (dense, b, c))
    with Matmul(dense_t.to_sparse_csr(), b_t, c_t, alpha=2.0, beta=0.5) as mm:
        mm.plan()
        result = mm.execute()
    assert isinstance(result, torch.Tensor) and result.dtype == torch_dtype
    expected = reference(*(x.double().numpy() for x in (dense_t, b_t, c_t)), 2.0, 0.5, False)
    assert_close(result.double().numpy(), expected, dtype)
    assert [name for name, _ in fake.calls] == (["spmv"] if vector else ["spmm_preprocess", "spmm"])
    assert not fake.live  # free() destroyed every descriptor


def test_column_major_and_strided_b(fake, monkeypatch, rng):
    torch = present_torch_as_device(monkeypatch)
    dense, _, _ = _operands(rng, (10, 6), 1, "float64")
    a = torch.from_numpy(dense).to_sparse_csr()
    wide = torch.from_numpy(rng.standard_normal((6, 9)))
    for b in (wide.T.contiguous().T, wide[:, 2:5], wide[:, 4:5]):
        result = matmul(a, b)
        assert_close(result.numpy(), reference(dense, b.numpy(), None, 1, 0, False), "float64")
    assert matmul(a, wide.T.contiguous().T).stride() == (1, 10)  # the result takes b's order


def test_layouts_cusparse_cannot_take_are_refused(fake, monkeypatch, rng):
    torch = present_torch_as_device(monkeypatch)
    a = torch.from_numpy(random_dense(rng, (5, 6), np.float64)).to_sparse_csr()
    with pytest.raises(UnsupportedLayoutError, match="^b: a vector with stride 2"):
        matmul(a, torch.ones(12, dtype=torch.float64)[::2])
    with pytest.raises(UnsupportedLayoutError, match="^c: has strides"):
        matmul(a, torch.ones(6, 3, dtype=torch.float64), torch.ones(3, 5, dtype=torch.float64).T, beta=1.0)


@pytest.mark.parametrize("shape, n, density", [((6, 5), 3, 0.0), ((6, 0), 3, 0.5), ((0, 4), 2, 0.5),
                                               ((4, 5), 0, 0.5), ((0, 0), 2, 0.5), ((1, 1), 1, 1.0)])
@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("vector", [False, True])
def test_zero_products_and_empty_results(fake, rng, shape, n, density, transpose, vector):
    dense, b, c = _operands(rng, shape, n, "float64", vector=vector, transpose=transpose, density=density)
    result = matmul(sp.csr_array(dense), b, c, alpha=3.0, beta=-0.5, transpose_a=transpose, execution="cuda")
    expected = reference(dense, b, c, 3.0, -0.5, transpose)
    assert result.shape == expected.shape
    assert_close(result, expected, "float64")


def test_beta_zero_leaves_garbage_unread(fake, rng):
    dense, b, _ = _operands(rng, (7, 5), 2, "float64")
    c = np.full((7, 2), np.nan)
    result = matmul(sp.csr_array(dense), b, c, beta=0.0, execution="cuda")
    assert_close(result, reference(dense, b, None, 1, 0, False), "float64")


def test_stateful_reset_on_the_fake_gpu(fake, monkeypatch, rng):
    torch = present_torch_as_device(monkeypatch)
    dense, b, c = _operands(rng, (12, 9), 4, "float64")
    a = torch.from_numpy(dense).to_sparse_csr()
    mm = Matmul(a, torch.from_numpy(b), torch.from_numpy(c), beta=1.0)
    mm.plan()
    assert_close(mm.execute().numpy(), reference(dense, b, c, 1, 1.0, False), "float64")
    same = torch.sparse_csr_tensor(a.crow_indices().clone(), a.col_indices().clone(), a.values() * 3, a.shape)
    new_b, new_c = rng.standard_normal(b.shape), rng.standard_normal(c.shape)
    mm.reset_operands(same, torch.from_numpy(new_b), torch.from_numpy(new_c), alpha=-1.0, beta=2.0)
    assert_close(mm.execute().numpy(), reference(3 * dense, new_b, new_c, -1.0, 2.0, False), "float64")
    moved = torch.sparse_csr_tensor(a.crow_indices(), (a.col_indices() + 1) % 9, a.values(), a.shape)
    with pytest.raises(OperandError, match="^a: has another sparsity pattern"):
        mm.reset_operands(moved)
    with pytest.raises(OperandError, match="^b: expected"):
        mm.reset_operands(b=torch.ones(9, 5, dtype=torch.float64))
    mm.free()
    assert not fake.live


@pytest.mark.parametrize("vector", [False, True])
def test_results_where_the_last_one_was_point_no_descriptor_again(fake, monkeypatch, rng, vector):
    from nvmathx._bindings import cusparse

    torch = present_torch_as_device(monkeypatch)
    dense, b, _ = _operands(rng, (10, 7), 3, "float32", vector=vector)
    pointed = []
    name = "dn_vec_set_values" if vector else "dn_mat_set_values"
    setter = getattr(cusparse, name)
    monkeypatch.setattr(cusparse, name, lambda desc, values: (pointed.append(values), setter(desc, values)))
    with Matmul(torch.from_numpy(dense).to_sparse_csr(), torch.from_numpy(b)) as mm:
        mm.plan()
        plan = mm._plan
        allocate = plan.allocate
        results = [allocate(None) for _ in range(2)]
        # the first execute() hands out the result plan() made; then a block twice (a caching
        # allocator), another, and the first again
        order = [0, 0, 1, 0]
        monkeypatch.setattr(plan, "allocate", lambda stream: results[order.pop(0)])
        outputs = [mm.execute() for _ in range(5)]
        for output in outputs:
            assert_close(output.numpy(), reference(dense, b, None, 1, 0, False), "float32")
    first, second = (ptr for _, ptr in results)
    assert pointed == [first, second, first] and not order


def test_staged_stateful_reset(fake, rng):
    dense, b, _ = _operands(rng, (8, 8), 2, "float32")
    a = sp.csr_array(dense)
    with Matmul(a, b, execution="cuda") as mm:
        mm.plan()
        assert_close(mm.execute(), reference(dense, b, None, 1, 0, False), "float32")
        mm.reset_operands(sp.csr_array((a.data * 2, a.indices, a.indptr), shape=a.shape), b * 3)
        assert_close(mm.execute(), reference(2 * dense, 3 * b, None, 1, 0, False), "float32")


@pytest.mark.parametrize("algorithm, vector, code", [("default", False, 0), ("csr_alg1", False, 4),
                                                     ("csr_alg2", False, 6), ("csr_alg3", False, 12),
                                                     ("default", True, 0), ("csr_alg1", True, 2),
                                                     ("csr_alg2", True, 3)])
def test_algorithms_reach_cusparse(fake, rng, algorithm, vector, code):
    dense, b, _ = _operands(rng, (6, 6), 2, "float64", vector=vector)
    result = matmul(sp.csr_array(dense), b, options={"algorithm": algorithm}, execution="cuda")
    assert_close(result, reference(dense, b, None, 1, 0, False), "float64")
    assert fake.calls[-1] == ("spmv" if vector else "spmm", code)


def test_csr_alg3_is_not_an_spmv_algorithm(fake, rng):
    dense, b, _ = _operands(rng, (6, 6), 2, "float64", vector=True)
    with pytest.raises(OptionsError, match="^options.algorithm"):
        matmul(sp.csr_array(dense), b, options={"algorithm": "csr_alg3"}, execution="cuda")


def test_function_form_serves_another_pattern_from_its_cache(fake, monkeypatch, rng):
    torch = present_torch_as_device(monkeypatch)
    first = random_dense(rng, (10, 10), np.float64, density=0.3)
    second = np.zeros_like(first)
    second.flat[rng.permutation(100)[:np.count_nonzero(first)]] = 1.0  # the same number of entries elsewhere
    b = rng.standard_normal((10, 3))
    for dense in (first, second, first):
        result = matmul(torch.from_numpy(dense).to_sparse_csr(), torch.from_numpy(b))
        assert_close(result.numpy(), reference(dense, b, None, 1, 0, False), "float64")
    assert len(plan_cache) == 1 and [name for name, _ in fake.calls] == ["spmm"] * 3


def test_function_form_keeps_no_operand_alive(fake, rng):
    import gc
    import weakref

    dense, b, c = _operands(rng, (6, 5), 2, "float64")
    a = sp.csr_array(dense)
    refs = [weakref.ref(x) for x in (a, b, c)]
    result = matmul(a, b, c, beta=1.0, execution="cuda")
    assert_close(result, reference(dense, b, c, 1, 1.0, False), "float64")
    del a, b, c
    gc.collect()
    assert all(ref() is None for ref in refs) and len(plan_cache) == 1


def test_misaligned_dense_operands_are_refused(fake, monkeypatch, rng):
    torch = present_torch_as_device(monkeypatch)
    a = torch.from_numpy(random_dense(rng, (5, 6), np.float32)).to_sparse_csr()
    storage = torch.ones(32, dtype=torch.float32)
    with pytest.raises(UnsupportedLayoutError, match="^b: starts at .* not at a multiple of 16 bytes"):
        matmul(a, storage[1:7])
    mm = Matmul(a, storage[:6])
    mm.plan()
    with pytest.raises(UnsupportedLayoutError, match="^b: starts at"):
        mm.reset_operands(b=storage[1:7], alpha=2.0)
    assert_close(mm.execute().numpy(), reference(a.to_dense().numpy(), np.ones(6), None, 1, 0, False), "float32")
    mm.free()


def test_function_form_follows_alpha_and_beta_from_call_to_call(fake, monkeypatch, rng):
    # the cached plan stores scalars only when they change: each call must still use its own
    torch = present_torch_as_device(monkeypatch)
    dense, b, c = _operands(rng, (10, 6), 2, "float64")
    a, b_t, c_t = torch.from_numpy(dense).to_sparse_csr(), torch.from_numpy(b), torch.from_numpy(c)
    plan_cache.clear()
    for alpha, beta in [(2.0, 0.5), (2.0, 0.5), (2, 0.5), (-1.0, 0.5), (-1.0, 0), (np.float64(3.0), -2.0)]:
        result = matmul(a, b_t, c_t, alpha=alpha, beta=beta)
        assert_close(result.numpy(), reference(dense, b, c, float(alpha), beta, False), "float64")
    info = plan_cache.info()
    assert (info.misses, info.hits) == (1, 5)  # one plan served every call


def test_function_form_points_descriptors_only_at_moved_operands(fake, monkeypatch, rng):
    # a cached plan's descriptors of a and b are set only when the call's arrays lie elsewhere
    from nvmathx._bindings import cusparse

    torch = present_torch_as_device(monkeypatch)
    created, moved = [], []
    create_dn_vec, set_pointers, set_values = cusparse.create_dn_vec, cusparse.csr_set_pointers, \
        cusparse.dn_vec_set_values
    monkeypatch.setattr(cusparse, "create_dn_vec", lambda *args: created.append(create_dn_vec(*args)) or created[-1])
    monkeypatch.setattr(cusparse, "csr_set_pointers", lambda *args: moved.append("a") or set_pointers(*args))
    monkeypatch.setattr(cusparse, "dn_vec_set_values",
                        lambda descriptor, ptr: moved.append("b" if descriptor == created[0] else "result")
                        or set_values(descriptor, ptr))
    dense, b, _ = _operands(rng, (10, 6), None, "float64", vector=True)
    a, b_t = torch.from_numpy(dense).to_sparse_csr(), torch.from_numpy(b)
    plan_cache.clear()
    for _ in range(3):
        assert_close(matmul(a, b_t).numpy(), dense @ b, "float64")
    assert "a" not in moved and "b" not in moved  # the same arrays every call: already pointed at
    moved.clear()
    dense2 = dense * 2
    assert_close(matmul(torch.from_numpy(dense2).to_sparse_csr(), b_t).numpy(), dense2 @ b, "float64")
    assert_close(matmul(a, torch.from_numpy(b + 1)).numpy(), dense @ (b + 1), "float64")
    assert [name for name in moved if name != "result"] == ["a", "a", "b"]
