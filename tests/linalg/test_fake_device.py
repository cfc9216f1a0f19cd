"""The GPU code path of nvmathx.linalg (row-major swap, layouts, batch strides, epilog buffers,
float8 scales, staging, plans and caches) on a host stand-in for cuBLASLt and the device (see
``_fake_cublaslt.py``), checked against the CPU execution space."""

import ctypes
import gc
import pickle

import numpy as np
import pytest

from nvmathx import InvalidStateError, OperandError
from nvmathx.linalg import Matmul, matmul, plan_cache, relu_mask

from ._fake_cublaslt import FakeMemoryResource, install, to_device, to_host
from ._reference import BACKWARD, FORWARD, epilog_operands, random, relative_error, tolerance


@pytest.fixture
def fake(monkeypatch):
    fake_lt, resource = install(monkeypatch)
    yield fake_lt, resource
    plan_cache.clear()
    gc.collect()  # plans a failed test left behind are freed while the fakes are still in place


def _host(x):
    return to_host(x) if not isinstance(x, np.ndarray) else x


def _check(gpu, cpu, dtype):
    if isinstance(cpu, tuple):
        (gpu, gpu_aux), (cpu, cpu_aux) = gpu, cpu
        assert set(gpu_aux) == set(cpu_aux)
        for name, expected in cpu_aux.items():
            got = _host(gpu_aux[name])
            assert got.shape == np.shape(expected), name
            if name == "relu_aux":
                n = expected.shape[-1] * 8
                assert np.mean(relu_mask(got, n) != relu_mask(expected, n)) < 1e-2, name
            else:
                assert relative_error(got, np.asarray(expected).astype(np.float64)) < tolerance(dtype), name
    got = _host(gpu)
    assert got.shape == cpu.shape and got.dtype == cpu.dtype
    assert relative_error(got, cpu.astype(np.complex128 if cpu.dtype.kind == "c" else np.float64)) < tolerance(dtype)


@pytest.mark.parametrize("batch", [(), (3,)])
@pytest.mark.parametrize("epilog", [None] + FORWARD + BACKWARD)
@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_every_epilog(rng, fake, dtype, epilog, batch):
    m, n, k = 12, 20, 6
    a, b, inputs = epilog_operands(rng, dtype, epilog, batch, m, n, k, gelu_aux_ld=24)  # GELU_AUX pads N=20 to 24
    cpu = matmul(a, b, epilog=epilog, epilog_inputs=inputs or None, execution="cpu")
    gpu = matmul(
        to_device(a), to_device(b), epilog=epilog, epilog_inputs={k: to_device(v) for k, v in inputs.items()} or None
    )
    _check(gpu, cpu, dtype)


@pytest.mark.parametrize("a_shape, b_shape", [((5, 3), (3, 4)), ((3,), (3, 4)), ((5, 3), (3,)), ((3,), (3,)),
                                              ((2, 5, 3), (3, 4)), ((5, 3), (2, 3, 4)), ((2, 2, 5, 3), (2, 2, 3, 4))])
@pytest.mark.parametrize("order", ["C", "F", "T", "padded"])
def test_shapes_and_layouts(rng, fake, a_shape, b_shape, order):

    def make(shape):
        if order == "C" or len(shape) < 2:
            return random(rng, shape, "float64")
        if order == "F" and len(shape) == 2:  # (a Fortran-ordered stack is not a stack of matrices)
            return np.asfortranarray(random(rng, shape, "float64"))
        if order in ("T", "F"):
            return random(rng, shape[:-2] + shape[::-1][:2], "float64").swapaxes(-1, -2)
        return random(rng, shape[:-1] + (shape[-1] + 3,), "float64")[..., : shape[-1]]

    a, b = make(a_shape), make(b_shape)
    c = random(rng, np.matmul(a, b).shape, "float64")
    gpu = matmul(to_device(a), to_device(b), to_device(c), alpha=0.5, beta=-2.0)
    _check(gpu, matmul(a, b, c, alpha=0.5, beta=-2.0, execution="cpu"), "float64")


@pytest.mark.parametrize("dtype", ["bfloat16", "complex64", "complex128"])
def test_dtypes_with_c_broadcast_over_the_batch(rng, fake, dtype):
    a, b, c = random(rng, (3, 7, 5), dtype), random(rng, (5, 6), dtype), random(rng, (7, 6), dtype)
    alpha, beta = (1 - 2j, 0.5j) if dtype.startswith("complex") else (2.0, 0.5)
    gpu = matmul(to_device(a), to_device(b), to_device(c), alpha=alpha, beta=beta)
    _check(gpu, matmul(a, b, c, alpha=alpha, beta=beta, execution="cpu"), dtype)


