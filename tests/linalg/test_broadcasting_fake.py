"""Broadcast batches through the GPU code path (the runner's calls at per-call offsets, and inputs
copied to the full batch) on the host stand-in for cuBLASLt and the device, against numpy."""

import ctypes
import gc
import logging

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nvmathx._core.device_array import DeviceArray
from nvmathx.linalg import Matmul, matmul, plan_cache

from ._broadcast_cases import cases, expected_result, make_operand, make_operands, run_product
from ._fake_cublaslt import install, to_device, to_host
from ._reference import random, reference, relative_error, tolerance


def _strided(pointer, shape, strides, dtype):
    """A numpy view of host memory at ``pointer`` with element strides of any sign."""
    dtype = np.dtype(dtype)
    size = dtype.itemsize
    low = sum((e - 1) * s for e, s in zip(shape, strides) if s < 0)
    high = sum((e - 1) * s for e, s in zip(shape, strides) if s > 0)
    raw = (ctypes.c_char * ((high - low + 1) * size)).from_address(pointer + low * size)
    return np.ndarray(tuple(shape), np.dtype(f"V{size}"), buffer=raw, offset=-low * size,
                      strides=tuple(s * size for s in strides)).view(dtype)


def _host_copy_nd(source, target, shape, source_strides, target_strides, source_dtype, target_dtype, factor, conj,
                  stream, device_id):
    """What nvmathx._codegen.elementwise.copy_nd does on the GPU, on host memory."""
    values = _strided(source, shape, source_strides, source_dtype) * factor
    _strided(target, shape, target_strides, target_dtype)[...] = np.conj(values) if conj else values


@pytest.fixture
def fake(monkeypatch):
    from nvmathx._codegen import elementwise as _kernels

    fake_lt, _ = install(monkeypatch)
    copies = []
    monkeypatch.setattr(_kernels, "copy_nd", lambda *args: (copies.append(args[2]), _host_copy_nd(*args)))
    yield fake_lt, copies
    plan_cache.clear()
    gc.collect()


