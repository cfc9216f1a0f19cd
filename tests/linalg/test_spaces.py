"""Matmul's execution spaces: both state objects implement the declared interface (MatmulSpace), and
a failed re-plan leaves the earlier plan whole in either space (what it runs, and what
``reset_operands`` holds new operands to)."""

import gc
import inspect

import numpy as np
import pytest

from nvmathx import NvmathxError, OperandError
from nvmathx.linalg import Matmul, MatmulAlgorithm, plan_cache
from nvmathx.linalg._cpu import CpuMatmulState
from nvmathx.linalg._gpu import GpuMatmulState
from nvmathx.linalg._space import MatmulSpace

from ._fake_cublaslt import install, to_device, to_host
from ._reference import random, relative_error

_MEMBERS = sorted(name for name in vars(MatmulSpace) if not name.startswith("_"))


def test_the_interface_declares_what_matmul_asks():
    assert _MEMBERS == ["algorithms", "autotune", "check_alignment", "direct", "execute", "free", "plan", "reset",
                        "reset_held"]


@pytest.mark.parametrize("space", [CpuMatmulState, GpuMatmulState])
@pytest.mark.parametrize("name", _MEMBERS)
def test_each_space_implements_the_interface(space, name):
    declared, defined = inspect.getattr_static(MatmulSpace, name), inspect.getattr_static(space, name)
    assert isinstance(defined, property) == isinstance(declared, property), name
    if not isinstance(declared, property):
        expected = [(p.name, p.kind) for p in inspect.signature(declared).parameters.values()]
        assert [(p.name, p.kind) for p in inspect.signature(defined).parameters.values()] == expected


@pytest.fixture
def fake(monkeypatch):
    fake_lt, resource = install(monkeypatch)
    yield fake_lt
    plan_cache.clear()
    gc.collect()  # plans a failed test left behind are freed while the fakes are still in place


def _expected(a, b, bias):
    return a.astype(np.float64) @ b.astype(np.float64) + bias.reshape(-1).astype(np.float64)


def _failed_replan(mm, bias):
    """A plan() that fails after its epilog input was viewed (and, on the GPU, staged): the CPU
    refuses algorithms, the GPU this one (OptionsError and OperandError, both naming it)."""
    with pytest.raises(NvmathxError) as info:
        mm.plan(epilog="BIAS", epilog_inputs={"bias": bias}, algorithms=[MatmulAlgorithm(bytes(64), 0, 0.0)])
    assert info.value.argument == "algorithms"


@pytest.mark.parametrize("where", ["cpu", "fake gpu"])
def test_a_failed_replan_keeps_the_earlier_plan_and_its_inputs(rng, where, request):
    if where == "fake gpu":
        request.getfixturevalue("fake")
    device, host = (to_device, to_host) if where == "fake gpu" else (np.asarray, np.asarray)
    m, n, k = 6, 5, 4
    a, b = random(rng, (m, k)), random(rng, (k, n))
    bias, row_bias, new_bias = random(rng, (n,)), random(rng, (1, n)), random(rng, (n,))
    with Matmul(device(a), device(b)) as mm:
        mm.plan(epilog="BIAS", epilog_inputs={"bias": device(bias)})
        _failed_replan(mm, device(row_bias))
        assert relative_error(host(mm.execute()), _expected(a, b, bias)) < 1e-5
        # the bias is held to the plan that runs, (N,), not to the (1, N) of the plan that failed
        with pytest.raises(OperandError) as info:
            mm.reset_operands(epilog_inputs={"bias": device(random(rng, (1, n)))})
        assert info.value.argument == "epilog_inputs['bias']"
        mm.reset_operands(epilog_inputs={"bias": device(new_bias)})
        assert relative_error(host(mm.execute()), _expected(a, b, new_bias)) < 1e-5
