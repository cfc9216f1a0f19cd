"""nvmathx.distributed: FFT, reshape and matmul of arrays spread over many GPUs and processes.

SPMD, one process per GPU, launched by ``torchrun`` or ``mpiexec``. :func:`initialize` takes the
launcher's process group (a torch.distributed group, or an mpi4py communicator) and, with
``device_id``, builds an NCCL communicator that moves GPU data; numpy operands run the same
algorithms on the CPU execution space, exchanged through the process group. Every rank passes its
own local piece (C order); every call is collective, and the ranks agree on their arguments first,
so an invalid argument on any rank raises the same typed error on every rank instead of leaving
the others waiting.

Submodules: :mod:`nvmathx.distributed.fft` (``fft``, ``ifft``, ``rfft``, ``irfft``, ``FFT``) and
:mod:`nvmathx.distributed.linalg` (``matmul``, ``Matmul`` on cuBLASMp).
"""

from __future__ import annotations

import importlib

from ._context import LeakedResourceWarning, finalize, initialize, is_initialized
from ._distributions import BlockCyclic, Box, Replicated, Slab
from ._pieces import allocate, local_box, local_offset, local_shape
from ._reshape import Reshape, reshape

_SUBPACKAGES = ("fft", "linalg")

__all__ = [
    "initialize",
    "finalize",
    "is_initialized",
    "Slab",
    "Box",
    "Replicated",
    "BlockCyclic",
    "local_box",
    "local_shape",
    "local_offset",
    "allocate",
    "reshape",
    "Reshape",
    "LeakedResourceWarning",
    *_SUBPACKAGES,
]


def __getattr__(name):
    if name in _SUBPACKAGES:
        module = importlib.import_module(f"{__name__}.{name}")
        globals()[name] = module
        return module
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_SUBPACKAGES))
