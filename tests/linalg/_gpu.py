"""GPU test helpers: exact conversions between numpy (ml_dtypes) and torch arrays."""

import numpy as np

from nvmathx._core.dtypes import numpy_dtype

__all__ = ["to_torch", "to_numpy", "torch_dtype"]


def torch_dtype(name: str):
    import torch

    return getattr(torch, name)


def to_torch(array, device="cuda"):
    """A torch copy of a host array (bfloat16/float8 go through float32, which holds them exactly)."""
    import torch

    array = np.ascontiguousarray(array)
    name = array.dtype.name
    if name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        return torch.from_numpy(array.astype(np.float32)).to(device).to(torch_dtype(name))
    return torch.from_numpy(array).to(device)


def to_numpy(tensor, name: str | None = None):
    """A host numpy copy of a torch tensor in the matching numpy (ml_dtypes) dtype."""
    name = name or str(tensor.dtype).rpartition(".")[2]
    if name in ("bfloat16", "float8_e4m3fn", "float8_e5m2", "float16"):
        return tensor.detach().float().cpu().numpy().astype(numpy_dtype(name))
    return tensor.detach().cpu().numpy()
