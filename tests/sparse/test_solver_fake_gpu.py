"""The GPU code path of DirectSolver / spsolve on a machine without a GPU: cuDSS, the solver's
kernels and the device replaced by the host model of tests/sparse/_fake_cudss.py (host operands
with execution="cuda", torch tensors presented as CUDA tensors). References are dense numpy solves."""

import numpy as np
import pytest
import scipy.sparse

from helpers.fake_torch_device import present_torch_as_device
from nvmathx import InvalidStateError, OperandError, OptionsError, SingularMatrixError
from nvmathx.sparse import DirectSolver, spsolve, spsolve_plan_cache, spsolve_plan_key

from ._fake_cudss import host_checksum, install
from ._solver_cases import TOLERANCE, TYPES_OF_DTYPE, right_hand_side, stored, system_matrix

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # torch: "sparse CSR support is in beta"


@pytest.fixture
def fake(monkeypatch):
    cudss = install(monkeypatch)
    yield cudss
    spsolve_plan_cache.clear()


CASES = [(dtype, kind, triangle) for dtype, kinds in TYPES_OF_DTYPE.items() for kind in kinds
         for triangle in (("full",) if kind == "general" else ("lower", "upper"))]


def _full_of(dense, kind, triangle):
    part = np.triu(dense) if triangle == "upper" else np.tril(dense)
    if kind == "general":
        return dense
    strict = part - np.diag(np.diag(part))
    return part + (strict.conj().T if kind in ("hermitian", "hpd") else strict.T)


@pytest.mark.parametrize("dtype, kind, triangle", CASES)
@pytest.mark.parametrize("columns, order", [(None, "C"), (3, "C"), (3, "F")])
def test_host_operands_on_the_fake_gpu(fake, rng, dtype, kind, triangle, columns, order):
    n = 16
    dense = system_matrix(rng, n, dtype, kind)
    b = right_hand_side(rng, n, dtype, columns, order=order)
    x = spsolve(stored(dense, triangle), b, options={"matrix_type": kind, "triangle": triangle}, execution="cuda")
    assert isinstance(x, np.ndarray) and x.shape == b.shape and x.dtype == np.dtype(dtype)
    reference = np.linalg.solve(_full_of(dense, kind, triangle).astype(np.complex128), b.astype(np.complex128))
    assert np.linalg.norm(x - reference) <= TOLERANCE[dtype] * np.linalg.norm(reference)
    assert fake.phases == ["ANALYSIS", "FACTORIZATION", "SOLVE"]


def test_torch_operands_and_the_plan_cache(fake, monkeypatch, rng):
    torch = present_torch_as_device(monkeypatch)
    n = 20
    first = system_matrix(rng, n, np.float64, "general")
    second = first * (1 + rng.random(first.shape)) * (first != 0)
    np.fill_diagonal(second, np.diag(first) * 3)
    b = right_hand_side(rng, n, np.float64, 2)
    a1, a2 = (torch.from_numpy(m).to_sparse_csr() for m in (first, second))
    x1 = spsolve(a1, torch.from_numpy(b))
    assert isinstance(x1, torch.Tensor) and tuple(x1.shape) == (n, 2)
    np.testing.assert_allclose(x1.numpy(), np.linalg.solve(first, b), rtol=1e-10)
    # the same pattern in other arrays: the same key (computed from the indices, not their addresses), a hit
    assert spsolve_plan_key(a2, torch.from_numpy(b)) == spsolve_plan_key(a1, torch.from_numpy(b))
    hits = spsolve_plan_cache.info(0).hits
    x2 = spsolve(a2, torch.from_numpy(b))
    assert spsolve_plan_cache.info(0).hits == hits + 1
    assert fake.phases == ["ANALYSIS", "FACTORIZATION", "SOLVE", "FACTORIZATION", "SOLVE"]
    np.testing.assert_allclose(x2.numpy(), np.linalg.solve(second, b), rtol=1e-10)
    shifted = torch.from_numpy(np.roll(first, 1, axis=1)).to_sparse_csr()
    assert spsolve_plan_key(shifted, torch.from_numpy(b)) != spsolve_plan_key(a1, torch.from_numpy(b))
    x3 = spsolve(shifted, torch.from_numpy(b))  # another pattern: analysed anew
    np.testing.assert_allclose(x3.numpy(), np.linalg.solve(np.roll(first, 1, axis=1), b), rtol=1e-10)
    assert fake.phases[-3:] == ["ANALYSIS", "FACTORIZATION", "SOLVE"]


