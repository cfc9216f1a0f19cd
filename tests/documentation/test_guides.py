"""Every code block of the user guide runs: each page under docs/guide/ (reStructuredText or
Markdown) is a doctest, on the CPU here; blocks marked ``# doctest: +GPU`` run in the gpu-marked copy.
A Python code block that is not a doctest (no ``>>>``) is refused, so an undefined name cannot hide
in prose-only code."""

import pathlib
import re

import pytest

from helpers.public_docstrings import GPU, doctest_of, run_doctest

DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs"
PAGES = sorted([*DOCS.glob("guide/*.rst"), *DOCS.glob("guide/*.md"), DOCS / "quickstart.rst"])
IDS = [str(page.relative_to(DOCS)) for page in PAGES]

# A python block: an rst ``.. code-block:: python`` directive (its indented body) or a Markdown fence.
_RST_BLOCK = re.compile(r"^\.\. code-block:: python[^\n]*\n((?:[ \t]*\n|[ \t]+[^\n]*\n)+)", re.M)
_MD_BLOCK = re.compile(r"^```(?:python|py)\s*\n(.*?)^```", re.M | re.S)


def python_blocks(text: str) -> list[str]:
    """The bodies of the page's Python code blocks (rst directives and Markdown fences)."""
    return [match.group(1) for match in (*_RST_BLOCK.finditer(text), *_MD_BLOCK.finditer(text))]


def _doctest(page: pathlib.Path, on_gpu: bool):
    text = page.read_text()
    # Markdown fences around doctests: the parser reads ``>>>`` lines wherever they are, but a fence's
    # closing line would be taken as expected output, so fences are dropped first.
    if page.suffix == ".md":
        text = re.sub(r"^```[^\n]*$", "", text, flags=re.M)
    return doctest_of(str(page.relative_to(DOCS)), text, on_gpu=on_gpu)


def test_the_guide_pages_are_found():
    assert {"guide/fft.rst", "guide/linalg.rst", "quickstart.rst"} <= set(IDS)


@pytest.mark.parametrize("page", PAGES, ids=IDS)
def test_every_python_block_is_a_doctest(page):
    prose = [block for block in python_blocks(page.read_text()) if ">>>" not in block]
    assert not prose, f"{page.name}: Python code blocks without '>>>' (write them as doctests):\n" + prose[0]


@pytest.mark.parametrize("page", PAGES, ids=IDS)
def test_guide_examples_run_on_the_cpu(page):
    failed, report, missing = run_doctest(_doctest(page, on_gpu=False))
    if missing and failed:
        pytest.skip(f"needs an optional package: {missing}")
    assert not failed, report


GPU_PAGES = [page for page in PAGES if any(example.options.get(GPU) for example in _doctest(page, True).examples)]


@pytest.mark.gpu
@pytest.mark.parametrize("page", GPU_PAGES, ids=[str(page.relative_to(DOCS)) for page in GPU_PAGES])
def test_guide_examples_run_on_a_gpu(page):
    failed, report, missing = run_doctest(_doctest(page, on_gpu=True))
    if missing and failed:
        pytest.skip(f"needs an optional package: {missing}")
    assert not failed, report


def test_a_prose_block_and_an_undefined_name_are_caught(tmp_path):
    page = tmp_path / "page.rst"
    page.write_text("Text\n\n.. code-block:: python\n\n   y = fft.fft(spectrum)\n\nMore text.\n")
    assert python_blocks(page.read_text()) == ["\n   y = fft.fft(spectrum)\n\n"]
    page.write_text("Text\n\n>>> undefined_spectrum + 1\n2\n")
    failed, report, _ = run_doctest(doctest_of("page", page.read_text(), on_gpu=False))
    assert failed == 1 and "undefined_spectrum" in report
