"""Spellings that read as one library across the areas, checked over the source."""

import ast
import pathlib

import pytest

import nvmathx

PACKAGE = pathlib.Path(nvmathx.__file__).parent


def _sources():
    return sorted(PACKAGE.rglob("*.py"))


def _strings(tree):
    """Every string constant of a module, f-string pieces included, docstrings too."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node


def test_error_messages_end_with_got_in_parentheses():
    """One style for what came in: "expected ... (got X)", never "...; got X"."""
    offenders = []
    for path in _sources():
        for node in _strings(ast.parse(path.read_text(), str(path))):
            if "; got " in node.value:
                offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert not offenders, offenders


@pytest.mark.parametrize("name", ["relu_aux", "gelu_aux"])
def test_aux_names_have_one_definition(name):
    """The auxiliary arrays' names are defined once, in the epilog table's module."""
    found = []
    for path in _sources():
        for node in _strings(ast.parse(path.read_text(), str(path))):
            if node.value == name:
                found.append(str(path.relative_to(PACKAGE)))
    assert found == ["_matmulcore/epilogs.py"], found
