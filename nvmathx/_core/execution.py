"""Execution spaces: where a plan runs (a CUDA device, or the CPU through numpy/scipy)."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from .._bindings import cuda_driver
from .errors import DeviceUnavailableError, OperandError, OptionsError
from .options import check_positive_int

__all__ = ["ExecutionCUDA", "ExecutionCPU", "normalize_execution", "check_device_available"]


@dataclass(frozen=True)
class ExecutionCUDA:
    """Run on a CUDA device.

    Parameters
    ----------
    device_id : int
        The device ordinal (any integer, numpy's included; stored as an int). Operands on another
        device are rejected; host (numpy) operands are copied to this device and the result is
        copied back.
    """

    device_id: int = 0
    name = "cuda"

    def __post_init__(self):
        # A frozen dataclass: the checked value (a plain int, also for numpy integers) is set this way.
        object.__setattr__(self, "device_id", check_positive_int(self.device_id, "execution.device_id",
                                                                 allow_zero=True))


@dataclass(frozen=True)
class ExecutionCPU:
    """Run on the CPU with numpy/scipy (host operands only).

    Parameters
    ----------
    num_threads : int or None
        Worker threads where the CPU backend can use them (scipy.fft's ``workers``);
        None lets the backend choose. Any integer >= 1, numpy's included, stored as an int.
    """

    num_threads: int | None = None
    name = "cpu"

    def __post_init__(self):
        object.__setattr__(self, "num_threads", check_positive_int(self.num_threads, "execution.num_threads",
                                                                   allow_none=True))


def normalize_execution(execution, operand_device_id: int, argument: str = "execution"):
    """The execution space for an operand on ``operand_device_id`` (-1 = host).

    ``None`` runs where the operand lives (CPU for host arrays). The strings ``"cuda"``/``"cpu"`` and
    dicts such as ``{"name": "cuda", "device_id": 0}`` are accepted. A GPU operand cannot run on
    the CPU, and a CUDA execution space must name the operand's own device.
    """
    if execution is None:
        execution = "cpu" if operand_device_id < 0 else ExecutionCUDA(operand_device_id)
    if isinstance(execution, dict):
        fields = dict(execution)
        name = fields.pop("name", None)
        cls = {"cuda": ExecutionCUDA, "cpu": ExecutionCPU}.get(name)
        if cls is None:
            raise OptionsError(argument, f"a dict needs 'name': 'cuda' or 'cpu' (got {name!r})")
        try:
            execution = cls(**fields)
        except TypeError as error:
            raise OptionsError(argument, str(error)) from None
    if isinstance(execution, str):
        if execution == "cuda":
            execution = ExecutionCUDA(max(operand_device_id, 0))
        elif execution == "cpu":
            execution = ExecutionCPU()
        else:
            raise OptionsError(argument, f"expected 'cuda', 'cpu', ExecutionCUDA or ExecutionCPU (got {execution!r})")
    if not isinstance(execution, (ExecutionCUDA, ExecutionCPU)):
        raise OptionsError(
            argument, f"expected 'cuda', 'cpu', ExecutionCUDA or ExecutionCPU (got {type(execution).__name__})"
        )
    if isinstance(execution, ExecutionCPU) and operand_device_id >= 0:
        raise OperandError(
            argument, f"CPU execution needs host operands, but the operand is on GPU {operand_device_id}"
        )
    if isinstance(execution, ExecutionCUDA) and operand_device_id >= 0 and execution.device_id != operand_device_id:
        raise OperandError(
            argument, f"ExecutionCUDA(device_id={execution.device_id}) but the operand is on GPU {operand_device_id}"
        )
    if isinstance(execution, ExecutionCUDA) and operand_device_id < 0:
        check_device_available(execution.device_id, argument)
    return execution


def check_device_available(device_id: int, argument: str = "execution") -> None:
    """Raise DeviceUnavailableError (naming ``argument``) unless CUDA device ``device_id`` exists.

    A host operand asked to run on CUDA is the one case where nvmathx, not the operand, chooses a
    device, so it is the one place a missing driver or GPU has to be reported in the caller's terms.
    """
    count, problem = _device_count()
    if problem is not None:
        raise DeviceUnavailableError(
            argument, f"CUDA execution needs an NVIDIA GPU, but {problem}; use execution='cpu'"
        )
    if device_id >= count:
        raise DeviceUnavailableError(
            argument, f"CUDA execution on device {device_id}, but this machine has {count} CUDA device(s)"
        )


@functools.lru_cache(maxsize=1)
def _device_count() -> tuple:
    """(number of CUDA devices, None) or (0, what is missing); asked once per process."""
    try:
        count = cuda_driver.device_count()
    except ImportError as error:
        return 0, f"cuda.bindings could not be imported ({error})"
    except Exception as error:  # noqa: BLE001  (no libcuda: cuda.pathfinder's DynamicLibNotFoundError; or cuInit failed)
        return 0, f"the CUDA driver is not usable ({type(error).__name__}: {error})"
    if count == 0:
        return 0, "the CUDA driver reports no device"
    return count, None
