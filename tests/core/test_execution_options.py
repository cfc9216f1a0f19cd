from dataclasses import dataclass

import pytest

from nvmathx import ExecutionCPU, ExecutionCUDA
from nvmathx._core import execution
from nvmathx._core.errors import DeviceUnavailableError, OperandError, OptionsError
from nvmathx._core.execution import normalize_execution
from nvmathx._core.options import check_choice, check_or_create_options, check_positive_int


def test_default_follows_the_operand():
    assert normalize_execution(None, -1) == ExecutionCPU()
    assert normalize_execution(None, 2) == ExecutionCUDA(2)


@pytest.mark.parametrize(
    "given, device, expected",
    [
        ("cuda", -1, ExecutionCUDA(0)),
        ("cuda", 1, ExecutionCUDA(1)),
        ("cpu", -1, ExecutionCPU()),
        ({"name": "cpu", "num_threads": 4}, -1, ExecutionCPU(4)),
        ({"name": "cuda", "device_id": 0}, -1, ExecutionCUDA(0)),
        (ExecutionCPU(2), -1, ExecutionCPU(2)),
    ],
)
def test_accepted_forms(given, device, expected, monkeypatch):
    monkeypatch.setattr(execution, "_device_count", lambda: (2, None))  # as on a machine with two GPUs
    assert normalize_execution(given, device) == expected


MISSING = [(0, "the CUDA driver is not usable (DynamicLibNotFoundError: libcuda.so.1)"),
           (0, "the CUDA driver reports no device")]


@pytest.mark.parametrize("count, problem", MISSING)
@pytest.mark.parametrize("given", ["cuda", ExecutionCUDA(0), {"name": "cuda"}])
def test_cuda_for_a_host_operand_without_a_gpu_names_execution_and_the_cause(given, count, problem, monkeypatch):
    monkeypatch.setattr(execution, "_device_count", lambda: (count, problem))
    with pytest.raises(DeviceUnavailableError) as info:
        normalize_execution(given, -1)
    assert isinstance(info.value, RuntimeError) and info.value.argument == "execution"
    assert str(info.value).startswith("execution: CUDA execution needs an NVIDIA GPU, but " + problem)


def test_cuda_on_a_device_the_machine_lacks(monkeypatch):
    monkeypatch.setattr(execution, "_device_count", lambda: (1, None))
    with pytest.raises(DeviceUnavailableError, match="^execution: .*device 3.* 1 CUDA device"):
        normalize_execution(ExecutionCUDA(3), -1)
    assert normalize_execution(ExecutionCUDA(0), -1) == ExecutionCUDA(0)


def test_the_device_probe_reports_this_machine():
    count, problem = execution._device_count()
    assert (count > 0) == (problem is None)
    assert problem is None or "driver" in problem or "cuda.bindings" in problem


@pytest.mark.parametrize("make", ["FFT", "FFT-ExecutionCUDA", "matmul", "Matmul"])
def test_every_entry_point_raises_it_for_host_operands(make, monkeypatch):
    import numpy as np

    import nvmathx.fft
    import nvmathx.linalg

    monkeypatch.setattr(execution, "_device_count", lambda: (0, "the CUDA driver reports no device"))
    x = np.ones((4, 4), np.complex64)
    calls = {
        "FFT": lambda: nvmathx.fft.FFT(x, execution="cuda"),
        "FFT-ExecutionCUDA": lambda: nvmathx.fft.FFT(x, execution=ExecutionCUDA()),
        "Matmul": lambda: nvmathx.linalg.Matmul(x, x, execution="cuda"),
        "matmul": lambda: nvmathx.linalg.matmul(x, x, execution={"name": "cuda", "device_id": 0}),
    }
    with pytest.raises(DeviceUnavailableError, match="^execution: "):
        calls[make]()


@pytest.mark.parametrize("bad", ["gpu", 3, {"name": "tpu"}, {"name": "cpu", "threads": 2}])
def test_bad_execution_names_argument(bad):
    with pytest.raises(OptionsError, match="^execution"):
        normalize_execution(bad, -1)


def test_cpu_execution_rejects_device_operands():
    with pytest.raises(OperandError, match="^execution:.*host"):
        normalize_execution("cpu", 0)


def test_device_mismatch():
    with pytest.raises(OperandError, match="device_id=1"):
        normalize_execution(ExecutionCUDA(1), 0)


@pytest.mark.parametrize("bad", [dict(device_id=-1), dict(device_id=1.0)])
def test_execution_cuda_validates(bad):
    with pytest.raises(OptionsError, match="device_id"):
        ExecutionCUDA(**bad)


def test_execution_cpu_validates():
    with pytest.raises(OptionsError, match="num_threads"):
        ExecutionCPU(num_threads=0)


@dataclass
class _Opts:
    size: int = 1
    name: str = "x"


def test_check_or_create_options():
    assert check_or_create_options(_Opts, None, "options") == _Opts()
    assert check_or_create_options(_Opts, {"size": 3}, "options") == _Opts(size=3)
    given = _Opts(size=5)
    assert check_or_create_options(_Opts, given, "options") is given
    with pytest.raises(OptionsError, match="^options:.*sizes"):
        check_or_create_options(_Opts, {"sizes": 3}, "options")
    with pytest.raises(OptionsError, match="^options:"):
        check_or_create_options(_Opts, 3, "options")


def test_small_checks():
    assert check_choice("a", ("a", "b"), "mode") == "a"
    with pytest.raises(OptionsError, match="^mode:"):
        check_choice("c", ("a", "b"), "mode")
    assert check_positive_int(0, "n", allow_zero=True) == 0
    with pytest.raises(OptionsError, match="^n:"):
        check_positive_int(0, "n")
    with pytest.raises(OptionsError):
        check_positive_int(True, "n")
