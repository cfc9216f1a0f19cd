"""The generated documentation pages (docs/_ext/nvmathx_docs.py) follow the code and the results."""

import importlib
import importlib.util
import json
import pathlib
import re

import pytest

from helpers.public_docstrings import importable

ROOT = pathlib.Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("nvmathx_docs", ROOT / "docs" / "_ext" / "nvmathx_docs.py")
docs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(docs)


def test_public_modules_are_the_pinned_ones():
    from test_public_api import PUBLIC_MODULES

    assert set(docs.public_modules()) == PUBLIC_MODULES


@pytest.mark.parametrize("module_name", docs.public_modules())
def test_api_page_lists_every_name_of_all(module_name):
    if not importable(module_name):
        pytest.skip(f"{module_name} needs an optional package that is not installed")
    modules = docs.public_modules()
    page = docs.api_page(module_name, modules)
    listed = set(re.findall(r"^   (\w+)$", page, re.M)) | set(re.findall(r"^\.\. data:: (\w+)$", page, re.M))
    listed |= {line.rsplit(".", 1)[1] for line in re.findall(r"^- :doc:`(nvmathx[\w.]+)`$", page, re.M)}
    assert listed == set(importlib.import_module(module_name).__all__)
    assert not [name for name in listed if name.startswith("_") and name != "__version__"]


def test_coverage_page_follows_the_transform_table(monkeypatch):
    from nvmathx.fft import _backend

    page = docs.coverage_page()
    assert "   * - ``rfft``\n     - yes\n     - :func:`nvmathx.fft.rfft`\n     - cuFFT" in page
    assert "   * - ``dct``\n     - \n     - --\n     - scipy's" in page
    monkeypatch.delitem(_backend._SERVED, "rfft")
    assert "     - :func:`nvmathx.fft.rfft`\n     - scipy's" in docs.coverage_page()


def test_benchmark_page_is_read_from_the_results(tmp_path):
    case = {"name": "gemm_64", "params": {"shape": [64, 64], "dtype": "float32"}, "unit": "us_per_call",
            "times": {"torch": 12.5, "nvmathx": 13.25, "cupy": 20.0}, "note": "per call"}
    alone = {"name": "first_launch", "params": {}, "unit": "s", "times": {"nvmathx.first": 1.5}}
    (tmp_path / "matmul.json").write_text(json.dumps({"suite": "matmul", "device": "H200", "date": "2026-12-02T00:00",
                                                      "versions": {"nvmathx": "0.1.0"}, "cases": [case, alone]}))
    (tmp_path / "matmul.png").write_bytes(b"")
    (tmp_path / "survey.json").write_text("[1, 2]")  # not a suite: left out
    page = docs.benchmark_page(tmp_path)
    assert "matmul\n------" in page and "H200, 2026-12-02; nvmathx 0.1.0." in page
    assert "   * - case\n     - nvmathx\n     - best peer\n     - ratio" in page
    # The note sits with its case; the best peer is the fastest non-nvmathx column; the ratio is ours over it.
    row = "   * - ``gemm_64`` |br| per call\n     - 13.25 us_per_call\n     - 12.5 us_per_call (torch)\n     - 1.06x"
    assert row in page
    assert "   * - ``first_launch``\n     - 1.5 s (nvmathx.first)\n     - \n     - " in page
    assert ":download:`matmul.json </../" in page
    assert ".. image:: /../" in page and "survey" not in page


def test_committed_results_all_appear():
    page = docs.benchmark_page(ROOT / "benchmarks" / "results")
    for path in (ROOT / "benchmarks" / "results").glob("*.json"):
        data = json.loads(path.read_text())
        for case in data["cases"]:
            assert f"``{case['name']}``" in page


def test_examples_page_includes_every_example():
    page = docs.examples_page(ROOT / "examples")
    for path in (ROOT / "examples").glob("*.py"):
        assert f".. literalinclude:: /../examples/{path.name}" in page


def test_a_re_exported_object_is_documented_once():
    """nvmathx.CacheInfo and nvmathx.device_api.CacheInfo are one class: one page, and a reference."""
    if not importable("nvmathx.device_api"):
        pytest.skip("nvmathx.device_api needs an optional package that is not installed")
    modules = [name for name in docs.public_modules() if importable(name)]
    home = docs.homes(modules)
    page = docs.api_page("nvmathx.device_api", modules, home)
    entries = page.split("Also exported here")
    assert len(entries) == 2 and "   CacheInfo\n" not in entries[0]
    assert "``CacheInfo``: :obj:`nvmathx.CacheInfo`" in entries[1]


def test_each_module_is_in_the_api_toctree_once():
    """The sidebar lists each public module once: the API index's toctree holds them all, and a
    module's page links its submodules without a toctree of its own."""
    modules = docs.public_modules()
    entries = [line.strip() for line in docs.api_index(modules).splitlines() if line.startswith("   nvmathx")]
    assert sorted(entries) == sorted(modules)
    for name in filter(importable, modules):
        page = docs.api_page(name, modules)
        assert ".. toctree::" not in page
    assert "- :doc:`nvmathx.fft`" in docs.api_page("nvmathx", modules)
