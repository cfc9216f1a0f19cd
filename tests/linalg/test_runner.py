"""The matmul runner on the host fake of cuBLASLt: one runner behind Matmul and matmul(), its scalar
checks on cache hits, its stream changes (through the one stream-order rule), launch offsets, and
what a cached plan keeps alive."""

import gc
import weakref

import numpy as np
import pytest

from nvmathx import InvalidStateError, OptionsError
from nvmathx._core.streams import resolve_stream
from nvmathx.linalg import Matmul, matmul, plan_cache

from ._fake_cublaslt import install, to_device, to_host
from ._reference import random, relative_error, tolerance


@pytest.fixture
def fake(monkeypatch):
    fake_lt, _ = install(monkeypatch)
    yield fake_lt
    plan_cache.clear()
    gc.collect()


def test_scalars_are_checked_on_cache_hits(fake, rng):
    a, b = random(rng, (6, 4)), random(rng, (4, 5))
    da, db = to_device(a), to_device(b)
    matmul(da, db)
    with pytest.raises(OptionsError, match="^beta: beta=1.0 needs c"):
        matmul(da, db, beta=1.0)
    with pytest.raises(OptionsError, match="^alpha:"):
        matmul(da, db, alpha="2")
    with pytest.raises(OptionsError, match="^alpha: a complex value needs complex operands"):
        matmul(da, db, alpha=1j)
    assert relative_error(to_host(matmul(da, db, alpha=np.float32(3))), 3 * a @ b) < tolerance("float32")
    assert relative_error(to_host(matmul(da, db)), a @ b) < tolerance("float32")  # back to the defaults
    assert plan_cache.info(0).size == 1


def test_a_cached_plan_keeps_no_caller_array_alive(fake, rng):
    a, b = to_device(random(rng, (6, 4))), to_device(random(rng, (4, 5)))
    matmul(a, b)
    watched = weakref.ref(a)
    del a
    gc.collect()
    assert watched() is None and plan_cache.info(0).size == 1


def test_a_new_stream_waits_for_the_workspace_unless_capturing(fake, rng, monkeypatch):
    from nvmathx._bindings import cuda_driver

    waits, capturing = [], set()
    monkeypatch.setattr(cuda_driver, "stream_wait_stream", lambda *streams: waits.append(streams))
    monkeypatch.setattr(cuda_driver, "stream_is_capturing", lambda handle: handle in capturing)
    a, b = random(rng, (8, 4)), random(rng, (4, 8))
    with Matmul(to_device(a), to_device(b)) as mm:
        mm.plan()  # candidates need up to 2048 bytes of workspace (see the fake)
        mm.execute()
        assert waits == []
        assert relative_error(to_host(mm.execute(stream=0x500)), a @ b) < tolerance("float32")
        assert waits == [(0x500, 7)]  # the workspace was last used on the default stream (7)
        capturing.add(0x600)
        mm.execute(stream=0x600)
        assert waits == [(0x500, 7)]  # no event into a capture
        mm.execute(stream=0x500)
        assert waits == [(0x500, 7)]  # nor out of one
        mm.execute()
        assert waits[-1] == (7, 0x500)


def test_launch_offsets(fake, rng):
    """One plan launched at offsets of the bound addresses (here: the second matrix of a stack)."""
    stack, b = random(rng, (2, 6, 4), "float64"), random(rng, (4, 5), "float64")
    device_stack = to_device(stack)
    first = device_stack.__class__(device_stack.buffer, device_stack.ptr, (6, 4), (4, 1), device_stack.dtype, 0, None)
    with Matmul(first, to_device(b)) as mm:
        mm.plan()
        assert relative_error(to_host(mm.execute()), stack[0] @ b) < 1e-12
        runner = mm._runner
        launches = fake.launches
        runner.set_launch_offsets([(0, 0, 0, 0), (6 * 4 * 8, 0, 0, 0)])
        assert relative_error(to_host(mm.execute()), stack[1] @ b) < 1e-12  # the last launch wrote the result
        assert fake.launches == launches + 2
        runner.set_launch_offsets(())
        assert relative_error(to_host(mm.execute()), stack[0] @ b) < 1e-12


def test_explicit_streams_are_resolved_once(fake, rng):
    a, b = to_device(random(rng, (4, 4))), to_device(random(rng, (4, 4)))
    holder = resolve_stream(0x700, 0)
    with Matmul(a, b, stream=0x700) as mm:
        mm.plan()
        mm.execute()
        assert mm._runner.stream is holder  # the construction stream, no other


def test_any_algorithm_after_the_workspace_was_released(fake, rng):
    a, b = random(rng, (8, 4)), random(rng, (4, 8))
    with Matmul(to_device(a), to_device(b)) as mm:
        algorithms = mm.plan()
        assert max(algorithm.workspace_size for algorithm in algorithms) > 0
        mm.execute(release_workspace=True)
        assert mm._runner.workspace_bytes == 0
        for algorithm in reversed(algorithms):
            assert relative_error(to_host(mm.execute(algorithm=algorithm)), a @ b) < tolerance("float32")
            assert fake.last_launch[0] == int(np.frombuffer(algorithm.algo, np.uint64)[0])
        assert relative_error(to_host(mm.execute()), a @ b) < tolerance("float32")
        assert fake.last_launch[0] == int(np.frombuffer(algorithms[0].algo, np.uint64)[0])



def test_preparing_candidates_needs_the_planning_stream(fake, rng):
    # After release_workspace the runner holds no stream; preparing then is a state error, not a crash.
    a, b = random(rng, (8, 4)), random(rng, (4, 8))
    with Matmul(to_device(a), to_device(b)) as mm:
        algorithms = mm.plan()
        mm.execute(release_workspace=True)
        assert mm._runner.stream is None
        with pytest.raises(InvalidStateError, match="planning stream"):
            mm._runner.prepare(algorithms)
        assert relative_error(to_host(mm.execute()), a @ b) < tolerance("float32")  # still usable

def test_launch_offsets_move_the_bias_pointer(fake, rng):
    """A fifth offset moves the fused bias (a descriptor pointer), which is back at its base after the launches."""
    a, b, biases = random(rng, (6, 4), "float64"), random(rng, (4, 5), "float64"), random(rng, (2, 5), "float64")
    device_biases = to_device(biases)
    first = device_biases.__class__(device_biases.buffer, device_biases.ptr, (5,), (1,), device_biases.dtype, 0, None)
    with Matmul(to_device(a), to_device(b)) as mm:
        mm.plan(epilog="BIAS", epilog_inputs={"bias": first})
        runner = mm._runner
        with pytest.raises(ValueError, match="launch offsets"):
            runner.set_launch_offsets([(0, 0, 0)])
        runner.set_launch_offsets([(0, 0, 0, 0, 5 * 8)])
        assert relative_error(to_host(mm.execute()), a @ b + biases[1]) < 1e-12
        runner.set_launch_offsets(())
        assert relative_error(to_host(mm.execute()), a @ b + biases[0]) < 1e-12
