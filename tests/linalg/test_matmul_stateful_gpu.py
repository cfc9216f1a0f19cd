"""Stateful Matmul on the GPU: reset_operands, algorithms, autotune, streams, graphs, libraries,
green contexts and memory resources; and the function form's plan cache."""

import pickle

import numpy as np
import pytest

from helpers.torch_random import randn, randn_like
from nvmathx import InvalidStateError, OperandError
from nvmathx.linalg import Matmul, MatmulAlgorithm, matmul, plan_cache

pytestmark = pytest.mark.gpu


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def _close(result, expected, rtol=1e-5):
    expected = expected.double()
    assert float((result.double() - expected).norm() / expected.norm()) < rtol


def test_reset_operands(rng, torch):
    a, b, c = (randn(rng, *s, device="cuda") for s in ((4, 64, 32), (32, 48), (64, 48)))
    with Matmul(a, b, c, alpha=2.0, beta=0.5) as mm:
        mm.plan()
        _close(mm.execute(), 2 * a @ b + 0.5 * c)
        a2, c2 = randn_like(rng, a), randn_like(rng, c)
        mm.reset_operands(a=a2, c=c2, beta=-1.0)
        _close(mm.execute(), 2 * a2 @ b - c2)
        with pytest.raises(OperandError) as info:
            mm.reset_operands(b=randn(rng, 32, 49, device="cuda"))
        assert info.value.argument == "b"
        misaligned = torch.empty(a.numel() + 1, device="cuda")[1:].view(a.shape)
        with pytest.raises(OperandError, match="aligned") as info:
            mm.reset_operands(a=misaligned)
        assert info.value.argument == "a"
        with pytest.raises(OperandError):
            mm.reset_operands(a=a.cpu())


def test_epilog_inputs_reset(rng, torch):
    x = randn(rng, 64, 32, device="cuda", dtype=torch.float16)
    w = randn(rng, 32, 40, device="cuda", dtype=torch.float16)
    bias = randn(rng, 40, device="cuda", dtype=torch.float16)
    with Matmul(x, w) as mm:
        mm.plan(epilog="RELU_BIAS", epilog_inputs={"bias": bias})
        _close(mm.execute(), torch.relu(x.float() @ w.float() + bias.float()), 1e-2)
        bias2 = randn_like(rng, bias)
        mm.reset_operands(epilog_inputs={"bias": bias2})
        _close(mm.execute(), torch.relu(x.float() @ w.float() + bias2.float()), 1e-2)


def test_pickled_algorithms_and_explicit_choice(rng, torch):
    a, b = randn(rng, 256, 128, device="cuda"), randn(rng, 128, 512, device="cuda")
    with Matmul(a, b) as mm:
        algorithms = mm.plan()
        assert algorithms and all(isinstance(alg, MatmulAlgorithm) for alg in algorithms)
        blob = pickle.dumps(algorithms)
        for algorithm in algorithms:
            _close(mm.execute(algorithm=algorithm), a @ b)
        with pytest.raises(OperandError):
            mm.execute(algorithm=MatmulAlgorithm(bytes(64), 0, 0.0))
    with Matmul(a, b) as mm:
        again = mm.plan(algorithms=pickle.loads(blob))
        assert [alg.algo for alg in again] == [alg.algo for alg in algorithms]
        _close(mm.execute(), a @ b)


def test_autotune_reorders_and_never_writes_c(rng, torch):
    a, b = randn(rng, 512, 256, device="cuda"), randn(rng, 256, 384, device="cuda")
    c = randn(rng, 512, 384, device="cuda")
    saved = c.clone()
    with Matmul(a, b, c, beta=1.0) as mm:
        candidates = mm.plan(preferences={"limit": 4})
        timings = mm.autotune(iterations=3)
        assert len(timings) == len(candidates)
        assert [ms for ms, _ in timings] == sorted(ms for ms, _ in timings)
        assert mm.algorithms[0] == timings[0][1]
        torch.cuda.synchronize()
        assert torch.equal(c, saved)
        _close(mm.execute(), a @ b + c)


