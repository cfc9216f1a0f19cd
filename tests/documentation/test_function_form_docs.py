"""Function forms document every parameter themselves (no "as for Matmul"), with Raises and an
Example, so that ``help(nvmathx.linalg.matmul)`` answers without a second look-up."""

import inspect
import re

import pytest

import nvmathx.fft
import nvmathx.linalg

FFT_FORMS = [name for name in nvmathx.fft.__all__ if re.fullmatch(r"i?[rh]?fft[2n]?", name)]
FUNCTIONS = [nvmathx.linalg.matmul, *(getattr(nvmathx.fft, name) for name in FFT_FORMS)]


def documented_parameters(docstring: str) -> set[str]:
    """The names a numpydoc Parameters section describes (``a, b : array`` names both)."""
    section = re.search(r"Parameters\n-+\n(.*?)(?:\n\n[A-Z][a-z]+( [A-Z][a-z]+)?\n-+\n|\Z)", docstring, re.S)
    assert section, "no Parameters section"
    names = set()
    for line in section.group(1).splitlines():
        if line and not line[0].isspace():
            names.update(name.strip() for name in line.split(" : ")[0].split(","))
    return names


def test_the_function_forms_are_found():
    assert {"fft", "ifft", "rfftn", "irfft2", "hfft"} <= set(FFT_FORMS)


@pytest.mark.parametrize("function", FUNCTIONS, ids=[f.__name__ for f in FUNCTIONS])
def test_every_parameter_is_documented_with_raises_and_an_example(function):
    docstring = inspect.getdoc(function)
    parameters = set(inspect.signature(function).parameters)
    assert parameters <= documented_parameters(docstring), parameters - documented_parameters(docstring)
    assert not re.search(r"^\s+As for :(class|meth):", docstring, re.M), "a parameter refers elsewhere"
    assert "\nRaises\n------\n" in docstring and ">>> " in docstring


def test_the_parser_sees_a_missing_parameter():
    assert documented_parameters("Sum.\n\nParameters\n----------\na, b : int\n    Terms.\n\nReturns\n-------\nint\n") \
        == {"a", "b"}