def _device(x):
    """A fake-device array with ``x``'s exact layout (any strides): its whole base is copied."""
    root = x
    while isinstance(root.base, np.ndarray):
        root = root.base
    device = to_device(np.ascontiguousarray(root))
    offset = x.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    strides = tuple(s // x.itemsize for s in x.strides)
    return DeviceArray(device.buffer, device.ptr + offset, x.shape, strides, x.dtype, 0, None)


def _first(out):
    return out[0] if isinstance(out, tuple) else out


def _settings(max_examples):
    return settings(suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None,
                    max_examples=max_examples)


@_settings(60)
@given(case=cases(), dtype=st.sampled_from(["float64", "float32", "float16"]), stateful=st.booleans(),
       draw=st.integers(0, 2**32 - 1))
def test_fake_device_matches_numpy(fake, seed, case, dtype, stateful, draw):
    rng = np.random.default_rng([seed, draw])
    a, b, c, inputs = make_operands(rng, case, dtype)
    alpha, beta = 0.5, (-2.0 if c is not None else 0)
    expected = expected_result(a, b, c, alpha, beta, case.epilog, inputs)
    da, db = _device(a), _device(b)
    dc = _device(c) if c is not None else None
    dinputs = {name: _device(x) for name, x in inputs.items()} if inputs else None
    result = to_host(run_product(da, db, dc, alpha, beta, case.epilog, dinputs, stateful))
    assert result.shape == expected.shape
    assert relative_error(result, expected) < tolerance(dtype)


def _plan_of(mm):
    return mm._runner.plan.traits.batches


def test_partly_broadcast_batch_loops_over_calls(fake, rng, caplog):
    fake_lt, copies = fake
    a, b = make_operand(rng, (2, 1), 64, 32, "C"), make_operand(rng, (3,), 32, 48, "T")
    with caplog.at_level(logging.DEBUG, logger="nvmathx"):
        mm = Matmul(_device(a), _device(b))
        mm.plan()
    assert any("2 cuBLASLt calls of 3 matrices" in record.getMessage() for record in caplog.records)
    launches = fake_lt.launches
    result = to_host(mm.execute())
    assert fake_lt.launches - launches == 2 and not copies and not mm._runner._simple
    assert result.shape == (2, 3, 64, 48) and relative_error(result, np.matmul(a, b)) < 1e-12
    mm.free()


def test_many_tiny_calls_copy_inputs_first(fake, rng, caplog):
    """(5, 1, 2, 3) @ (5, 3, 2) + c (5, 1, 2, 2): five launches cost more than copying a, b and c to
    the full batch and launching once."""
    fake_lt, copies = fake
    a, b = random(rng, (5, 1, 2, 3), "float64"), random(rng, (5, 3, 2), "float64")
    c = random(rng, (5, 1, 2, 2), "float64")
    da, db, dc = _device(a), _device(b), _device(c)
    with caplog.at_level(logging.DEBUG, logger="nvmathx"):
        mm = Matmul(da, db, dc, beta=1.0)
        mm.plan()
    assert _plan_of(mm).calls == 1 and set(_plan_of(mm).expand) == {"a", "b", "c"}
    assert any("after copying" in record.getMessage() for record in caplog.records)
    launches = fake_lt.launches
    np.testing.assert_allclose(to_host(mm.execute()), reference(a, b, c, beta=1.0), rtol=1e-12, atol=1e-12)
    assert fake_lt.launches - launches == 1 and len(copies) == 3
    # the copies are refreshed on every run: a changed in place is seen
    a[...] = random(rng, a.shape, "float64")
    _strided(da.ptr, da.shape, da.strides, da.dtype)[...] = a
    np.testing.assert_allclose(to_host(mm.execute()), reference(a, b, c, beta=1.0), rtol=1e-12, atol=1e-12)
    timings = mm.autotune(iterations=1)  # times the single call on the copies
    assert len(timings) == 3
    np.testing.assert_allclose(to_host(mm.execute()), reference(a, b, c, beta=1.0), rtol=1e-12, atol=1e-12)
    b2 = random(rng, b.shape, "float64")
    mm.reset_operands(b=_device(b2))
    np.testing.assert_allclose(to_host(mm.execute()), reference(a, b2, c, beta=1.0), rtol=1e-12, atol=1e-12)
    mm.free()


def test_function_form_runs_calls_on_each_calls_operands(fake, rng):
    a, b = make_operand(rng, (2, 1), 8, 4, "C"), make_operand(rng, (3,), 4, 5, "C")
    for _ in range(2):  # the second call hits the cache with new pointers
        a, b = random(rng, a.shape, "float64"), random(rng, b.shape, "float64")
        result = to_host(matmul(_device(a), _device(b)))
        assert relative_error(result, np.matmul(a, b)) < 1e-12
    assert plan_cache.info(0).hits == 1


@pytest.mark.parametrize("epilog", ["RELU_AUX_BIAS", "GELU_AUX_BIAS", "DRELU_BGRAD", "DGELU", "BGRADB"])
def test_epilog_buffers_follow_the_calls(fake, rng, epilog):
    """Biases, auxiliary inputs and outputs and bias gradients at each call's offsets."""
    m, n, k = 16, 20, 8
    a, b = random(rng, (2, 1, m, k), "float32"), random(rng, (3, k, n), "float32")
    inputs = {}
    if "BIAS" in epilog and "BGRAD" not in epilog:
        inputs["bias"] = random(rng, (3, 1, n), "float32")
    if epilog.startswith("DRELU"):
        _, forward = matmul(a, b, epilog="RELU_AUX")
        inputs["relu_aux"] = forward["relu_aux"][:, :1]  # (2, 1, m, 16) broadcast over axis 1
    if epilog.startswith("DGELU"):
        padded = np.zeros((3, m, 24), np.float32)
        padded[..., :n] = random(rng, (3, m, n), "float32")
        inputs["gelu_aux"] = padded[..., :n]
    cpu = matmul(a, b, epilog=epilog, epilog_inputs=inputs or None, execution="cpu")
    device_inputs = {key: _device(v) for key, v in inputs.items()} or None
    gpu = matmul(_device(a), _device(b), epilog=epilog, epilog_inputs=device_inputs)
    if isinstance(cpu, tuple):
        for name, expected in cpu[1].items():
            got = to_host(gpu[1][name])
            assert got.shape == expected.shape, name
            if name == "relu_aux":
                np.testing.assert_array_equal(got, expected)
            else:
                assert relative_error(got, expected) < 1e-5, name
    assert relative_error(to_host(_first(gpu)), _first(cpu)) < 1e-5


def test_one_call_keeps_the_fast_path(fake, rng):
    a, b = random(rng, (2, 3, 8, 4), "float32"), random(rng, (4, 5), "float32")
    with Matmul(_device(a), _device(b)) as mm:
        mm.plan()
        assert not mm._runner.launch_offsets and mm._runner._simple and mm._ready
        assert relative_error(to_host(mm.execute()), reference(a, b)) < 1e-5