def test_a_strided_b_is_gathered_into_columns(fake, monkeypatch, rng):
    torch = present_torch_as_device(monkeypatch)
    dense = system_matrix(rng, 12, np.float64, "general")
    wide = right_hand_side(rng, 12, np.float64, 6)
    b = torch.from_numpy(wide)[:, ::2]  # every other column: neither C- nor F-contiguous
    x = spsolve(torch.from_numpy(dense).to_sparse_csr(), b)
    np.testing.assert_allclose(x.numpy(), np.linalg.solve(dense, wide[:, ::2]), rtol=1e-10)


def test_reuse_paths(fake, rng):
    n = 14
    first = system_matrix(rng, n, np.complex128, "general")
    second = first * 2
    b1, b2 = right_hand_side(rng, n, np.complex128), right_hand_side(rng, n, np.complex128)
    with DirectSolver(scipy.sparse.csr_array(first), b1, execution="cuda") as solver:
        solver.plan()
        info = solver.factorize()
        assert info["factor_nnz"] > 0 and info["peak_device_memory"] > 0 and info["inertia"] is None
        np.testing.assert_allclose(solver.solve(), np.linalg.solve(first, b1), rtol=1e-10)
        solver.reset_operands(b=b2)
        np.testing.assert_allclose(solver.solve(), np.linalg.solve(first, b2), rtol=1e-10)
        solver.reset_operands(a=scipy.sparse.csr_array(second))
        with pytest.raises(InvalidStateError):
            solver.solve()
        solver.factorize()
        np.testing.assert_allclose(solver.solve(), np.linalg.solve(second, b2), rtol=1e-10)
        with pytest.raises(OperandError, match="^a: has another sparsity pattern"):
            solver.reset_operands(a=scipy.sparse.csr_array(np.roll(first, 1, axis=0)))
        assert fake.phases == ["ANALYSIS", "FACTORIZATION", "SOLVE", "SOLVE", "FACTORIZATION", "SOLVE"]
    assert list(fake.live) == [min(fake.live)]  # every object but the per-device handle is destroyed


def test_singular_and_inertia(fake, rng):
    dense = system_matrix(rng, 10, np.float64, "general")
    dense[4] = dense[1]
    with pytest.raises(SingularMatrixError, match=r"^a is singular: cuDSS reports a zero pivot") as info:
        spsolve(scipy.sparse.csr_array(dense), np.ones(10), execution="cuda")
    assert info.value.pivot is not None
    symmetric = system_matrix(rng, 10, np.float64, "symmetric")
    with DirectSolver(stored(symmetric, "upper"), np.ones(10), execution="cuda",
                      options={"matrix_type": "symmetric", "triangle": "upper"}) as solver:
        solver.plan()
        eigenvalues = np.linalg.eigvalsh(symmetric)
        assert solver.factorize()["inertia"] == (int((eigenvalues > 0).sum()), int((eigenvalues < 0).sum()))


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("line", ["row", "column"])
def test_an_empty_line_is_structurally_singular(fake, rng, index_dtype, line):
    dense = system_matrix(rng, 9, np.float64, "general")
    if line == "row":
        dense[6] = 0
    else:
        dense[:, 6] = 0
    a = stored(dense, "full", index_dtype)
    with pytest.raises(SingularMatrixError, match=f"^a is singular: its {line} 6 holds no entry") as info:
        spsolve(a, np.ones(9), execution="cuda")
    assert info.value.pivot == 6
    with DirectSolver(a, np.ones(9), execution="cuda") as solver:
        solver.plan()  # the pattern is known to be singular here; factorize() says so, as on the CPU
        with pytest.raises(SingularMatrixError, match=f"its {line} 6"):
            solver.factorize()
        assert "FACTORIZATION" not in fake.phases  # cuDSS would perturb the zero pivot and go on