@pytest.mark.parametrize("bias_shape", [(2, 1, 6), (2, 4, 6), (4, 6)])
def test_bias_shapes(rng, fake, bias_shape):
    a, b, bias = random(rng, (2, 4, 3)), random(rng, (3, 6)), random(rng, bias_shape)
    gpu = matmul(to_device(a), to_device(b), epilog="RELU_BIAS", epilog_inputs={"bias": to_device(bias)})
    _check(gpu, matmul(a, b, epilog="RELU_BIAS", epilog_inputs={"bias": bias}, execution="cpu"), "float32")


def test_float8_scales_amax_and_layout(rng, fake):
    a, b_rows = random(rng, (32, 48), "float8_e4m3fn"), random(rng, (16, 48), "float8_e4m3fn")
    options = {"result_type": "float8_e4m3fn", "result_amax": True}
    scales = {"a": 0.5, "b": 2.0, "d": 0.25}
    cpu = matmul(a, b_rows.T, quantization_scales=scales, options=options, execution="cpu")
    device_scales = {"a": to_device(np.array([0.5], np.float32)), "b": 2.0, "d": 0.25}
    gpu = matmul(
        to_device(a),
        to_device(b_rows).__class__(*_transposed(to_device(b_rows))),
        quantization_scales=device_scales,
        options=options,
    )
    _check(gpu, cpu, "float8_e4m3fn")
    with pytest.raises(Exception) as info:
        matmul(to_device(a), to_device(np.ascontiguousarray(b_rows.T)), quantization_scales=scales, options=options)
    assert getattr(info.value, "argument", None) == "b"


def test_float8_device_scales_are_read_where_each_call_points(rng, fake):
    """A cached plan whose scales are device arrays takes each call's arrays by address: other
    arrays (another value, another address) give their scaled product; a host array is read by value."""
    a, b_rows = random(rng, (32, 48), "float8_e4m3fn"), random(rng, (16, 48), "float8_e4m3fn")
    options = {"result_type": "float32"}
    da, db = to_device(a), to_device(b_rows).__class__(*_transposed(to_device(b_rows)))
    launches = fake[0].launches
    held = []  # every call's scales stay allocated, so each call's are at other addresses
    for a_scale, b_scale in ((0.5, 2.0), (4.0, 0.25), (1.5, 3.0)):
        scales = {"a": to_device(np.array([a_scale], np.float32)), "b": to_device(np.array([b_scale], np.float32))}
        held.append(scales)
        gpu = matmul(da, db, quantization_scales=scales, options=options)
        cpu = matmul(a, b_rows.T, quantization_scales={"a": a_scale, "b": b_scale}, options=options, execution="cpu")
        _check(gpu, cpu, "float32")
    host = matmul(da, db, quantization_scales={"a": np.array([2.0], np.float32), "b": 0.5}, options=options)
    _check(host, matmul(a, b_rows.T, quantization_scales={"a": 2.0, "b": 0.5}, options=options, execution="cpu"),
           "float32")
    assert fake[0].launches == launches + 4


def _scale_at(value, offset_bytes):
    """A one-float device array ``offset_bytes`` past a 16-byte boundary, holding ``value``."""
    base = to_device(np.full(8, np.nan, np.float32))
    assert base.ptr % 16 == 0
    index = offset_bytes // 4
    to_host_view = np.frombuffer((ctypes.c_float * 8).from_address(base.ptr), np.float32)
    to_host_view[index] = value
    return base.__class__(base.buffer, base.ptr + offset_bytes, (1,), (1,), base.dtype, base.device_id, base.stream)


