"""docs/guide/solvers.md's examples run on the CPU space."""

import pathlib

from helpers.public_docstrings import doctest_of, run_doctest


def test_solvers_guide_runs_on_the_cpu():
    page = pathlib.Path(__file__).resolve().parents[2] / "docs" / "guide" / "solvers.md"
    test = doctest_of("solvers.md", page.read_text(), on_gpu=False)
    assert len(test.examples) >= 15
    failed, report, missing = run_doctest(test)
    assert not failed and missing is None, report
