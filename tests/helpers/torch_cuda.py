"""torch with a CUDA device, or a skipped test."""

import pytest

__all__ = ["torch_with_cuda"]


def torch_with_cuda():
    """The torch module; skips the calling test when torch or its CUDA device is missing."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA device")
    return torch