@pytest.mark.parametrize("offset", [4, 8, 12])
def test_float8_device_scales_off_16_bytes_are_copied_to_an_aligned_slot(rng, fake, offset):
    """cuBLASLt (and this fake, as measured on the H200) refuses a float8 scale pointer that is not
    16-byte aligned: matmul copies such a scale into its own slot before each product, on both the
    cached (by address) and the stateful path, and back to the caller's array once it is aligned."""
    a, b_rows = random(rng, (32, 48), "float8_e4m3fn"), random(rng, (16, 48), "float8_e4m3fn")
    options = {"result_type": "float32"}
    da, db = to_device(a), to_device(b_rows).__class__(*_transposed(to_device(b_rows)))

    def expected(a_scale, b_scale):
        return matmul(a, b_rows.T, quantization_scales={"a": a_scale, "b": b_scale}, options=options,
                      execution="cpu")

    held = []
    for a_scale, b_scale, a_offset in ((0.5, 2.0, offset), (4.0, 0.25, offset), (1.5, 3.0, 0), (2.5, 0.75, offset)):
        scales = {"a": _scale_at(a_scale, a_offset), "b": _scale_at(b_scale, offset)}
        held.append(scales)
        _check(matmul(da, db, quantization_scales=scales, options=options), expected(a_scale, b_scale), "float32")
    with Matmul(da, db, quantization_scales={"a": _scale_at(0.5, offset), "b": 2.0}, options=options) as mm:
        mm.plan()
        _check(mm.execute(), expected(0.5, 2.0), "float32")
        mm.reset_operands(quantization_scales={"a": 1.0, "b": 2.0})  # a number again: the slot is rewritten
        _check(mm.execute(), expected(1.0, 2.0), "float32")
        mm.reset_operands(quantization_scales={"a": _scale_at(3.0, offset), "b": 2.0})
        _check(mm.execute(), expected(3.0, 2.0), "float32")


def _transposed(device_array):
    """Constructor arguments of the transposed view of a 2-D DeviceArray."""
    d = device_array
    return d.buffer, d.ptr, d.shape[::-1], d.strides[::-1], d.dtype, d.device_id, d.stream


def test_host_operands_staged_to_the_device(rng, fake):
    fake_lt, resource = fake
    a, b, c = random(rng, (2, 9, 4)), random(rng, (4, 7)), random(rng, (9, 7))
    gpu = matmul(a, b, c, beta=1.0, epilog="GELU_AUX", execution="cuda")
    assert isinstance(gpu[0], np.ndarray) and isinstance(gpu[1]["gelu_aux"], np.ndarray)
    _check(gpu, matmul(a, b, c, beta=1.0, epilog="GELU_AUX", execution="cpu"), "float32")
    assert resource.allocations and fake_lt.launches == 1


def test_stateful_plan_algorithms_autotune_reset_free(rng, fake):
    fake_lt, _ = fake
    a, b, c = random(rng, (8, 5)), random(rng, (5, 6)), random(rng, (8, 6))
    da, db, dc = to_device(a), to_device(b), to_device(c)
    mm = Matmul(da, db, dc, alpha=2.0, beta=1.0)
    algorithms = mm.plan(epilog="RELU")
    assert len(algorithms) == 3 and [alg.workspace_size for alg in algorithms] == [0, 1024, 2048]
    expected = matmul(a, b, c, alpha=2.0, beta=1.0, epilog="RELU", execution="cpu")
    _check(mm.execute(), expected, "float32")
    for algorithm in algorithms:
        _check(mm.execute(algorithm=algorithm, stream=7), expected, "float32")
    timings = mm.autotune(iterations=2)
    assert [alg for _, alg in timings] == mm.algorithms and len(timings) == 3
    np.testing.assert_array_equal(to_host(dc), c)  # autotune never writes c
    a2 = random(rng, (8, 5))
    mm.reset_operands(a=to_device(a2), beta=0.5)
    _check(
        mm.execute(release_workspace=True),
        matmul(a2, b, c, alpha=2.0, beta=0.5, epilog="RELU", execution="cpu"),
        "float32",
    )
    _check(mm.execute(), matmul(a2, b, c, alpha=2.0, beta=0.5, epilog="RELU", execution="cpu"), "float32")
    with pytest.raises(OperandError) as info:
        mm.reset_operands(b=to_device(random(rng, (5, 7))))
    assert info.value.argument == "b"
    again = Matmul(da, db, dc, alpha=2.0, beta=1.0)
    assert again.plan(epilog="RELU", algorithms=pickle.loads(pickle.dumps(algorithms))) == algorithms
    again.free()
    mm.free()
    with pytest.raises(InvalidStateError):
        mm.execute()


def test_workspace_from_the_memory_resource(rng, fake):
    resource = FakeMemoryResource()
    with Matmul(
        to_device(random(rng, (4, 4))), to_device(random(rng, (4, 4))), options={"memory_resource": resource}
    ) as mm:
        mm.plan()
        assert [size for size, _ in resource.allocations] == [2048]  # the largest candidate's workspace


