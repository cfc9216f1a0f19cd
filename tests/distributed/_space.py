"""Where a test world's operands live: numpy (the CPU space, the default) or torch CUDA tensors on
each rank's GPU (``NVMATHX_WORLD_DEVICE=cuda``, set by the GPU worlds of test_gpu_worlds.py), so
one set of cases serves both."""

import os

import numpy as np


def on_gpu() -> bool:
    return os.environ.get("NVMATHX_WORLD_DEVICE") == "cuda"


def to_space(array):
    """A host array as this world's kind of operand (None stays None)."""
    if array is None or not on_gpu():
        return array
    import torch

    return torch.from_numpy(np.ascontiguousarray(array)).cuda()


def to_host(array) -> np.ndarray:
    """A result back as a numpy array (it must be this world's kind of array)."""
    if not on_gpu():
        assert isinstance(array, np.ndarray), type(array)
        return array
    import torch

    assert isinstance(array, torch.Tensor) and array.is_cuda, type(array)
    return array.cpu().numpy()
