"""The plan cache of the function forms and its public, pure key function."""

import numpy as np

import nvmathx.fft as nfft


def test_key_is_pure_and_hashable():
    key = nfft.plan_key("C2C", (16, 4096), (4096, 1), np.complex64, (1,), (4096,), 0, "torch")
    assert key == nfft.plan_key("C2C", [16, 4096], [4096, 1], "complex64", [1], [4096], 0, "torch")
    assert hash(key) == hash(nfft.plan_key("C2C", (16, 4096), (4096, 1), "complex64", (1,), (4096,), 0, "torch"))


def test_key_distinguishes_every_field():
    base = dict(fft_type="C2C", shape=(8, 8), strides=(8, 1), dtype="complex64", axes=(1,), lengths=(8,),
                device_id=0, package="cupy", overwrite=False)
    reference = nfft.plan_key(**base)
    for field, value in (("fft_type", "R2C"), ("shape", (8, 9)), ("strides", (1, 8)), ("dtype", "complex128"),
                         ("axes", (0,)), ("lengths", (16,)), ("device_id", 1), ("package", "torch"),
                         ("overwrite", True)):
        assert nfft.plan_key(**{**base, field: value}) != reference, field


def test_cache_interface():
    cache = nfft.plan_cache
    info = cache.info(0)
    assert info.device_id == 0 and info.max_size >= 1
    cache.clear()
    assert cache.info(0).size == 0
    old = cache.max_size
    cache.set_limits(max_size=3, max_memory_bytes=1 << 30)
    try:
        assert cache.info(0).max_size == 3 and cache.info(0).max_memory_bytes == 1 << 30
    finally:
        cache.set_limits(max_size=old, max_memory_bytes=None)


def test_plan_keys_are_read_by_named_place():
    """KEY_FIELDS names every place of a plan key: KEY_DEVICE is where its device is."""
    from nvmathx.fft._gpu import KEY_DEVICE, KEY_FIELDS, plan_key

    key = plan_key("C2C", (4, 8), (8, 1), "complex64", (1,), (8,), 3, "torch", False, True)
    assert len(key) == len(KEY_FIELDS) - 1 and key[KEY_DEVICE] == 3 and KEY_FIELDS[KEY_DEVICE] == "device"
    with_callbacks = plan_key("C2C", (4, 8), (8, 1), "complex64", (1,), (8,), 3, "torch", False, True,
                              (("prolog", "key", 0),))
    assert len(with_callbacks) == len(KEY_FIELDS) and KEY_FIELDS[-1] == "callbacks"