def test_function_form_cache(rng, fake):
    fake_lt, _ = fake
    a, b = random(rng, (6, 4)), random(rng, (4, 5))
    da, db = to_device(a), to_device(b)
    for alpha in (1.0, 2.0, 2.0):
        _check(matmul(da, db, alpha=alpha), matmul(a, b, alpha=alpha, execution="cpu"), "float32")
    info = plan_cache.info(0)
    assert (info.size, info.misses, info.hits) == (1, 1, 2)
    a2, b2 = random(rng, (6, 4)), random(rng, (4, 5))  # same key, new pointers
    _check(matmul(to_device(a2), to_device(b2)), matmul(a2, b2, execution="cpu"), "float32")
    bias1, bias2 = random(rng, (5,)), random(rng, (5,))
    for bias in (bias1, bias2):
        _check(matmul(da, db, epilog="BIAS", epilog_inputs={"bias": to_device(bias)}),
               matmul(a, b, epilog="BIAS", epilog_inputs={"bias": bias}, execution="cpu"), "float32")
    assert plan_cache.info(0).size == 2 and fake_lt.launches == 6


def test_a_cached_plan_sets_the_bias_pointer_only_when_it_moves(rng, fake, monkeypatch):
    """Calls with the same bias set cuBLASLt's bias pointer once; a bias elsewhere sets it again and
    is the one added."""
    from nvmathx._bindings import cublaslt as lt
    from nvmathx.linalg import _cublaslt_plan

    settings = []
    real = _cublaslt_plan.lt.matmul_desc_set

    def recording(desc, attribute, value):
        if attribute == lt.MatmulDescAttribute.BIAS_POINTER:
            settings.append(value)
        return real(desc, attribute, value)

    monkeypatch.setattr(_cublaslt_plan.lt, "matmul_desc_set", recording)
    a, b = random(rng, (6, 4)), random(rng, (4, 5))
    da, db = to_device(a), to_device(b)
    bias1, bias2 = random(rng, (5,)), random(rng, (5,))
    d_bias1, d_bias2 = to_device(bias1), to_device(bias2)
    for bias, d_bias in ((bias1, d_bias1), (bias1, d_bias1), (bias1, d_bias1), (bias2, d_bias2)):
        _check(matmul(da, db, epilog="BIAS", epilog_inputs={"bias": d_bias}),
               matmul(a, b, epilog="BIAS", epilog_inputs={"bias": bias}, execution="cpu"), "float32")
    # (planning points the descriptor at a placeholder first)
    assert settings[-2:] == [d_bias1.ptr, d_bias2.ptr] and settings.count(d_bias1.ptr) == 1


def test_failed_plan_rolls_back(rng, fake):
    fake_lt, _ = fake
    a, b = random(rng, (6, 4)), random(rng, (4, 5))
    with Matmul(to_device(a), to_device(b)) as mm:
        mm.plan()
        live = len(fake_lt.objects)
        from nvmathx.linalg import MatmulAlgorithm

        with pytest.raises(OperandError) as info:
            mm.plan(epilog="RELU", algorithms=[MatmulAlgorithm(bytes(64), 0, 0.0)])
        assert info.value.argument == "algorithms"
        assert len(fake_lt.objects) == live  # the failed plan's descriptors were destroyed
        _check(mm.execute(), matmul(a, b, execution="cpu"), "float32")  # the earlier plan still runs


def test_planning_is_logged(rng, fake, caplog):
    import logging

    logger = logging.getLogger("nvmathx.test.linalg")
    with caplog.at_level(logging.INFO, logger="nvmathx.test.linalg"):
        with Matmul(to_device(random(rng, (3, 2))), to_device(random(rng, (2, 3))), options={"logger": logger}) as mm:
            mm.plan(epilog="GELU")
            mm.autotune(iterations=1)
    messages = " ".join(record.getMessage() for record in caplog.records)
    assert "matmul plan" in messages and "GELU" in messages and "autotune" in messages


@pytest.mark.parametrize("epilog", [None, "BIAS"])
def test_host_operands_without_outputs_return_one_array(rng, fake, epilog):
    a, b, bias = random(rng, (9, 4), "float64"), random(rng, (4, 7), "float64"), random(rng, (7,), "float64")
    inputs = {"bias": bias} if epilog else None
    gpu = matmul(a, b, epilog=epilog, epilog_inputs=inputs, execution="cuda")
    assert isinstance(gpu, np.ndarray)
    _check(gpu, matmul(a, b, epilog=epilog, epilog_inputs=inputs, execution="cpu"), "float64")
    with Matmul(a, b, options={"result_type": "float64"}, execution="cuda") as mm:
        mm.plan()
        assert isinstance(mm.execute(), np.ndarray)


