"""Operands, results, staging and streams on a real GPU, for cupy, torch CUDA and jax arrays."""

import numpy as np
import pytest

from helpers.torch_random import randn
from nvmathx._core.streams import resolve_stream
from nvmathx._core.tensor import allocate_like, copy_to_host, stage_to_device, wrap_operand

pytestmark = pytest.mark.gpu


def _torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA")
    return torch


def _jax_gpu():
    jax = pytest.importorskip("jax")
    try:
        devices = jax.devices("gpu")
    except RuntimeError:
        pytest.skip("jax has no GPU backend")
    if not devices:
        pytest.skip("jax has no GPU backend")
    return jax


def test_torch_cuda_view_and_result(rng):
    torch = _torch()
    tensor = randn(rng, 8, 6, device="cuda", dtype=torch.bfloat16)[:, ::2]
    operand = wrap_operand(tensor, "x")
    assert operand.device_id == tensor.device.index
    assert operand.ptr == tensor.data_ptr() and operand.strides == tensor.stride()
    stream = resolve_stream(None, operand.device_id, operand.adapter.current_stream)
    assert stream.handle == torch.cuda.current_stream().cuda_stream
    result = allocate_like(operand, (4, 5), np.float32, operand.device_id, stream)
    assert isinstance(result.obj, torch.Tensor) and result.obj.is_cuda and result.obj.shape == (4, 5)


def test_cupy_view_result_and_current_stream(rng):
    cupy = pytest.importorskip("cupy")
    array = cupy.asarray(rng.standard_normal((5, 7))).T
    operand = wrap_operand(array, "x")
    assert operand.device_id == 0 and operand.ptr == array.data.ptr
    assert operand.strides == (1, 7)
    with cupy.cuda.Stream() as user_stream:
        stream = resolve_stream(None, 0, operand.adapter.current_stream)
        assert stream.handle == user_stream.ptr
    result = allocate_like(operand, (3,), np.complex64, 0, stream)
    assert isinstance(result.obj, cupy.ndarray) and result.obj.dtype == np.complex64


def test_jax_view_and_result_through_dlpack(rng):
    jax = _jax_gpu()
    import jax.numpy as jnp

    host = rng.standard_normal((4, 3)).astype(np.float32)
    array = jnp.asarray(host)
    operand = wrap_operand(array, "x")
    assert operand.device_id >= 0 and operand.shape == (4, 3) and operand.dtype == np.float32
    stream = resolve_stream(None, operand.device_id, operand.adapter.current_stream)
    # a jax result: fill a DeviceArray from a known host array, then hand it to jax
    staged = stage_to_device(wrap_operand(host * 2, "x"), operand.device_id, stream)
    converted = operand.adapter.from_device_array(staged.obj)
    assert isinstance(converted, jax.Array)
    np.testing.assert_array_equal(np.asarray(converted), host * 2)


@pytest.mark.parametrize(
    "make",
    [
        lambda rng: rng.standard_normal((33, 17)),
        lambda rng: rng.standard_normal((16, 9))[::2, ::3],
        lambda rng: np.asfortranarray(rng.standard_normal((8, 5)).astype(np.complex64)),
    ],
)
def test_staging_round_trip(rng, make):
    host = make(rng)
    operand = wrap_operand(host, "x")
    stream = resolve_stream(None, 0)
    device = stage_to_device(operand, 0, stream)
    assert device.device_id == 0 and device.package == "nvmathx"
    back = copy_to_host(device, operand, stream)
    assert isinstance(back, np.ndarray)
    np.testing.assert_array_equal(back, host)


def test_device_array_into_torch_and_cupy(rng):
    torch = _torch()
    cupy = pytest.importorskip("cupy")
    host = rng.standard_normal((6, 4))
    stream = resolve_stream(None, 0)
    staged = stage_to_device(wrap_operand(host, "x"), 0, stream)
    np.testing.assert_array_equal(torch.from_dlpack(staged.obj).cpu().numpy(), host)
    np.testing.assert_array_equal(cupy.asnumpy(cupy.from_dlpack(staged.obj)), host)
    np.testing.assert_array_equal(cupy.asnumpy(cupy.asarray(staged.obj)), host)  # CUDA Array Interface


def test_streams_from_torch_cupy_and_cuda_core():
    torch = _torch()
    cupy = pytest.importorskip("cupy")
    from cuda.core import Device

    torch_stream = torch.cuda.Stream()
    assert resolve_stream(torch_stream, 0).handle == torch_stream.cuda_stream
    cupy_stream = cupy.cuda.Stream()
    assert resolve_stream(cupy_stream, 0).handle == cupy_stream.ptr
    core_stream = Device(0).create_stream()
    holder = resolve_stream(core_stream, 0)
    assert holder.handle == int(core_stream.handle) and holder.core is core_stream
    assert resolve_stream(int(core_stream.handle), 0) is holder
    # the default stream, and a cuda.core Stream made once for a raw handle
    default = resolve_stream(None, 0)
    assert default.core is not None and int(default.core.handle) == default.handle
