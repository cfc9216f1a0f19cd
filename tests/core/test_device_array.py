"""DeviceArray's exports. The DLPack capsule is checked on the CPU by exporting host memory with the
CPU device type, which numpy and torch can import."""

import gc

import numpy as np
import pytest

from nvmathx._core import device_array
from nvmathx._core.device_array import DeviceArray


class HostExport:
    def __init__(self, array):
        self.array = array

    def __dlpack__(self, **kwargs):
        return device_array._make_capsule(self.array, 1)

    def __dlpack_device__(self):
        return (1, 0)


def _device_array_over(host):
    strides = tuple(s // host.itemsize for s in host.strides)
    return DeviceArray(None, host.ctypes.data, host.shape, strides, host.dtype, -1, None)


@pytest.mark.parametrize("dtype", [np.float32, np.complex128, np.int32, np.float16])
def test_capsule_round_trip_through_numpy(rng, dtype):
    host = (rng.standard_normal((4, 6)) * 10).astype(dtype)[:, ::2]
    imported = np.from_dlpack(HostExport(_device_array_over(host)))
    np.testing.assert_array_equal(imported, host)
    del imported
    gc.collect()
    assert not device_array._exported


def test_unconsumed_capsule_is_released():
    host = np.arange(6.0)
    before = set(device_array._exported)  # other tests in this process may hold exports of their own
    capsule = device_array._make_capsule(_device_array_over(host), 1)
    (ours,) = set(device_array._exported) - before
    del capsule
    gc.collect()
    assert ours not in device_array._exported  # (other exports may come and go meanwhile)


def test_capsule_into_torch_with_bfloat16(rng):
    torch = pytest.importorskip("torch")
    import ml_dtypes

    host = rng.standard_normal((3, 5)).astype(ml_dtypes.bfloat16)
    tensor = torch.from_dlpack(HostExport(_device_array_over(host)))
    assert tensor.dtype == torch.bfloat16
    np.testing.assert_array_equal(tensor.float().numpy(), host.astype(np.float32))


def test_cuda_array_interface_fields():
    array = DeviceArray(None, 0x10000, (3, 4), (1, 3), np.float32, 0, None)
    interface = array.__cuda_array_interface__
    assert interface["shape"] == (3, 4)
    assert interface["strides"] == (4, 12)
    assert interface["typestr"] == "<f4"
    assert interface["data"] == (0x10000, False)
    assert array.__dlpack_device__() == (2, 0)
    assert array.size == 12
