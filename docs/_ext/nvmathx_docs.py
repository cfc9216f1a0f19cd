"""Pages of the documentation that are generated from the code and the repository at build time.

- ``generated/api/*.rst``: one page per public module, an autosummary of every name in its
  ``__all__`` (public modules are found by walking the package: every module without a leading
  underscore).
- ``generated/coverage.rst``: which scipy.fft (and numpy.fft) functions nvmathx.fft provides and
  which its scipy backend serves on GPU arrays, read from the modules themselves.
- ``generated/benchmarks.rst``: the committed results, ``benchmarks/results/*.json``, as tables,
  with each suite's plot.
- ``generated/examples.rst``: every ``examples/*.py``, its docstring and its source.

Written on ``config-inited``, before Sphinx looks for source files, and only where the text changed.
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import pathlib
import pkgutil
import shutil
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # the benchmark page reads the runner's own ratio rules


def public_modules(package: str = "nvmathx") -> list[str]:
    """Every importable module of ``package`` with no underscore-led part in its name, sorted."""
    root = importlib.import_module(package)
    found = [package]
    for info in pkgutil.walk_packages(root.__path__, f"{package}."):
        if not any(part.startswith("_") for part in info.name.split(".")[1:]):
            found.append(info.name)
    return sorted(found)


def _heading(text: str, mark: str = "=") -> str:
    return f"{text}\n{mark * len(text)}\n"


# Data whose value carries no docstring of its own (autodoc would show the type's) and that has no
# attribute docstring in the module that exports it.
_DATA_TEXT = {"nvmathx.__version__": "The version of this nvmathx, a PEP 440 string."}


def homes(public: list[str]) -> dict:
    """Where each public object is documented: the first public module (in ``public``'s order)
    whose ``__all__`` holds it. A later module exporting the same object refers to that page."""
    home: dict = {}
    for module_name in public:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            value = getattr(module, name)
            if not isinstance(value, (str, int, float, tuple)):  # plain values are not shared objects
                home.setdefault(id(value), f"{module_name}.{name}")
    return home


def api_page(module_name: str, public: list[str], home: dict | None = None) -> str:
    """The reference page of one public module: its docstring, its public submodules, an
    autosummary (with a page per name) of the rest of its ``__all__``, and a list of the names it
    re-exports from a module documented earlier."""
    module = importlib.import_module(module_name)
    names = list(module.__all__)
    submodules = [name for name in names if f"{module_name}.{name}" in public]
    plain = [name for name in names if f"{module_name}.{name}" in _DATA_TEXT]
    home = home or {}
    elsewhere = {name: home[id(getattr(module, name))] for name in names
                 if name not in submodules and name not in plain
                 and home.get(id(getattr(module, name)), f"{module_name}.{name}") != f"{module_name}.{name}"}
    members = [name for name in names if name not in submodules and name not in plain and name not in elsewhere]
    lines = [_heading(f"``{module_name}``"), f".. automodule:: {module_name}", "   :no-members:", "",
             f".. currentmodule:: {module_name}", ""]
    if members:
        lines += [".. autosummary::", "   :toctree: _autosummary", "   :nosignatures:", ""]
        lines += [f"   {name}" for name in members] + [""]
    for name in plain:
        lines += [f".. data:: {name}", f"   :value: {getattr(module, name)!r}", "",
                  f"   {_DATA_TEXT[f'{module_name}.{name}']}", ""]
    if elsewhere:
        lines += [_heading("Also exported here", "-"), "The same objects as:", ""]
        lines += [f"- ``{name}``: :obj:`{target}`" for name, target in elsewhere.items()] + [""]
    if submodules:
        # Links, not a toctree: the API index's toctree already lists every module once, so the
        # sidebar shows each submodule once.
        lines += [_heading("Submodules", "-")]
        lines += [f"- :doc:`{module_name}.{name}`" for name in submodules] + [""]
    return "\n".join(lines)


def api_index(modules: list[str]) -> str:
    lines = [_heading("API reference"),
             "Every public module, and on its page every name in its ``__all__``. Names not listed here",
             "(modules and attributes with a leading underscore) are private and may change.", "",
             ".. toctree::", "   :maxdepth: 1", ""]
    return "\n".join(lines + [f"   {name}" for name in modules] + [""])


def coverage_page() -> str:
    """A table of scipy.fft's public functions: in numpy.fft, provided by nvmathx.fft, served on GPU
    arrays by the backend (``scipy.fft.set_backend(nvmathx.fft)``)."""
    import numpy.fft
    import scipy.fft

    import nvmathx.fft
    from nvmathx.fft import _backend

    rows = []
    for name in scipy.fft.__all__:
        ours = f":func:`nvmathx.fft.{name}`" if name in nvmathx.fft.__all__ else ""
        served = "cuFFT" if name in _backend._SERVED else ("scipy's" if name not in {
            "set_backend", "skip_backend", "set_global_backend", "register_backend"} else "")
        rows.append((f"``{name}``", "yes" if hasattr(numpy.fft, name) else "", ours or "--", served))
    provided = sum(1 for row in rows if row[2] != "--")
    table = [".. list-table::", "   :header-rows: 1", "", "   * - scipy.fft", "     - numpy.fft",
             "     - nvmathx.fft", "     - GPU array under the backend"]
    for row in rows:
        table += [f"   * - {row[0]}"] + [f"     - {cell}" for cell in row[1:]]
    intro = [_heading("scipy.fft and numpy.fft coverage"),
             f"nvmathx.fft provides {provided} of scipy.fft's {len(rows)} public functions, with scipy's",
             "signatures (plus the keyword-only ``prolog``/``epilog`` callbacks of the cuFFT transforms).",
             "Under ``scipy.fft.set_backend(nvmathx.fft)``, a call on a GPU array runs on cuFFT where the",
             "last column says so; \"scipy's\" means scipy's own implementation runs (on host arrays",
             "everything does). This table is generated from the modules when the documentation is built.", ""]
    return "\n".join(intro + table + [""])


def _format(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        return "x".join(map(str, value))
    return "" if value is None else str(value)


def _ours(times: dict) -> tuple[str, float] | None:
    """The nvmathx column of a case: ``nvmathx`` itself, else the first ``nvmathx.*`` one with a time."""
    from benchmarks._report import is_ours

    if times.get("nvmathx"):
        return "nvmathx", times["nvmathx"]
    return next(((name, time) for name, time in times.items() if time and is_ours(name)), None)


def benchmark_rows(case: dict) -> list[str]:
    """One case as rows of a five-column list-table (case, nvmathx, best peer, ratio, JSON); the
    case's note sits in its first cell, under its name."""
    from benchmarks._report import best_peer

    ours, peer = _ours(case.get("times", {})), best_peer(case)
    unit = case.get("unit", "")
    first = f"``{case['name']}``" + (f" |br| {case['note']}" if case.get("note") else "")
    ratio = f"{ours[1] / peer[1]:.2f}x" if ours and peer else ""
    ours_cell = f"{_format(ours[1])} {unit}" + (f" ({ours[0]})" if ours[0] != "nvmathx" else "") if ours else ""
    peer_cell = f"{_format(peer[1])} {unit} ({peer[0]})" if peer else ""
    return [f"   * - {first}", f"     - {ours_cell}", f"     - {peer_cell}", f"     - {ratio}"]


def benchmark_page(results: pathlib.Path) -> str:
    """Every suite in ``results`` (``<suite>.json``, the fixed format of ``benchmarks/``) as a table
    of its cases (nvmathx against the best peer, with the ratio), with the suite's plot."""
    lines = [_heading("Benchmark results"),
             "Measured by ``python -m benchmarks SUITE`` (see ``benchmarks/README.md``) and committed as",
             "``benchmarks/results/<suite>.json`` with a plot; this page is generated from those files when",
             "the documentation is built. Ratio: nvmathx's time over the best peer's (torch, CuPy,",
             "nvmath-python, ...); lower is better. Each suite's JSON has every column and parameter.", "",
             ".. |br| raw:: html", "", "   <br/>", ""]
    for path in sorted(results.glob("*.json")):
        data = json.loads(path.read_text())
        if not isinstance(data, dict) or "cases" not in data:
            continue  # survey output and other side files
        lines += [_heading(data["suite"], "-"),
                  f"{data.get('device', 'unknown device')}, {data.get('date', '')[:10]}; "
                  + ", ".join(f"{k} {v}" for k, v in sorted(data.get("versions", {}).items())) + ".", "",
                  f"All columns: :download:`{path.name} </{_relative(path)}>`.", ""]
        plot = path.with_suffix(".png")
        if plot.exists():
            lines += [f".. image:: /{_relative(plot)}", f"   :alt: {data['suite']} results", ""]
        lines += [".. list-table::", "   :header-rows: 1", "   :widths: 46 18 24 12", "",
                  "   * - case", "     - nvmathx", "     - best peer", "     - ratio"]
        for case in data["cases"]:
            lines += benchmark_rows(case)
        lines += [""]
    return "\n".join(lines)


def _relative(path: pathlib.Path) -> str:
    """A path from the docs source folder's parent (the repository), as ``/../...`` needs it."""
    return "../" + pathlib.Path(os.path.relpath(path.resolve(), ROOT)).as_posix()


def examples_page(examples: pathlib.Path) -> str:
    """Every example script: its title (docstring's first line), the rest of its docstring, its source."""
    lines = [_heading("Examples"),
             "The scripts in ``examples/``; each runs as a test (on the CPU where it can, the GPU ones on a",
             "GPU machine). Run one with ``python examples/NAME.py``.", ""]
    for path in sorted(examples.glob("*.py")):
        docstring = ast.get_docstring(ast.parse(path.read_text())) or ""
        title, _, rest = docstring.partition("\n")
        lines += [_heading(path.name, "-"), title, "", rest.strip(), "",
                  f".. literalinclude:: /{_relative(path)}", "   :language: python", "   :linenos:", ""]
    return "\n".join(lines)


def _write(path: pathlib.Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def generate(srcdir: pathlib.Path) -> None:
    """Write every generated page under ``srcdir/generated``."""
    out = srcdir / "generated"
    shutil.rmtree(out, ignore_errors=True)  # pages of renamed or removed names must not linger
    modules = public_modules()
    home = homes(modules)
    for name in modules:
        _write(out / "api" / f"{name}.rst", api_page(name, modules, home))
    _write(out / "api" / "index.rst", api_index(modules))
    _write(out / "coverage.rst", coverage_page())
    _write(out / "benchmarks.rst", benchmark_page(ROOT / "benchmarks" / "results"))
    _write(out / "examples.rst", examples_page(ROOT / "examples"))


def setup(app):
    app.connect("config-inited", lambda app, config: generate(pathlib.Path(app.srcdir)))
    return {"parallel_read_safe": True, "parallel_write_safe": True}
