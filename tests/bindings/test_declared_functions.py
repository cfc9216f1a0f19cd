"""Every C function a binding calls is declared in its signature table (a missing one fails only at
run time, on the machine that has the library)."""

import re
from pathlib import Path

import pytest

BINDINGS = Path(__file__).resolve().parents[2] / "nvmathx" / "_bindings"


@pytest.mark.parametrize("module, table", [("cublaslt", "_lib"), ("cufft", "_lib"), ("mathdx", "_functions"),
                                           ("cublasmp", "_lib"), ("cusparse", "_lib"), ("cusolver", "_lib"),
                                           ("cublas", "_lib")])
def test_called_functions_are_declared(module, table):
    import importlib

    source = (BINDINGS / f"{module}.py").read_text()
    called = set(re.findall(rf'{table}\(\)\["(\w+)"\]', source)) | set(re.findall(r'_call\(\s*"(\w+)"', source))
    assert called, "no calls found: the patterns no longer match the binding"
    declared = set(getattr(importlib.import_module(f"nvmathx._bindings.{module}"), table).signatures)
    assert called - declared == set()