@pytest.mark.parametrize("triangle", ["lower", "upper"])
def test_one_stored_triangle_is_empty_only_where_row_and_column_both_are(fake, rng, triangle):
    symmetric = system_matrix(rng, 8, np.float64, "symmetric")
    symmetric[0, 0] = symmetric[7, 7] = 0.0  # the first and last rows of one triangle hold no entry ...
    symmetric[0, 1:] = symmetric[1:, 0] = 0.0
    symmetric[0, 3] = symmetric[3, 0] = 1.0  # ... but their columns do
    symmetric[7, :7] = symmetric[:7, 7] = 0.0
    symmetric[7, 2] = symmetric[2, 7] = 1.0
    options = {"matrix_type": "symmetric", "triangle": triangle}
    b = right_hand_side(rng, 8, np.float64)
    x = spsolve(stored(symmetric, triangle), b, execution="cuda", options=options)
    np.testing.assert_allclose(x, np.linalg.solve(symmetric, b), rtol=TOLERANCE["float64"])
    symmetric[3, 0] = symmetric[0, 3] = 0.0  # line 0 now holds nothing at all
    with pytest.raises(SingularMatrixError, match="its row 0 holds no entry"):
        spsolve(stored(symmetric, triangle), b, execution="cuda", options=options)


def test_check_finite_on_the_device(fake, monkeypatch, rng):
    torch = present_torch_as_device(monkeypatch)
    dense = system_matrix(rng, 6, np.float64, "general")
    bad = dense.copy()
    bad[2, 2] = np.inf
    with pytest.raises(OperandError, match="^a: holds NaN"):
        spsolve(torch.from_numpy(bad).to_sparse_csr(), torch.ones(6, dtype=torch.float64))
    b = torch.ones((6, 4), dtype=torch.float64)
    b[3, 2] = float("nan")
    with pytest.raises(OperandError, match="^b: holds NaN"):
        spsolve(torch.from_numpy(dense).to_sparse_csr(), b[:, ::2])  # strided: checked in its gathered copy


@pytest.fixture
def releases(monkeypatch):
    """Install the host model as a given cuDSS release; the plans it made are freed with it."""
    yield lambda release: install(monkeypatch, release)
    spsolve_plan_cache.clear()


@pytest.mark.parametrize("release", [(0, 8, 0), (1, 0, 0)])
def test_transposed_solves_follow_the_release(releases, rng, release):
    fake = releases(release)
    dense = system_matrix(rng, 9, np.complex128, "general")
    b = right_hand_side(rng, 9, np.complex128)
    options = {"solve_mode": "conjugate_transpose"}
    if not fake.dialect.transposed_solves:
        with pytest.raises(OptionsError, match="^options.solve_mode: transposed solves need cuDSS 1.0"):
            spsolve(scipy.sparse.csr_array(dense), b, options=options, execution="cuda")
        with pytest.raises(OptionsError, match="^options.pivoting: 'bunch_kaufman' needs cuDSS 1.0"):
            spsolve(scipy.sparse.csr_array(dense), b, options={"pivoting": "bunch_kaufman"}, execution="cuda")
        return
    x = spsolve(scipy.sparse.csr_array(dense), b, options=options, execution="cuda")
    np.testing.assert_allclose(x, np.linalg.solve(dense.conj().T, b), rtol=1e-10)


def test_empty_matrix_runs_no_cudss(fake):
    x = spsolve(scipy.sparse.csr_array((0, 0), dtype=np.float64), np.zeros(0), execution="cuda")
    assert x.shape == (0,) and fake.phases == []


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_the_checksum_kernel_computes_its_documented_sum(fake, monkeypatch, rng, index_dtype):
    """The kernel's source, run on the host, against a numpy model of its arithmetic; one entry
    moved changes it."""
    from nvmathx._core.streams import resolve_stream
    from nvmathx._core.tensor import wrap_sparse_operand
    from nvmathx.sparse._solver_pattern import pattern_checksum

    torch = present_torch_as_device(monkeypatch)
    dense = system_matrix(rng, 30, np.float64, "general")
    csr = stored(dense, "full", index_dtype)
    make = lambda m: torch.sparse_csr_tensor(torch.from_numpy(m.indptr), torch.from_numpy(m.indices),  # noqa: E731
                                             torch.from_numpy(m.data), m.shape)
    a = wrap_sparse_operand(make(csr), "a")
    stream = resolve_stream(None, 0)
    checksum = pattern_checksum(a, stream)
    assert checksum == host_checksum(a) and len(checksum) == 32
    moved = csr.copy()
    moved.indices = moved.indices.copy()
    row_end = moved.indptr[1]
    moved.indices[row_end - 1] = (moved.indices[row_end - 1] + 1) % 30  # (another pattern, maybe not canonical)
    moved.has_sorted_indices = False
    moved.sum_duplicates()
    moved.indptr, moved.indices = moved.indptr.astype(index_dtype), moved.indices.astype(index_dtype)
    assert pattern_checksum(wrap_sparse_operand(make(moved), "a"), stream) != checksum


