from dataclasses import dataclass

import pytest

from nvmathx import ExecutionCPU, ExecutionCUDA
from nvmathx._core.errors import OperandError, OptionsError
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
def test_accepted_forms(given, device, expected):
    assert normalize_execution(given, device) == expected


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
