"""The examples of docs/guide/sparse_solvers.md run on the CPU."""

import pathlib
import re

from helpers.public_docstrings import doctest_of, run_doctest

PAGE = pathlib.Path(__file__).resolve().parents[2] / "docs" / "guide" / "sparse_solvers.md"


def test_guide_examples_run_on_the_cpu():
    examples = "\n".join(re.findall(r"```python\n(.*?)```", PAGE.read_text(), flags=re.S))
    assert examples.count(">>>") >= 12
    failed, report, _ = run_doctest(doctest_of("sparse_solvers.md", examples, on_gpu=False))
    assert not failed, report