@pytest.mark.parametrize("layer", [True, False])
def test_host_threads_reach_cudss_configuration(fake, monkeypatch, rng, layer):
    from nvmathx._bindings import cudss
    from nvmathx.sparse import _solver_cudss

    layered = []
    monkeypatch.setattr(cudss, "threading_layer_path", lambda: "/lib/libcudss_mtlayer_gomp.so.0" if layer else None)
    monkeypatch.setattr(cudss, "set_threading_layer", lambda handle, library: layered.append(handle))
    monkeypatch.setattr(_solver_cudss, "_threaded_handles", set())
    monkeypatch.delenv("CUDSS_THREADING_LIB", raising=False)
    dense = system_matrix(rng, 12, "float64", "general")
    b = right_hand_side(rng, 12, "float64")

    def configured(options):
        with DirectSolver(scipy.sparse.csr_array(dense), b, options=options, execution="cuda") as solver:
            solver.plan()
            solver.factorize()
            np.testing.assert_allclose(solver.solve(), np.linalg.solve(dense, b), rtol=TOLERANCE["float64"])
            return fake.live[solver._space.plan_.config][1]["values"].get(cudss.ConfigParam.HOST_NTHREADS)

    monkeypatch.setattr(_solver_cudss, "usable_cores", lambda: 1)
    assert configured(None) is None and layered == []  # the default on one core: single-threaded, no layer
    assert configured({"host_threads": 1}) is None and layered == []
    monkeypatch.setattr(_solver_cudss, "usable_cores", lambda: 6)
    assert configured(None) == (6 if layer else None)  # the default: one thread per usable core
    assert len(layered) == (1 if layer else 0)
    # a handle in multi-threaded mode runs a single-threaded solver on one thread, and is not set up twice
    assert configured({"host_threads": 1}) == (1 if layer else None)
    assert configured({"host_threads": 3}) == (3 if layer else None) and len(layered) == (1 if layer else 0)


def test_usable_cores_follow_the_affinity_mask(monkeypatch):
    import os

    from nvmathx.sparse import _solver_cudss

    if hasattr(os, "sched_getaffinity"):
        assert _solver_cudss.usable_cores() == len(os.sched_getaffinity(0)) >= 1
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert _solver_cudss.usable_cores() == 1


@pytest.mark.parametrize("environment, layer, refuse, expected", [
    (None, "/lib/libcudss_mtlayer_gomp.so.0", False, ("/lib/libcudss_mtlayer_gomp.so.0", True)),
    (None, "/lib/libcudss_mtlayer_gomp.so.0", True, ("/lib/libcudss_mtlayer_gomp.so.0", False)),
    (None, None, False, (None, False)),  # no layer beside libcudss: nothing asked
    ("/opt/my_layer.so", None, False, (None, True)),  # cuDSS reads CUDSS_THREADING_LIB itself
])
def test_the_threading_layer_loads_or_the_handle_stays_single_threaded(monkeypatch, environment, layer, refuse,
                                                                      expected):
    from nvmathx._bindings import cudss
    from nvmathx.sparse import _solver_cudss

    if environment is None:
        monkeypatch.delenv("CUDSS_THREADING_LIB", raising=False)
    else:
        monkeypatch.setenv("CUDSS_THREADING_LIB", environment)
    asked = []

    def set_threading_layer(handle, library):
        asked.append(library)
        if refuse:
            raise cudss.CudssError(1, "CUDSS_STATUS_NOT_INITIALIZED", "cudssSetThreadingLayer", str(library))

    monkeypatch.setattr(cudss, "threading_layer_path", lambda: layer)
    monkeypatch.setattr(cudss, "set_threading_layer", set_threading_layer)
    monkeypatch.setattr(_solver_cudss, "threading_layer", {"active": None, "library": None, "error": None})
    monkeypatch.setattr(_solver_cudss, "_threaded_handles", set())
    library, active = expected
    assert _solver_cudss._use_threading_layer(7) is active  # never raises: a solver works without the layer
    assert asked == ([] if layer is None and environment is None else [library])
    assert _solver_cudss.threading_layer["active"] is active
    assert _solver_cudss._host_threads(7, 4) == (4 if active else None)