@pytest.mark.parametrize("epilog", [None, "RELU", "BIAS"])
def test_float8_bf16_result_scales_set_before_the_heuristic(rng, fake, epilog):
    """An algorithm found before the scale pointers were set would not run (see the fake)."""
    a = random(rng, (32, 16), "float8_e4m3fn")
    b_rows = random(rng, (48, 16), "float8_e5m2")
    bias = random(rng, (48,), "bfloat16")
    inputs = {"bias": bias} if epilog == "BIAS" else None
    options = {"result_type": "bfloat16"}

    def on_cpu(scales=None):
        return matmul(
            a, b_rows.T, epilog=epilog, epilog_inputs=inputs, quantization_scales=scales, options=options,
            execution="cpu",
        )

    cpu = on_cpu({"a": 0.5, "b": 1.5})
    device_inputs = {"bias": to_device(bias)} if inputs else None
    b = to_device(b_rows).__class__(*_transposed(to_device(b_rows)))
    for _ in range(2):  # a plan-cache miss, then a hit
        scales = {"a": to_device(np.array([0.5], np.float32)), "b": 1.5}
        _check(
            matmul(
                to_device(a), b, epilog=epilog, epilog_inputs=device_inputs, quantization_scales=scales, options=options
            ),
            cpu,
            "bfloat16",
        )
    with Matmul(to_device(a), b, quantization_scales={"a": 0.5, "b": 1.5}, options=options) as mm:
        mm.plan(epilog=epilog, epilog_inputs=device_inputs)
        _check(mm.execute(), cpu, "bfloat16")
        mm.reset_operands(quantization_scales={"b": 3.0})  # an update keeps a's scale
        _check(mm.execute(), on_cpu({"a": 0.5, "b": 3.0}), "bfloat16")
    unscaled = on_cpu()
    _check(matmul(to_device(a), b, epilog=epilog, epilog_inputs=device_inputs, options=options), unscaled, "bfloat16")


def test_autotune_sorted_by_time_failures_last(rng, fake, monkeypatch):
    """Sorted by the reported times (ties keep the heuristic's order); a failing candidate goes last."""
    from nvmathx._bindings import cublaslt as lt

    from . import _fake_cublaslt

    with Matmul(to_device(random(rng, (8, 4))), to_device(random(rng, (4, 8)))) as mm:
        first, second, third = mm.plan()
        runner = mm._runner
        costs = {first: 1.0, second: 1.0, third: None}
        launch = runner.launch

        def run():
            cost = costs[runner.algorithm]
            if cost is None:
                raise lt.CublasLtError(15, "CUBLAS_STATUS_NOT_SUPPORTED", "cublasLtMatmul", "")
            _fake_cublaslt._FakeEvent.clock += cost
            launch()

        monkeypatch.setattr(runner, "launch", run)
        timings = mm.autotune(iterations=4)
        assert [alg for _, alg in timings] == [first, second, third] == mm.algorithms
        assert timings[-1][0] == float("inf") and timings[0][0] == timings[1][0]
        costs[second] = 0.995
        assert [alg for _, alg in mm.autotune(iterations=4)] == [second, first, third]


