"""MatmulOptions of the distributed matmul (frozen, validated on construction)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from ..._core.errors import OptionsError
from ..._core.memory import check_memory_resource
from ..._core.options import check_choice

__all__ = ["MatmulOptions", "COMPUTE_TYPES"]

# cublasComputeType_t names (without the CUBLAS_COMPUTE_ prefix) that cuBLASMp takes
COMPUTE_TYPES = ("32F", "32F_PEDANTIC", "32F_FAST_16F", "32F_FAST_16BF", "32F_FAST_TF32", "64F", "64F_PEDANTIC")


@dataclass(frozen=True)
class MatmulOptions:
    """Options of :class:`nvmathx.distributed.linalg.Matmul` and :func:`~nvmathx.distributed.linalg.matmul`.
    Frozen: derive a changed copy with ``dataclasses.replace``, which validates again.

    Parameters
    ----------
    compute_type : str or None
        cuBLAS compute type without its prefix (``"32F"``, ``"32F_FAST_TF32"``, ``"64F"``, ...).
        Default: ``"64F"`` for float64 and complex128 operands, ``"32F"`` otherwise. The CPU
        execution space computes in the operands' precision (float32 for 16-bit types) whatever
        the compute type.
    force_distributed : bool
        By default a world of one rank, and the combinations of distributions whose result pieces
        need no other rank's data (see :func:`~nvmathx.distributed.linalg.matmul`), multiply each
        rank's own pieces with :mod:`nvmathx.linalg`. True runs the distributed algorithm instead
        (cuBLASMp on a GPU, even on a 1 x 1 process grid; the gather on the CPU space).
    algorithm : {"no_overlap", "default"}
        cuBLASMp's algorithm type: "no_overlap" (the default) communicates, then multiplies, with
        workspaces from ``memory_resource``; "default" lets cuBLASMp choose, whose communication-
        overlapping algorithms need NVSHMEM (nvmathx sets ``CUBLASMP_DISABLE_NVSHMEM=1`` unless
        the variable is set) and a symmetric-heap workspace, which nvmathx does not allocate.
    memory_resource : cuda.core MemoryResource or None
        Where the workspace comes from (default: the device's).
    blocking : True or "auto"
        True: ``execute()`` returns once the result is ready; "auto": it returns at once (GPU).
    logger : logging.Logger or None
        Where planning is reported (default: the ``nvmathx`` logger).

    Raises
    ------
    OptionsError
        When a field has an invalid value (the message names the field).
    """

    compute_type: str | None = None
    force_distributed: bool = False
    algorithm: str = "no_overlap"
    memory_resource: Any = None
    blocking: Any = "auto"
    logger: logging.Logger | None = None

    def __post_init__(self):
        if self.compute_type is not None:
            check_choice(self.compute_type, COMPUTE_TYPES, "options.compute_type")
        if not isinstance(self.force_distributed, bool):
            raise OptionsError("options.force_distributed", f"expected True or False (got {self.force_distributed!r})")
        check_choice(self.algorithm, ("no_overlap", "default"), "options.algorithm")
        check_choice(self.blocking, (True, "auto"), "options.blocking")
        check_memory_resource(self.memory_resource, "options.memory_resource")
        if self.logger is not None and not isinstance(self.logger, logging.Logger):
            raise OptionsError("options.logger", f"expected a logging.Logger (got {type(self.logger).__name__})")

    def key(self) -> tuple:
        """What of the options every rank must agree on, hashable."""
        return self.compute_type, self.force_distributed, self.algorithm, self.blocking
