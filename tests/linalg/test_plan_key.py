"""plan_key: a pure function of what changes the plan; plan_cache is the shared PlanCache."""

import pickle

import numpy as np

from nvmathx.linalg import MatmulAlgorithm, MatmulOptions, plan_cache, plan_key


def _aligned(values, alignment=256):
    """A float32 copy of ``values`` whose data starts on an ``alignment``-byte boundary."""
    raw = np.empty(values.size + alignment // 4, np.float32)
    offset = (-raw.ctypes.data % alignment) // 4
    out = raw[offset:offset + values.size].reshape(values.shape)
    out[...] = values
    return out


def test_key_ignores_values_and_sees_layouts(rng):
    a, b = _aligned(rng.standard_normal((8, 4))), _aligned(rng.standard_normal((4, 6)))
    key = plan_key(a, b)
    assert hash(key) == hash(plan_key(_aligned(a), _aligned(b)))  # other data, same plan
    assert key == plan_key(_aligned(rng.standard_normal((8, 4))), b)
    raw = np.empty(8 * 4 + 1, np.float32)
    misaligned = (raw[1:] if raw.ctypes.data % 8 == 0 else raw[:-1]).reshape(8, 4)  # 4-byte aligned
    assert key != plan_key(misaligned, b)
    assert key != plan_key(np.asfortranarray(a), b)
    assert key != plan_key(a.astype(np.float64), b.astype(np.float64))
    assert key != plan_key(a, b, epilog="RELU")
    assert key != plan_key(a, b, options={"compute_type": "32F_FAST_TF32"})
    limited = plan_key(a, b, options={"workspace_limit": 1024})
    assert limited == plan_key(a, b, options=MatmulOptions(workspace_limit=1024))
    bias = np.ones(6, np.float32)
    assert plan_key(a, b, epilog="BIAS", epilog_inputs={"bias": bias}) != plan_key(
        a, b, epilog="BIAS", epilog_inputs={"bias": np.ones((8, 6), np.float32)})


def test_plan_cache_interface():
    info = plan_cache.info(0)
    assert info.max_size == plan_cache.max_size and info.size == len(plan_cache.keys(0))
    plan_cache.clear()
    assert len(plan_cache) == 0


def test_algorithm_pickles():
    algorithm = MatmulAlgorithm(bytes(range(64)), 1024, 0.5)
    assert pickle.loads(pickle.dumps(algorithm)) == algorithm


def test_key_holds_every_operands_device_and_library():
    from helpers.fake_memory import FakeBuffer
    from nvmathx._core.device_array import DeviceArray

    def device_array(device_id):
        buffer = FakeBuffer(64 * 4)
        return DeviceArray(buffer, buffer.handle, (8, 8), (8, 1), np.dtype(np.float32), device_id, None)

    a = device_array(0)
    key = plan_key(a, device_array(0))
    assert key == plan_key(device_array(0), device_array(0))
    assert key != plan_key(a, device_array(1))  # b on another device: not this plan
    assert key != plan_key(a, device_array(0), device_array(1))


class _InputDict(dict):
    """A dict of epilog inputs that is not exactly a dict: keyed by the general path."""


def test_one_epilog_input_keys_as_the_general_path(rng):
    """The one-input key (every call of the torch layers) is the key the general path makes: a
    call hits the plan another spelling of the same problem planned."""
    a, b = _aligned(rng.standard_normal((8, 4))), _aligned(rng.standard_normal((4, 6)))
    bias = _aligned(rng.standard_normal(6))
    aux = np.zeros((8, 6), np.float32)
    for epilog, inputs in (("BIAS", {"bias": bias}), ("BIAS", {"bias": bias[:6]}), ("DRELU", {"relu_aux": aux})):
        key = plan_key(a, b, epilog=epilog, epilog_inputs=inputs)
        assert key == plan_key(a, b, epilog=epilog, epilog_inputs=_InputDict(inputs))
        assert hash(key) == hash(plan_key(a, b, epilog=epilog, epilog_inputs=_InputDict(inputs)))
    misaligned = _aligned(rng.standard_normal(7))[1:]  # 4-byte aligned: another plan
    assert plan_key(a, b, epilog="BIAS", epilog_inputs={"bias": misaligned}) != plan_key(
        a, b, epilog="BIAS", epilog_inputs={"bias": bias})


def test_two_device_scales_key_as_the_general_path(rng):
    """a's and b's float8 scales in device memory (every GEMM of the float8 layers), with or without
    a bias: the key the general path makes, whatever order the names come in; host scales and
    numbers keep theirs."""
    from helpers.fake_memory import FakeBuffer
    from nvmathx._core.device_array import DeviceArray

    def device_array(shape, device_id=0):
        buffer = FakeBuffer(256)
        return DeviceArray(buffer, buffer.handle, shape, (1,) * len(shape), np.dtype(np.float32), device_id, None)

    a, b = _aligned(rng.standard_normal((8, 4))), _aligned(rng.standard_normal((4, 6)))
    bias = _aligned(rng.standard_normal(6))
    scale_a, scale_b = device_array((1,)), device_array((1,))
    host_scale = np.ones(1, np.float32)
    for scales in ({"a": scale_a, "b": scale_b}, {"b": scale_b, "a": scale_a}, {"a": scale_a, "b": host_scale},
                   {"a": 2.0, "b": scale_b}):
        for epilog, inputs in ((None, None), ("BIAS", {"bias": bias})):
            key = plan_key(a, b, epilog=epilog, epilog_inputs=inputs, quantization_scales=scales)
            general = plan_key(a, b, epilog=epilog, epilog_inputs=_InputDict(inputs) if inputs else None,
                               quantization_scales=_InputDict(scales))
            assert key == general and hash(key) == hash(general), (scales, epilog)
    two_devices = plan_key(a, b, quantization_scales={"a": scale_a, "b": device_array((1,), 1)})
    assert two_devices != plan_key(a, b, quantization_scales={"a": scale_a, "b": scale_b})