def test_expanded_custom_options_follow_the_heuristic_and_run(rng, fake):
    a, b, bias = random(rng, (7, 5)), random(rng, (5, 6)), random(rng, (6,))
    da, db, dbias = to_device(a), to_device(b), to_device(bias)
    expected = matmul(a, b, epilog="RELU_BIAS", epilog_inputs={"bias": bias}, execution="cpu")
    with Matmul(da, db) as plain:
        heuristic = plain.plan(epilog="RELU_BIAS", epilog_inputs={"bias": dbias})
    with Matmul(da, db) as mm:
        algorithms = mm.plan(epilog="RELU_BIAS", epilog_inputs={"bias": dbias},
                             preferences={"expand_custom_options": True})
        # the heuristic's three first and unchanged; then algorithm 1 with options 1 and 3 (2 is
        # rejected by the check) and algorithm 3 with option 1; algorithm 2 has no other option
        assert algorithms[:3] == heuristic and len(algorithms) == 6
        assert len(set(algorithms)) == 6
        options = [int(np.frombuffer(alg.algo, np.uint64)[2]) for alg in algorithms[3:]]
        ids = [int(np.frombuffer(alg.algo, np.uint64)[0]) for alg in algorithms[3:]]
        assert list(zip(ids, options)) == [(1, 1), (1, 3), (3, 1)]
        assert [alg.workspace_size for alg in algorithms[3:]] == [0, 0, 2048]
        _check(mm.execute(), expected, "float32")
        for algorithm in algorithms[3:]:
            _check(mm.execute(algorithm=algorithm), expected, "float32")
        timings = mm.autotune(iterations=2)
        assert sorted(alg.algo for _, alg in timings) == sorted(alg.algo for alg in algorithms)
        again = Matmul(da, db)
        assert again.plan(epilog="RELU_BIAS", epilog_inputs={"bias": dbias},
                          algorithms=pickle.loads(pickle.dumps(algorithms[3:]))) == algorithms[3:]
        again.free()


def test_function_form_keys_the_expansion(rng, fake):
    a, b = random(rng, (4, 3)), random(rng, (3, 5))
    da, db = to_device(a), to_device(b)
    expected = matmul(a, b, execution="cpu")
    _check(matmul(da, db), expected, "float32")
    _check(matmul(da, db, preferences={"expand_custom_options": True}), expected, "float32")
    assert len(plan_cache) == 2


@pytest.mark.parametrize("epilog, input_name", [("BIAS", "bias"), ("DGELU", "gelu_aux")])
def test_function_form_keeps_no_operand_alive(rng, fake, epilog, input_name):
    """A cached plan with epilog inputs binds them per call; after the call it holds none of them
    (an MLP's activations would otherwise stay allocated between training steps)."""
    import weakref

    a, b, inputs = epilog_operands(rng, "float32", epilog, (), 8, 16, 4)
    expected = matmul(a, b, epilog=epilog, epilog_inputs=inputs, execution="cpu")
    for _ in range(2):  # the planning call and a cache hit
        da, db, extra = to_device(a), to_device(b), to_device(inputs[input_name])
        _check(matmul(da, db, epilog=epilog, epilog_inputs={input_name: extra}), expected, "float32")
        refs = [weakref.ref(x) for x in (da, db, extra)]
        del da, db, extra
        gc.collect()
        assert [ref() for ref in refs] == [None, None, None]


@pytest.fixture
def second_is_fastest(monkeypatch):
    """Launches cost the fake clock 1 ms, 0.5 ms for the heuristic's second algorithm (id 2)."""
    from nvmathx.linalg._runner import GpuRunner

    from . import _fake_cublaslt

    launch = GpuRunner.launch

    def timed_launch(runner):
        algorithm_id = int(np.frombuffer(runner.algorithm.algo, np.uint64)[0])
        _fake_cublaslt._FakeEvent.clock += 0.5 if algorithm_id == 2 else 1.0
        launch(runner)

    monkeypatch.setattr(GpuRunner, "launch", timed_launch)


def _ids(algorithms):
    return [int(np.frombuffer(algorithm.algo, np.uint64)[0]) for algorithm in algorithms]


def test_autotune_preference_in_plan(rng, fake, second_is_fastest):
    a, b = random(rng, (8, 4)), random(rng, (4, 8))
    with Matmul(to_device(a), to_device(b)) as mm:
        assert _ids(mm.plan()) == [1, 2, 3]
        assert _ids(mm.plan(preferences={"autotune": True})) == [2, 1, 3] == _ids(mm.algorithms)
        _check(mm.execute(), matmul(a, b, execution="cpu"), "float32")


def test_autotune_preference_in_the_function_form(rng, fake, second_is_fastest):
    """The planning call times the candidates once and the cache keeps the fastest alone."""
    fake_lt, _ = fake
    a, b, bias = random(rng, (8, 4)), random(rng, (4, 8)), random(rng, (8,))
    da, db, dbias = to_device(a), to_device(b), to_device(bias)
    expected = matmul(a, b, epilog="BIAS", epilog_inputs={"bias": bias}, execution="cpu")
    preferences = {"autotune": True}
    _check(matmul(da, db, epilog="BIAS", epilog_inputs={"bias": dbias}, preferences=preferences), expected, "float32")
    (key,) = plan_cache.keys(0)
    assert _ids(plan_cache.get(0, key).runner.algorithms) == [2]
    launches = fake_lt.launches
    assert launches > 3  # every candidate ran while timing
    _check(matmul(da, db, epilog="BIAS", epilog_inputs={"bias": dbias}, preferences=preferences), expected, "float32")
    assert fake_lt.launches == launches + 1 and plan_cache.info(0).hits == 2  # (one hit is the get above)
    matmul(da, db, epilog="BIAS", epilog_inputs={"bias": dbias})  # without autotune: a plan of its own
    assert len(plan_cache) == 2


