"""torch CPU tensors presented as CUDA tensors of device 0, for the host fakes of cuBLASLt and cuFFT.

The fakes read and write "device" memory at host addresses, so a CPU tensor's memory serves: with
``Tensor.get_device`` reporting 0, nvmathx takes torch tensors down its GPU code path (torch's
adapter, keys, lazy views, result allocator), and results are CPU tensors again.
"""

__all__ = ["present_torch_as_device"]


def present_torch_as_device(monkeypatch, stream_handle=7):
    """Patch torch (and nvmathx's torch adapter) for the duration of a test; returns torch (the
    test skips where torch is not installed)."""
    import pytest

    torch = pytest.importorskip("torch")

    from nvmathx._core.tensor import adapter_for

    monkeypatch.setattr(torch.Tensor, "get_device", lambda self: 0)
    adapter = adapter_for(torch.empty(0))
    monkeypatch.setattr(adapter, "current_stream", lambda device_id: stream_handle)
    monkeypatch.setattr(adapter, "_devices", {0: torch.device("cpu"), -1: torch.device("cpu")})
    return torch
