"""The dense solvers on the GPU (torch CUDA operands): every engine against numpy.linalg.solve in
64-bit and the backward error (condition numbers to 1e12 in float64), the engines against each
other on the same batches, singular and non-finite systems, reset_operands, host operands with
execution="cuda", CUDA graph capture of solve() with check="none" (replays bit-equal), the batched
engine solving in each call's result (eager calls between replays too), the plan cache of the
function form, and 8 threads with a solver each."""

import threading

import numpy as np
import pytest

import nvmathx
from helpers.torch_cuda import torch_with_cuda
from nvmathx.linalg import DirectSolver, direct_solver, plan_cache, solve

from ._solver_reference import DTYPES, STRUCTURES, SYSTEMS, assert_close, backward_error_ok, reference_solve, structured

pytestmark = pytest.mark.gpu

ENGINES = ("cusolver", "batched", "fused")
FUSED = ("general", "positive definite")  # the structures the fused engine solves
TOLERANCE = {"float32": 5e-4, "complex64": 5e-4, "float64": 1e-10, "complex128": 1e-10}


@pytest.fixture
def torch():
    return torch_with_cuda()


def _cuda(torch, host):
    return torch.from_numpy(np.ascontiguousarray(host)).cuda()


def _close(x, expected, dtype):
    assert_close(x.cpu().numpy() if hasattr(x, "cpu") else np.asarray(x), expected, TOLERANCE[dtype])


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("dtype, structure, transposed", SYSTEMS)
def test_engines_against_numpy(rng, torch, engine, dtype, structure, transposed):
    a = structured(rng, (4, 12, 12), dtype, structure)
    b = rng.standard_normal((4, 12, 3)).astype(dtype)
    options = {"assume_a": structure, "transposed": transposed, "engine": engine}
    if engine == "fused" and structure not in FUSED:
        with pytest.raises(nvmathx.OptionsError, match="^options.engine"):
            direct_solver(_cuda(torch, a), _cuda(torch, b), options=options)
        return
    x = direct_solver(_cuda(torch, a), _cuda(torch, b), options=options)
    assert x.is_cuda and x.dtype == getattr(torch, dtype)
    _close(x, reference_solve(a, b, structure, transposed=transposed), dtype)
    ok, worst = backward_error_ok(a, x.cpu().numpy(), b, dtype, structure, transposed=transposed)
    assert ok, worst


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("a_shape, b_shape", [
    ((16, 16), (16,)), ((3, 16, 16), (16,)), ((2, 1, 16, 16), (3, 16, 2)), ((1, 16, 16), (5, 16, 1)),
    ((16, 16), (2, 3, 16, 4)), ((0, 16, 16), (16,)), ((2, 0, 0), (0,)), ((16, 16), (16, 0)),
])
@pytest.mark.parametrize("structure", ["general", "positive definite"])
def test_broadcasting_vector_b_and_empty(rng, torch, engine, a_shape, b_shape, structure):
    a = structured(rng, a_shape, "float64", structure) if a_shape[-1] else np.zeros(a_shape)
    b = rng.standard_normal(b_shape)
    x = direct_solver(_cuda(torch, a), _cuda(torch, b), options={"assume_a": structure, "engine": engine})
    import scipy.linalg

    expected_shape = scipy.linalg.solve(a, b, assume_a="gen").shape if a.size or b.size else x.shape
    assert tuple(x.shape) == expected_shape
    if x.numel():
        _close(x, reference_solve(a, b, structure), "float64")


@pytest.mark.parametrize("engine", ENGINES)
def test_strided_operands(rng, torch, engine):
    a = structured(rng, (3, 20, 20), "complex128", "general")
    b = rng.standard_normal((3, 20, 8)) + 1j * rng.standard_normal((3, 20, 8))
    a_t = _cuda(torch, np.swapaxes(a, -1, -2)).transpose(-1, -2)  # Fortran-ordered matrices
    b_s = _cuda(torch, b)[..., ::2]  # non-contiguous
    _close(solve(a_t, b_s, options={"engine": engine}), reference_solve(a, b[..., ::2]), "complex128")
    _close(solve(a_t.conj(), b_s, options={"engine": engine}), reference_solve(a.conj(), b[..., ::2]), "complex128")


@pytest.mark.parametrize("n, batch", [(64, 1), (300, 1), (32, 64), (8, 256)])
@pytest.mark.parametrize("condition", [1e2, 1e6, 1e12])
def test_backward_error_float64(rng, torch, n, batch, condition):
    a = structured(rng, (batch, n, n), "float64", "general", condition)
    b = rng.standard_normal((batch, n, 2))
    for engine in ENGINES if n <= 32 else ENGINES[:2]:
        x = solve(_cuda(torch, a), _cuda(torch, b), options={"engine": engine})
        ok, worst = backward_error_ok(a, x.cpu().numpy(), b, "float64")
        assert ok, (engine, worst)


