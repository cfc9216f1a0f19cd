"""Matmul's execution spaces: both state objects implement the declared interface (MatmulSpace)."""

import inspect

import pytest

from nvmathx.linalg._cpu import CpuMatmulState
from nvmathx.linalg._gpu import GpuMatmulState
from nvmathx.linalg._space import MatmulSpace

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