@pytest.mark.parametrize("dtype, epilog", [("bfloat16", "GELU_BIAS"), ("float32", None)])
def test_expanded_custom_options_are_correct_and_autotuned(rng, torch, dtype, epilog):
    from nvmathx._bindings import cublaslt

    m, n, k = 384, 320, 256
    dt = getattr(torch, dtype)
    x, w = randn(rng, m, k, device="cuda", dtype=dt), randn(rng, k, n, device="cuda", dtype=dt)
    bias = randn(rng, n, device="cuda", dtype=dt)
    plan = {"epilog": epilog, "epilog_inputs": {"bias": bias}} if epilog else {}
    reference = x.double() @ w.double()
    if epilog:
        reference = torch.nn.functional.gelu(reference + bias.double(), approximate="tanh")
    rtol = 2e-2 if dtype == "bfloat16" else 1e-5
    with Matmul(x, w) as plain:
        heuristic = plain.plan(**plan)
    with Matmul(x, w) as mm:
        expanded = mm.plan(**plan, preferences={"expand_custom_options": True})
        # the heuristic's list as cuBLASLt gave it (it may repeat an algorithm), then new variants
        variants = expanded[len(heuristic):]
        assert all(len(algorithm.config) == 9 and -1 not in algorithm.config for algorithm in expanded)
        assert expanded[:len(heuristic)] == heuristic  # by configuration: the bytes may differ between queries
        assert len(set(variants)) == len(variants) and not set(variants) & set(heuristic)
        if any(cublaslt.algo_custom_option_max(alg.algo) > 0 for alg in heuristic):
            assert len(expanded) > len(heuristic)
        for algorithm in expanded[len(heuristic):]:
            _close(mm.execute(algorithm=algorithm), reference, rtol)
        timings = mm.autotune(iterations=2)
        assert len(timings) == len(expanded)
        assert [ms for ms, _ in timings] == sorted(ms for ms, _ in timings)
        _close(mm.execute(), reference, rtol)


def test_release_workspace_and_other_stream(rng, torch):
    a, b = randn(rng, 64, 64, 4096, device="cuda")[0], randn(rng, 4096, 64, device="cuda")
    stream = torch.cuda.Stream()
    with Matmul(a, b) as mm:
        mm.plan()
        first = mm.execute(release_workspace=True)
        with torch.cuda.stream(stream):
            second = mm.execute(stream=stream)
        stream.synchronize()
        third = mm.execute()
        torch.cuda.synchronize()
        for result in (first, second, third):
            _close(result, a @ b)


def test_free_then_any_call_raises(rng, torch):
    a = randn(rng, 8, 8, device="cuda")
    mm = Matmul(a, a)
    mm.plan()
    mm.free()
    for call in (mm.execute, mm.plan, mm.autotune, lambda: mm.reset_operands(a=a)):
        with pytest.raises(InvalidStateError):
            call()


def test_torch_graph_capture_and_replay(rng, torch):
    a, b, bias = randn(rng, 128, 64, device="cuda"), randn(rng, 64, 96, device="cuda"), randn(rng, 96, device="cuda")
    mm = Matmul(a, b)
    mm.plan(epilog="GELU_BIAS", epilog_inputs={"bias": bias})
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm up both forms (and the plan cache) outside the capture
        mm.execute()  # follows torch's current stream: `side`
        matmul(a, b)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        stateful = mm.execute()  # no stream=: the capture stream is torch's current stream
        function = matmul(a, b)
    a.copy_(randn_like(rng, a))
    graph.replay()
    torch.cuda.synchronize()
    gelu = torch.nn.functional.gelu
    _close(stateful, gelu(a @ b + bias, approximate="tanh"), 1e-4)
    _close(function, a @ b)
    mm.free()


def test_cuda_core_graph_builder(rng, torch):
    from cuda.core import Device

    a, b = randn(rng, 64, 32, device="cuda"), randn(rng, 32, 16, device="cuda")
    device = Device(0)
    device.set_current()
    launch_stream = device.create_stream()
    with Matmul(a, b, stream=launch_stream) as mm:
        mm.plan()
        mm.execute()
        launch_stream.sync()
        torch.empty(64, 16, device="cuda")  # leave a cached block for the captured allocation
        builder = device.create_graph_builder().begin_building()
        out = mm.execute(stream=builder.stream)
        builder.end_building()
        graph = builder.complete()
        a.mul_(3.0)
        torch.cuda.synchronize()
        graph.launch(launch_stream)
        launch_stream.sync()
        _close(out, a @ b)