@pytest.mark.parametrize("epilog, input_name, shape", [("BIAS", "bias", (8,)), ("RELU_BIAS", "bias", (6, 8)),
                                                       ("DGELU", "gelu_aux", None)])
def test_function_form_sets_epilog_inputs_by_address(rng, fake, epilog, input_name, shape):
    """Cache hits point the plan at each call's epilog input (fused bias, a bias folded into C, an aux input)."""
    a, b = random(rng, (6, 5)), random(rng, (5, 8))
    da, db = to_device(a), to_device(b)
    for _ in range(3):
        if shape is None:
            _, _, inputs = epilog_operands(rng, "float32", epilog, (), 6, 8, 5)
            value = inputs[input_name]
        else:
            value = random(rng, shape)
        expected = matmul(a, b, epilog=epilog, epilog_inputs={input_name: value}, execution="cpu")
        _check(matmul(da, db, epilog=epilog, epilog_inputs={input_name: to_device(value)}), expected, "float32")
    (key,) = plan_cache.keys(0)
    assert plan_cache.get(0, key).by_pointer and plan_cache.info(0).hits == 3  # (one is the get)


def test_float8_scales_reset_after_the_workspace_was_released(rng, fake):
    # A new scale is uploaded on the call's stream: after execute(release_workspace=True) the runner
    # holds none (this path once failed with AttributeError on None).
    a, b_rows = random(rng, (32, 48), "float8_e4m3fn"), random(rng, (16, 48), "float8_e4m3fn")
    options = {"result_type": "bfloat16"}
    with Matmul(to_device(a), to_device(b_rows).__class__(*_transposed(to_device(b_rows))),
                quantization_scales={"a": 0.5, "b": 2.0}, options=options) as mm:
        mm.plan()
        mm.execute(release_workspace=True)
        mm.reset_operands(quantization_scales={"a": 0.25, "b": 2.0})
        got = mm.execute()
    expected = matmul(a, b_rows.T, quantization_scales={"a": 0.25, "b": 2.0}, options=options, execution="cpu")
    _check(got, expected, "bfloat16")


