"""The examples in nvmathx.torch's docstrings run and print what they show (CPU)."""

import doctest
import importlib

import pytest

pytest.importorskip("torch")


@pytest.mark.parametrize("module", ["nvmathx.torch._functional", "nvmathx.torch._modules", "nvmathx.torch._fused"])
def test_docstring_examples(module):
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
