"""The batched engine with one right-hand side per system solves in each call's result, on the host
stand-ins of tests/linalg/_fake_cusolver.py: no x_work buffer, and its array of right-hand side
pointers refilled by ``fill_pointers`` whenever the result lies elsewhere than the array says."""

import numpy as np
import pytest

from nvmathx.linalg import DirectSolver, direct_solver

from ._fake_cublaslt import to_device, to_host, view_at
from ._fake_cusolver import fake_check_launch, install
from ._solver_reference import assert_close, reference_solve, structured

STRUCTURES = ("general", "positive definite", "lower triangular", "diagonal")


@pytest.fixture
def fake(monkeypatch):
    import gc

    from nvmathx.linalg import _solver_gpu, plan_cache

    libraries = install(monkeypatch)[0]
    fills: list = []  # (the pointer array, the base) of each fill_pointers launch

    def launch(stream, device_id, name, count, *args):
        if name == "fill_pointers":
            fills.append((args[0], args[2]))
        fake_check_launch(stream, device_id, name, count, *args)

    monkeypatch.setattr(_solver_gpu, "launch_check", launch)
    libraries.fills = fills
    yield libraries
    plan_cache.clear()  # cached engines are freed while the stand-ins are still installed
    gc.collect()


def _pointers(engine):
    return [int(p) for p in view_at(engine.x_pointers, (engine.problem.batch_count,), (1,), np.uint64)]


def _systems(engine, base):
    return [base + i * engine.problem.n * engine.problem.nrhs * engine.itemsize
            for i in range(engine.problem.batch_count)]


@pytest.mark.parametrize("structure", STRUCTURES)
def test_one_right_hand_side_needs_no_solution_buffer(rng, fake, monkeypatch, structure):
    from nvmathx.linalg._solver_gpu import BatchedEngine

    batch, n = 6, 5
    a = structured(rng, (batch, n, n), "float64", structure)
    b = rng.standard_normal((batch, n, 1))
    options = {"assume_a": structure, "engine": "batched"}
    sizes = {}
    for solves_anywhere in (False, True):  # False: the engine as it was, with x_work
        monkeypatch.setattr(BatchedEngine, "solves_anywhere", solves_anywhere)
        with DirectSolver(to_device(a), to_device(b), options=options) as solver:
            solver.plan()
            engine = solver._engine
            assert engine.name == "batched" and engine.in_result == solves_anywhere
            assert (engine.x_work == 0) == solves_anywhere
            sizes[solves_anywhere] = solver.workspace_bytes
            solver.factorize()
            assert_close(to_host(solver.solve()), reference_solve(a, b, structure), 1e-11)
    assert sizes[False] - sizes[True] == batch * n * 8


@pytest.mark.parametrize("structure", STRUCTURES)
@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("a_shape, b_shape", [
    ((7, 6, 6), (7, 6, 1)), ((7, 6, 6), (6,)), ((2, 1, 6, 6), (1, 3, 6, 1)), ((6, 6), (4, 6, 1)),
])
def test_results_at_new_addresses_refill_the_pointer_array(rng, fake, structure, transposed, a_shape, b_shape):
    a = structured(rng, a_shape, "float64", structure)
    options = {"assume_a": structure, "engine": "batched", "transposed": transposed}
    with DirectSolver(to_device(a), to_device(rng.standard_normal(b_shape)), options=options) as solver:
        solver.plan()
        engine = solver._engine
        assert engine.in_result and engine.x_work == 0 and engine.x_base is None
        assert not fake.fills  # nothing is filled before a solve
        solver.factorize()
        results, right_hand_sides = [], []
        for _ in range(3):  # every result kept alive: each at its own address
            b = rng.standard_normal(b_shape)
            solver.reset_operands(b=to_device(b))
            x = solver.solve()
            results.append(x)
            right_hand_sides.append(b)
            assert fake.fills[-1] == (engine.x_pointers, x.ptr) and engine.x_base == x.ptr
            assert _pointers(engine) == _systems(engine, x.ptr)  # system(i)'s order: a's batch maps as before
        assert len(fake.fills) == 3 and len({x.ptr for x in results}) == 3
        for x, b in zip(results, right_hand_sides):
            assert_close(to_host(x), reference_solve(a, b, structure, transposed=transposed), 1e-11)


def test_the_same_address_is_not_filled_again(rng, fake):
    a, b = structured(rng, (5, 4, 4), "float64", "general"), rng.standard_normal(4)
    with DirectSolver(to_device(a), to_device(b), options={"engine": "batched"}) as solver:
        solver.plan()
        solver.factorize()
        engine = solver._engine
        x = solver.solve()
        assert len(fake.fills) == 1
        engine.x = x.ptr  # (as _copy_b sets it for a result at the same address)
        engine._point_x(engine._stream)
        assert len(fake.fills) == 1
        engine.x = x.ptr + 64
        engine._point_x(engine._stream)
        assert fake.fills[-1][1] == x.ptr + 64 and _pointers(engine) == _systems(engine, x.ptr + 64)


def test_after_a_captured_fill_every_call_fills(rng, fake, monkeypatch):
    """A captured fill runs at each replay, whenever that is: the capture fills even where the array
    holds its address already, and every later call fills again, also at the address it filled last."""
    from nvmathx._bindings import cuda_driver

    a, b = structured(rng, (5, 4, 4), "float64", "general"), rng.standard_normal((5, 4, 1))
    with DirectSolver(to_device(a), to_device(b), options={"engine": "batched", "check": "none"}) as solver:
        solver.plan()
        solver.factorize()
        engine = solver._engine
        solver.solve()
        address = engine.x
        engine._point_x(engine._stream)
        assert len(fake.fills) == 1 and engine.x_base == address and not engine.graph_fills
        monkeypatch.setattr(cuda_driver, "stream_is_capturing", lambda handle: True)
        engine._point_x(engine._stream)
        assert len(fake.fills) == 2 and fake.fills[-1][1] == address and engine.graph_fills
        monkeypatch.setattr(cuda_driver, "stream_is_capturing", lambda handle: False)
        for _ in range(2):
            engine._point_x(engine._stream)
        assert len(fake.fills) == 4 and engine.x_base is None
        x = solver.solve()
        assert len(fake.fills) == 5 and fake.fills[-1][1] == x.ptr
        assert_close(to_host(x), reference_solve(a, b), 1e-11)


@pytest.mark.parametrize("structure", ["general", "positive definite", "upper triangular"])
def test_function_form_with_a_broadcast_a(rng, fake, structure):
    """The plan cache hands the same engine to each call; each result is filled for and solved in."""
    a = structured(rng, (3, 1, 8, 8), "float64", structure)
    results = []
    for _ in range(2):
        b = rng.standard_normal((3, 4, 8, 1))
        x = direct_solver(to_device(a), to_device(b), options={"assume_a": structure, "engine": "batched"})
        results.append(x)
        assert_close(to_host(x), reference_solve(a, b, structure), 1e-11)
    assert [base for _, base in fake.fills] == [x.ptr for x in results]
    assert len({pointers for pointers, _ in fake.fills}) == 1  # one engine, one array


def test_several_right_hand_sides_keep_the_uploaded_array(rng, fake):
    a, b = structured(rng, (4, 5, 5), "float64", "general"), rng.standard_normal((4, 5, 3))
    x = direct_solver(to_device(a), to_device(b), options={"engine": "batched"})
    assert_close(to_host(x), reference_solve(a, b), 1e-11)
    assert not fake.fills
