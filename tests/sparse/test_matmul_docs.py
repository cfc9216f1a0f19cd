"""The examples of docs/guide/sparse.md run on the CPU."""

import pathlib
import re

import pytest

from helpers.public_docstrings import doctest_of, run_doctest

PAGE = pathlib.Path(__file__).resolve().parents[2] / "docs" / "guide" / "sparse.md"


@pytest.mark.filterwarnings("ignore::UserWarning")  # torch: "sparse CSR support is in beta"
def test_guide_examples_run_on_the_cpu():
    examples = "\n".join(re.findall(r"```python\n(.*?)```", PAGE.read_text(), flags=re.S))
    assert examples.count(">>>") >= 20
    failed, report, missing = run_doctest(doctest_of("sparse.md", examples, on_gpu=False))
    if failed and missing:
        pytest.skip(f"needs an optional package: {missing}")
    assert not failed, report