def _at_alignment(array, alignment):
    """A DeviceArray copy of ``array`` whose data starts ``alignment`` bytes past a 256-byte boundary
    (``alignment`` 256: on the boundary), so its pointer is aligned to exactly that many bytes."""
    from helpers.fake_memory import FakeBuffer
    from nvmathx._core.device_array import DeviceArray

    from ._fake_cublaslt import view_at

    array = np.ascontiguousarray(array)
    buffer = FakeBuffer(array.nbytes + 512)
    start = buffer.handle + (-buffer.handle % 256) + alignment % 256
    view_at(start, array.shape, tuple(s // array.itemsize for s in array.strides), array.dtype)[...] = array
    result = DeviceArray(buffer, start, array.shape, tuple(s // array.itemsize for s in array.strides), array.dtype,
                         0, None)
    assert start % alignment == 0 and (alignment == 256 or start % (2 * alignment))
    return result


def test_reset_operands_holds_operands_to_the_planned_alignment(rng, fake):
    """reset_operands takes any operand at least as aligned as the one the plan was made for, and
    refuses (naming it) one less aligned; before plan() any alignment goes, as plan() chooses for
    the operands it finds."""
    a, b = random(rng, (8, 4)), random(rng, (4, 6))
    mm = Matmul(_at_alignment(a, 256), _at_alignment(b, 256))
    mm.reset_operands(a=_at_alignment(a, 16))  # before planning: the plan will be made for this one
    mm.plan()
    for alignment in (256, 16, 64, 16):  # back down to the planned alignment after a better one
        a2 = random(rng, (8, 4))
        mm.reset_operands(a=_at_alignment(a2, alignment))
        _check(mm.execute(), matmul(a2, b, execution="cpu"), "float32")
    with pytest.raises(OperandError, match="aligned to 8 bytes, less than the 16") as info:
        mm.reset_operands(a=_at_alignment(a, 8))
    assert info.value.argument == "a"
    with pytest.raises(OperandError, match="less than the 256") as info:
        mm.reset_operands(b=_at_alignment(b, 128))
    assert info.value.argument == "b"
    mm.free()


def test_reset_operands_checks_scalars_only_when_given(rng, fake):
    """Operands alone keep alpha and beta; a new beta is checked (and needs c)."""
    a, b, c = random(rng, (8, 4)), random(rng, (4, 6)), random(rng, (8, 6))
    with Matmul(to_device(a), to_device(b), to_device(c), alpha=2.0, beta=0.5) as mm:
        mm.plan()
        a2 = random(rng, (8, 4))
        mm.reset_operands(a=to_device(a2))
        _check(mm.execute(), matmul(a2, b, c, alpha=2.0, beta=0.5, execution="cpu"), "float32")
        mm.reset_operands(beta=-1.0)
        _check(mm.execute(), matmul(a2, b, c, alpha=2.0, beta=-1.0, execution="cpu"), "float32")
        with pytest.raises(Exception) as info:
            mm.reset_operands(alpha="two")
        assert getattr(info.value, "argument", None) == "alpha"
    with Matmul(to_device(a), to_device(b)) as mm:
        with pytest.raises(Exception) as info:
            mm.reset_operands(beta=1.0)
        assert getattr(info.value, "argument", None) == "beta"


def test_reset_operands_of_the_held_layout_take_the_cheap_check(rng, fake, monkeypatch):
    """Arrays of the layout held are swapped in on their key alone (no full view and check); the
    results are the new arrays' products, epilog inputs included, before and after plan()."""
    from nvmathx.linalg import _matmul

    full_checks = []
    original = _matmul.Matmul._checked
    monkeypatch.setattr(_matmul.Matmul, "_checked", lambda self, *args: full_checks.append(args[1]) or original(
        self, *args))
    a, b, bias = random(rng, (8, 4)), random(rng, (4, 6)), random(rng, (6,))
    with Matmul(to_device(a), to_device(b)) as mm:
        a = random(rng, (8, 4))
        mm.reset_operands(a=to_device(a))  # before plan(): held since construction
        mm.plan(epilog="BIAS", epilog_inputs={"bias": to_device(bias)})
        for _ in range(3):
            a, b, bias = random(rng, (8, 4)), random(rng, (4, 6)), random(rng, (6,))
            mm.reset_operands(to_device(a), to_device(b), epilog_inputs={"bias": to_device(bias)})
            _check(mm.execute(), matmul(a, b, epilog="BIAS", epilog_inputs={"bias": bias}, execution="cpu"),
                   "float32")
        assert full_checks == []
        with pytest.raises(OperandError):  # another layout: checked in full, and refused
            mm.reset_operands(a=to_device(np.asfortranarray(a)))
        assert full_checks == ["a"]


def test_reset_operands_full_check_where_the_cheap_one_cannot_say(rng, fake):
    """Another layout, a host array, a freed plan, an input of an earlier plan: the full check
    answers (accepting or naming the argument), as without the cheap path."""
    a, b, bias = random(rng, (8, 4)), random(rng, (4, 6)), random(rng, (6,))
    mm = Matmul(to_device(a), to_device(b))
    mm.plan(epilog="BIAS", epilog_inputs={"bias": to_device(bias)})
    with pytest.raises(OperandError) as info:
        mm.reset_operands(a=to_device(np.asfortranarray(a)))
    assert info.value.argument == "a"
    with pytest.raises(OperandError) as info:
        mm.reset_operands(b=a)  # a host array where a device one was planned
    assert info.value.argument == "b"
    with pytest.raises(OperandError) as info:
        mm.reset_operands(epilog_inputs={"bias": to_device(random(rng, (7,)))})
    assert info.value.argument == "epilog_inputs['bias']"
    mm.plan()  # no epilog now: the bias is no input any more
    with pytest.raises(OperandError) as info:
        mm.reset_operands(epilog_inputs={"bias": to_device(bias)})
    assert info.value.argument == "epilog_inputs"
    a2 = random(rng, (8, 4))
    mm.reset_operands(a=to_device(a2))
    _check(mm.execute(), matmul(a2, b, execution="cpu"), "float32")
    mm.free()
    with pytest.raises(InvalidStateError):
        mm.reset_operands(a=to_device(a2))