def test_cupy_operands(rng):
    cupy = pytest.importorskip("cupy")
    a, b, c = (cupy.asarray(rng.standard_normal(shape)) for shape in ((3, 40, 20), (20, 30), (40, 30)))
    result = matmul(a, b, c, alpha=0.5, beta=2.0)
    assert isinstance(result, cupy.ndarray)
    expected = 0.5 * (a @ b) + 2.0 * c
    assert float(cupy.linalg.norm(result - expected) / cupy.linalg.norm(expected)) < 1e-12


def test_jax_operands(rng):
    jax = pytest.importorskip("jax")
    if not any(device.platform == "gpu" for device in jax.devices()):
        pytest.skip("jax has no GPU backend here")
    jnp = jax.numpy
    a, b = jnp.asarray(rng.standard_normal((32, 16)), dtype=jnp.float32), jnp.ones((16, 8), jnp.float32)
    result = matmul(a, b, options={"blocking": True})  # jax reads on its own streams
    assert "jax" in type(result).__module__
    expected = np.asarray(a, np.float64) @ np.asarray(b, np.float64)
    assert np.linalg.norm(np.asarray(result) - expected) / np.linalg.norm(expected) < 1e-5  # float32: norm-wise


def test_green_context_stream(rng, torch):
    from cuda.core import ContextOptions, Device, SMResourceOptions

    device = Device(0)
    device.set_current()
    groups, _ = device.resources.sm.split(SMResourceOptions(count=16))
    context = device.create_context(ContextOptions(resources=[groups[0]]))
    stream = context.create_stream()
    a, b = randn(rng, 512, 256, device="cuda"), randn(rng, 256, 128, device="cuda")
    torch.cuda.synchronize()
    with Matmul(a, b, stream=stream, options={"sm_count_target": 16}) as mm:
        mm.plan()
        result = mm.execute()
        stream.sync()
        _close(result, a @ b)


def test_workspaces_come_from_the_memory_resource(rng, torch):
    from cuda.core import Device, MemoryResource

    class RecordingResource(MemoryResource):
        def __init__(self, inner):
            self.inner, self.sizes = inner, []

        def allocate(self, size, *, stream=None):
            self.sizes.append(size)
            return self.inner.allocate(size, stream=stream)

        def deallocate(self, ptr, size, *, stream=None):
            self.inner.deallocate(ptr, size, stream=stream)

        @property
        def is_device_accessible(self):
            return True

        @property
        def is_host_accessible(self):
            return False

        @property
        def device_id(self):
            return self.inner.device_id

    device = Device(0)
    device.set_current()
    resource = RecordingResource(device.memory_resource)
    a, b = randn(rng, 64, 65536, device="cuda"), randn(rng, 65536, 64, device="cuda")  # split-K wants a workspace
    with Matmul(a, b, options={"memory_resource": resource}) as mm:
        algorithms = mm.plan()
        needed = max(alg.workspace_size for alg in algorithms)
        assert needed > 0
        assert max(resource.sizes) >= needed
        _close(mm.execute(), a @ b, 1e-4)


def test_function_form_hits_the_cache(rng, torch):
    plan_cache.clear()
    a, b = randn(rng, 64, 64, device="cuda"), randn(rng, 64, 64, device="cuda")
    for _ in range(3):
        _close(matmul(a, b), a @ b)
    info = plan_cache.info(0)
    assert (info.size, info.misses, info.hits) == (1, 1, 2)
    matmul(a.T, b)  # another layout, another plan
    assert plan_cache.info(0).size == 2
    plan_cache.set_limits(max_size=1)
    assert plan_cache.info(0).size == 1
    plan_cache.set_limits(max_size=128)
    plan_cache.clear()
    assert plan_cache.info(0).size == 0
