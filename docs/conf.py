"""Sphinx configuration of the nvmathx documentation (built by `.ci/run`; the README says how)."""

import pathlib
import sys

DOCS = pathlib.Path(__file__).resolve().parent
sys.path[:0] = [str(DOCS.parent), str(DOCS / "_ext")]  # this checkout's nvmathx, then the generator

import nvmathx  # noqa: E402

project = "nvmathx"
author = "the nvmathx authors"
copyright = "the nvmathx authors, Apache-2.0"
release = version = nvmathx.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "myst_parser",
    "nvmathx_docs",  # docs/_ext: the API pages, the coverage table, benchmarks and examples
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build"]
templates_path = ["_templates"]

# numpydoc-style docstrings through napoleon; names in prose resolve as Python objects.
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False
napoleon_preprocess_types = False
default_role = "py:obj"
autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
# Signatures name nvmathx.typing's aliases (and the epilog literals) rather than spelling out their unions.
autodoc_type_aliases = {
    **{name: f"nvmathx.typing.{name}" for name in ("ArrayLike", "HostArrayLike", "SparseArrayLike", "AnyArray",
                                                   "StreamLike", "ExecutionLike", "OptionsLike")},
    **{name: name for name in ("EpilogLike", "EpilogWithOutputs", "EpilogWithoutOutputs")},
}
autodoc_mock_imports: list[str] = []  # everything the API pages import is installed with the docs extra

# No intersphinx: CI reaches only the package registries. References to numpy, scipy, torch or cupy
# objects stay plain text instead of links.
myst_heading_anchors = 3

html_theme = "furo"
html_title = f"nvmathx {release}"
html_static_path: list[str] = []
