"""Random torch tensors drawn from the test's seeded numpy generator (the ``rng`` fixture), so a torch
test replays from its printed seed like every other test."""

import numpy as np

__all__ = ["randn", "randn_like"]


def randn(rng: np.random.Generator, *shape, dtype=None, device="cpu"):
    """Standard-normal values of ``shape`` as a torch tensor of ``dtype`` (default float32) on
    ``device``; complex dtypes get an independent imaginary part, as ``torch.randn`` does."""
    import torch

    dtype = torch.float32 if dtype is None else dtype
    values = rng.standard_normal(shape)
    if dtype.is_complex:
        values = (values + 1j * rng.standard_normal(shape)) / np.sqrt(2)
    return torch.from_numpy(values).to(device=device, dtype=dtype)


def randn_like(rng: np.random.Generator, tensor):
    """:func:`randn` with ``tensor``'s shape, dtype and device."""
    return randn(rng, *tensor.shape, dtype=tensor.dtype, device=tensor.device)
