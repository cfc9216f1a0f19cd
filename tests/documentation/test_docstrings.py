"""Every public name has a docstring, and every example in a public docstring runs.

Public names: every name in the ``__all__`` of every public module (the names the API reference
lists). Examples that need a GPU carry ``# doctest: +GPU``: skipped here without one, run by the
``gpu`` test of the same docstring on a GPU machine.
"""

import importlib
import inspect

import pytest

from helpers.public_docstrings import (
    GPU,
    attribute_docstrings,
    doctest_of,
    documented_objects,
    importable,
    public_modules,
    public_names,
    run_doctest,
)

NAMES = public_names()
MODULES = [module for module in public_modules() if importable(module)]


@pytest.mark.parametrize("module_name", MODULES)
def test_every_public_module_has_a_docstring(module_name):
    assert (importlib.import_module(module_name).__doc__ or "").strip(), module_name


@pytest.mark.parametrize("module_name, name", NAMES, ids=[f"{m}.{n}" for m, n in NAMES])
def test_every_public_name_has_a_docstring(module_name, name):
    value = getattr(importlib.import_module(module_name), name)
    if inspect.ismodule(value):
        assert (value.__doc__ or "").strip()
    elif inspect.isclass(value) or inspect.isroutine(value):
        assert (value.__doc__ or "").strip(), f"{module_name}.{name} has no docstring"
    elif name != "__version__":  # data: a docstring after its assignment (an instance has its class's)
        assert name in attribute_docstrings(module_name), f"{module_name}.{name} has no attribute docstring"


def _docstrings():
    found = [(module, importlib.import_module(module).__doc__) for module in MODULES]
    for module, name in NAMES:
        found += list(documented_objects(module, name))
    return [(qualified, doc) for qualified, doc in found if doc and ">>>" in doc]


DOCSTRINGS = _docstrings()
NEEDS_GPU = [(qualified, doc) for qualified, doc in DOCSTRINGS
             if any(example.options.get(GPU) for example in doctest_of(qualified, doc, on_gpu=True).examples)]


def test_there_are_examples():
    assert len(DOCSTRINGS) >= 30  # the fft functions alone have 18: a collection bug would show here


@pytest.mark.parametrize("qualified, docstring", DOCSTRINGS, ids=[q for q, _ in DOCSTRINGS])
def test_examples_run_on_the_cpu(qualified, docstring):
    failed, report, missing = run_doctest(doctest_of(qualified, docstring, on_gpu=False))
    if failed and missing:  # an install without the optional package (a [test]-only one)
        pytest.skip(f"needs an optional package: {missing}")
    assert not failed, report


@pytest.mark.gpu
@pytest.mark.parametrize("qualified, docstring", NEEDS_GPU, ids=[q for q, _ in NEEDS_GPU])
def test_examples_run_on_a_gpu(qualified, docstring):
    failed, report, _ = run_doctest(doctest_of(qualified, docstring, on_gpu=True))
    assert not failed, report


def test_gpu_examples_are_skipped_on_the_cpu_and_failures_are_reported():
    docstring = """
    >>> 1 + 1
    2
    >>> raise RuntimeError("needs a GPU")  # doctest: +GPU
    """
    assert run_doctest(doctest_of("example", docstring, on_gpu=False))[0] == 0
    failed, report, missing = run_doctest(doctest_of("example", docstring, on_gpu=True))
    assert failed == 1 and "needs a GPU" in report and missing is None


def test_a_missing_optional_package_is_told_apart_from_a_failure():
    docstring = """
    >>> try:
    ...     import not_an_installed_package
    ... except ImportError as error:
    ...     raise RuntimeError("compiling needs it") from error
    """
    failed, _, missing = run_doctest(doctest_of("example", docstring, on_gpu=False))
    assert failed == 1 and "not_an_installed_package" in missing


def test_a_public_name_without_a_docstring_is_caught(monkeypatch):
    import nvmathx.fft

    def undocumented():
        pass

    monkeypatch.setattr(nvmathx.fft, "fft", undocumented)
    with pytest.raises(AssertionError, match="nvmathx.fft.fft has no docstring"):
        test_every_public_name_has_a_docstring("nvmathx.fft", "fft")
    monkeypatch.setattr(nvmathx.fft, "plan_cache", object())
    assert "plan_cache" in attribute_docstrings("nvmathx.fft")  # the data rule reads the source


def test_quickstart_runs_on_the_cpu():
    """docs/quickstart.rst promises to run on a machine without a GPU."""
    import pathlib

    page = pathlib.Path(__file__).resolve().parents[2] / "docs" / "quickstart.rst"
    failed, report, _ = run_doctest(doctest_of("quickstart.rst", page.read_text(), on_gpu=False))
    assert not failed, report