@pytest.mark.parametrize("n, dtype", [(32, "float32"), (64, "float64"), (16, "complex128"), (24, "complex64")])
@pytest.mark.parametrize("structure", FUSED)
def test_fused_engine_at_padded_leading_dimensions(rng, torch, n, dtype, structure):
    """Orders whose columns span whole 128-byte rows, which the fused kernel pads in shared memory
    (an odd batch leaves the last block part empty), against numpy; one and three right-hand sides."""
    a = structured(rng, (7, n, n), dtype, structure)
    for nrhs in (1, 3):
        b = rng.standard_normal((7, n, nrhs)).astype(dtype)
        x = direct_solver(_cuda(torch, a), _cuda(torch, b), options={"assume_a": structure, "engine": "fused"})
        _close(x, reference_solve(a, b, structure), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("structure", STRUCTURES)
def test_engines_agree(rng, torch, dtype, structure):
    a = _cuda(torch, structured(rng, (64, 8, 8), dtype, structure))
    b = _cuda(torch, rng.standard_normal((64, 8, 1)).astype(dtype))
    engines = ENGINES if structure in FUSED else ENGINES[:2]
    xs = [direct_solver(a, b, options={"assume_a": structure, "engine": engine}).cpu().numpy() for engine in engines]
    for x in xs[1:]:
        _close(x, xs[0], dtype)


@pytest.mark.parametrize("engine", ENGINES)
def test_singular_and_non_finite(rng, torch, engine):
    a = np.stack([np.eye(6)] * 4)
    a[2, :, 3] = 0.0
    with pytest.raises(nvmathx.SingularMatrixError) as info:
        solve(_cuda(torch, a), _cuda(torch, np.ones(6)), options={"engine": engine})
    assert info.value.batch_index == 2 and info.value.pivot == 3
    spd = -np.eye(6)
    with pytest.raises(nvmathx.SingularMatrixError) as info:
        solve(_cuda(torch, spd), _cuda(torch, np.ones(6)), assume_a="positive definite", options={"engine": engine})
    assert info.value.pivot == 0
    tri = np.diag([1.0, 2.0, 0.0, 1.0, 1.0, 1.0])
    for structure in ("lower triangular", "upper triangular", "diagonal") if engine != "fused" else ():
        with pytest.raises(nvmathx.SingularMatrixError) as info:
            solve(_cuda(torch, tri), _cuda(torch, np.ones(6)), assume_a=structure, options={"engine": engine})
        assert info.value.pivot == 2
    bad = np.eye(6)
    bad[1, 4] = np.nan
    with pytest.raises(nvmathx.OperandError, match="^a: contains NaN"):
        solve(_cuda(torch, bad), _cuda(torch, np.ones(6)), options={"engine": engine})
    with pytest.raises(nvmathx.OperandError, match="^b: contains NaN"):
        solve(_cuda(torch, np.eye(6)), _cuda(torch, np.array([1.0, np.inf, 0, 0, 0, 0])), options={"engine": engine})
    x = solve(_cuda(torch, a), _cuda(torch, np.ones(6)), options={"engine": engine, "check": "none"})
    assert not torch.isfinite(x[2]).all() and torch.isfinite(x[0]).all()


@pytest.mark.parametrize("engine", ENGINES)
def test_stateful_reset_operands(rng, torch, engine):
    a, b = structured(rng, (8, 10, 10), "float32", "general"), rng.standard_normal((8, 10, 2)).astype(np.float32)
    with DirectSolver(_cuda(torch, a), _cuda(torch, b), options={"engine": engine}) as solver:
        solver.plan()
        assert solver.engine == engine
        solver.factorize()
        _close(solver.solve(), reference_solve(a, b), "float32")
        b2 = rng.standard_normal((8, 10, 2)).astype(np.float32)
        solver.reset_operands(b=_cuda(torch, b2))
        _close(solver.solve(), reference_solve(a, b2), "float32")
        a2 = structured(rng, (8, 10, 10), "float32", "general")
        solver.reset_operands(a=_cuda(torch, a2))
        with pytest.raises(nvmathx.InvalidStateError):
            solver.solve()
        solver.factorize()
        _close(solver.solve(), reference_solve(a2, b2), "float32")
    with pytest.raises(nvmathx.InvalidStateError):
        solver.solve()


def test_host_operands_with_cuda_execution(rng):
    a, b = structured(rng, (3, 9, 9), "float64", "positive definite"), rng.standard_normal((3, 9, 2))
    x = solve(a, b, assume_a="positive definite", execution="cuda")
    assert isinstance(x, np.ndarray)
    _close(x, reference_solve(a, b, "positive definite"), "float64")


def _capture_solve(torch, solver):
    """A CUDA graph of ``solver.solve()`` on a side stream (warmed up there first), and its result."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(stream):
        solver.solve(stream=stream)  # warm up on the capturing stream
        with torch.cuda.graph(graph, stream=stream):
            captured = solver.solve(stream=stream)
    return graph, captured


@pytest.mark.parametrize("engine", ENGINES)
def test_graph_capture_of_solve_replays_bit_equal(rng, torch, engine):
    a = _cuda(torch, structured(rng, (16, 8, 8), "float64", "general"))
    b = _cuda(torch, rng.standard_normal((16, 8, 1)))
    solver = DirectSolver(a, b, options={"engine": engine, "check": "none"})
    solver.plan()
    solver.factorize()
    expected = solver.solve().clone()
    graph, captured = _capture_solve(torch, solver)
    for _ in range(3):
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(captured, expected)
    b.copy_(torch.randn_like(b))  # the graph copied b in: a new b in the same memory is solved on replay
    graph.replay()
    torch.cuda.synchronize()
    assert torch.allclose(torch.linalg.solve(a, b), captured, rtol=1e-9, atol=1e-9)
    solver.free()


@pytest.mark.parametrize("structure", STRUCTURES)
def test_batched_engine_solves_in_each_result(rng, torch, structure):
    """One right-hand side: the batched engine keeps no solution buffer and solves in each call's
    result (a broadcast over a's batch too), its pointer array refilled by a kernel where the result
    lies elsewhere; a graph captures that fill, and the eager call after a replay fills again."""
    a_host = structured(rng, (2, 1, 16, 16), "float64", structure)
    a = _cuda(torch, a_host)
    options = {"assume_a": structure, "engine": "batched", "check": "none"}
    b_host = rng.standard_normal((2, 3, 16, 1))
    with DirectSolver(a, _cuda(torch, b_host), options=options) as solver:
        solver.plan()
        assert solver._engine.x_work == 0
        solver.factorize()
        first = solver.solve()
        second = solver.solve()  # first still alive: elsewhere
        assert first.data_ptr() != second.data_ptr()
        for x in (first, second):
            _close(x, reference_solve(a_host, b_host, structure), "float64")
        b = _cuda(torch, rng.standard_normal((2, 3, 16, 1)))
        solver.reset_operands(b=b)
        graph, captured = _capture_solve(torch, solver)
        b_host = b.cpu().numpy()
        for _ in range(2):  # an eager result, then a replay, then a result likely at the same address
            eager = solver.solve()
            _close(eager, reference_solve(a_host, b_host, structure), "float64")
            del eager
            graph.replay()
            torch.cuda.synchronize()
            _close(captured, reference_solve(a_host, b_host, structure), "float64")
        del graph


def test_function_form_caches_its_plan(rng, torch):
    plan_cache.clear()
    a = _cuda(torch, structured(rng, (4, 16, 16), "float32", "general"))
    b = _cuda(torch, rng.standard_normal(16).astype(np.float32))
    solve(a, b)
    before = plan_cache.info(0)
    for _ in range(3):
        solve(a, b)
    after = plan_cache.info(0)
    assert after.size == before.size and after.hits == before.hits + 3


def test_eight_threads_with_a_solver_each(rng, torch):
    systems = [(structured(rng, (4, 24, 24), "float64", "general"), rng.standard_normal((4, 24, 2))) for _ in range(8)]
    errors = []

    def work(index):
        try:
            a, b = systems[index]
            stream = torch.cuda.Stream()
            with torch.cuda.stream(stream), DirectSolver(_cuda(torch, a), _cuda(torch, b)) as solver:
                solver.plan()
                for _ in range(5):
                    solver.factorize()
                    x = solver.solve()
                stream.synchronize()
                _close(x, reference_solve(a, b), "float64")
        except Exception as error:  # noqa: BLE001  (reported below)
            errors.append(error)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("vector", [True, False])
def test_stateful_solves_of_a_large_system_by_gather_and_triangular_solves(rng, torch, dtype, vector):
    # n > 128, one right-hand side: DirectSolver.solve() gathers by the pivots' permutation and
    # runs two cuBLAS trsm (the function form runs getrs): both against the backward error
    n = 300
    a = structured(rng, (n, n), dtype, "general", 1e6)
    shape = (n,) if vector else (n, 1)
    b = rng.standard_normal(shape).astype(dtype)
    with DirectSolver(_cuda(torch, a), _cuda(torch, b), options={"engine": "cusolver", "check": "none"}) as solver:
        solver.plan()
        solver.factorize()
        for _ in range(2):
            x = solver.solve().cpu().numpy()
            ok, worst = backward_error_ok(a, x.reshape(n, 1), b.reshape(n, 1), dtype)
            assert ok, worst
            b = rng.standard_normal(shape).astype(dtype)
            solver.reset_operands(b=_cuda(torch, b))
        graph, captured = _capture_solve(torch, solver)
        a2 = structured(rng, (n, n), dtype, "general", 1e3)
        solver.reset_operands(a=_cuda(torch, a2))
        solver.factorize()  # a new permutation, which the captured solve reads on replay
        graph.replay()
        torch.cuda.synchronize()
        ok, worst = backward_error_ok(a2, captured.cpu().numpy().reshape(n, 1), b.reshape(n, 1), dtype)
        assert ok, worst
    function_x = solve(_cuda(torch, a2), _cuda(torch, b)).cpu().numpy()
    ok, worst = backward_error_ok(a2, function_x.reshape(n, 1), b.reshape(n, 1), dtype)
    assert ok, worst
