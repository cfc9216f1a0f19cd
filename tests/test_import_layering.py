"""The import graph of nvmathx/, read from the source: no cycle between modules, no area importing
another area's private module, and no shared layer importing an area.

Every import statement counts, those inside functions included (a deferred import still ties the
two modules together; only ``if TYPE_CHECKING:`` blocks are left out of the cycle check, as they
never run). The areas are the public packages: ``fft``, ``linalg``, ``sparse``, ``device_api``, ``torch`` and
``distributed`` with its subpackages. Below them sit the shared underscore packages (``_bindings``,
``_core``, ``_codegen``, ``_fftcore``, ``_matmulcore``, ...), which any area may import and which
import no area. An area reaches another only through its public names (``nvmathx.linalg.matmul``),
never through a module or a name that starts with an underscore.

The checker is tested on a small tree holding each violation nvmathx once had.
"""

from __future__ import annotations

import ast
import pathlib
from dataclasses import dataclass

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent / "nvmathx"
AREAS = ("fft", "linalg", "sparse", "device_api", "torch", "distributed")


@dataclass(frozen=True)
class Edge:
    source: str  # importing module
    target: str  # imported module (a package counts as its __init__)
    name: str | None  # the name taken from ``target`` when it is not a submodule
    line: int
    deferred: bool  # inside a function
    type_only: bool  # inside ``if TYPE_CHECKING:``

    def __str__(self):
        what = self.target + (f".{self.name}" if self.name else "")
        where = " (in a function)" if self.deferred else ""
        return f"{self.source}:{self.line} -> {what}{where}"


def modules(root: pathlib.Path) -> dict[str, tuple[pathlib.Path, bool]]:
    """Module name -> (file, is a package) for every .py file under the package ``root``."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if package else parts)] = (path, package)
    return found


def _is_type_checking(test) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def import_edges(root: pathlib.Path) -> tuple[dict, list[Edge]]:
    """The modules under ``root`` and every import of one of them by another."""
    known = modules(root)
    top = root.name
    edges = []
    for name, (path, package) in known.items():
        here = name if package else name.rpartition(".")[0]

        def add(target, imported, node, deferred, type_only):
            if target == top or target.startswith(top + "."):
                sub = f"{target}.{imported}" if imported else None
                if sub in known:
                    target, imported = sub, None
                edges.append(Edge(name, target, imported, node.lineno, deferred, type_only))

        def walk(node, deferred, type_only):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.Import):
                    for alias in child.names:
                        add(alias.name, None, child, deferred, type_only)
                elif isinstance(child, ast.ImportFrom):
                    if child.level:
                        base = here.split(".")[: len(here.split(".")) - (child.level - 1)]
                        target = ".".join(base + ([child.module] if child.module else []))
                    else:
                        target = child.module
                    for alias in child.names:
                        add(target, alias.name, child, deferred, type_only)
                inner = deferred or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
                guarded = type_only or (isinstance(child, ast.If) and _is_type_checking(child.test))
                walk(child, inner, guarded)

        walk(ast.parse(path.read_text(), str(path)), False, False)
    return known, edges


def area_of(module: str) -> str | None:
    """The area a module belongs to (``distributed`` for its subpackages too), or None for the
    top-level modules and the shared underscore packages."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in AREAS else None


def is_private(edge: Edge) -> bool:
    """Whether ``edge`` reaches past its target area's public names."""
    below = edge.target.split(".")[2:]
    if any(part.startswith("_") for part in below):
        return True
    return bool(edge.name) and edge.name.startswith("_") and not edge.name.startswith("__")


def sideways(edges) -> list[Edge]:
    """Imports of another area's private module or name."""
    return [e for e in edges if area_of(e.target) not in (None, area_of(e.source)) and is_private(e)]


def upward(edges) -> list[Edge]:
    """Imports of an area by a shared underscore package."""
    return [e for e in edges if area_of(e.target) is not None and _in_shared_package(e.source)]


def _in_shared_package(module: str) -> bool:
    """Whether ``module`` is inside an underscore package (the top-level modules, such as the
    package's __init__ and the command line, may import areas)."""
    parts = module.split(".")
    return len(parts) > 2 and parts[1].startswith("_")


def cycles(known, edges) -> list[list[Edge]]:
    """The import cycles: for each group of modules that import one another (directly or not), the
    imports between them."""
    graph: dict[str, set[str]] = {}
    for edge in edges:
        if not edge.type_only and edge.target in known and edge.target != edge.source:
            graph.setdefault(edge.source, set()).add(edge.target)
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def visit(start):  # Tarjan's strongly connected components, without recursion
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph.get(successor, ())))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.add(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        groups.append(group)

    for module in sorted(graph):
        if module not in index:
            visit(module)
    found = []
    for group in groups:
        between = {}  # one import per pair of modules is enough to name it
        for edge in edges:
            if edge.source in group and edge.target in group and not edge.type_only:
                between.setdefault((edge.source, edge.target), edge)
        found.append(sorted(between.values(), key=str))
    return found


def _report(title, found) -> str:
    return f"{title}:\n  " + "\n  ".join(str(item) for item in found)


def check(root: pathlib.Path) -> list[str]:
    """What is wrong with the import graph under ``root``, one message per kind of fault."""
    known, edges = import_edges(root)
    problems = []
    for group in cycles(known, edges):
        problems.append(_report("import cycle", group))
    if found := sideways(edges):
        problems.append(_report("imports of another area's private module or name", found))
    if found := upward(edges):
        problems.append(_report("imports of an area by a shared package", found))
    return problems


def test_nvmathx_has_no_cycle_no_sideways_import_and_no_upward_import():
    problems = check(ROOT)
    assert not problems, "\n".join(problems)


def test_the_areas_are_the_public_packages():
    public = {p.name for p in ROOT.iterdir() if (p / "__init__.py").exists() and not p.name.startswith("_")}
    assert public == set(AREAS)


# -- the checker, on a tree with the violations nvmathx once had -----------------------------------------

_TREE = {
    "__init__.py": "",
    "_core/__init__.py": "",
    "_core/memory.py": "from .streams import order_after\n",
    "_core/streams.py": "def resolve(stream):\n    from .tensor import legacy_stream_handle\n",
    "_core/tensor/__init__.py": "from ._lookup import legacy_stream_handle\n",
    "_core/tensor/_lookup.py": "from ..memory import allocate\n",
    "_core/_demo.py": "def run():\n    import nvmathx.fft\n",
    "fft/__init__.py": "from ._callbacks import compile_prolog\n",
    "fft/_kernels.py": "",
    "fft/_callbacks.py": (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from ._fft import FFT\n"
        "def resolve_callback_target(target):\n    from ..device_api._target import resolve_target\n"
        "def _compiler_identity():\n    from ..device_api._link_cache import _library_file\n"
        "def _load_or_build():\n    from ..device_api import _cache\n    from ._callback_codegen import lower\n"
    ),
    "fft/_callback_codegen.py": "from ._callbacks import CallbackCompileError\n",
    "fft/_fft.py": "from ._callbacks import compile_prolog\n",
    "device_api/__init__.py": "from ._cache import cache_dir\n",
    "device_api/_cache.py": "",
    "device_api/_target.py": "",
    "device_api/_link_cache.py": "",
    "linalg/__init__.py": "from ._matmul import matmul\n",
    "linalg/_matmul.py": "import nvmathx.fft\n",
    "linalg/_calls.py": "def copy():\n    from ..fft import _kernels\n",
    "linalg/_kernels.py": "def launch():\n    from ..fft._kernels import _core_stream\n",
    "torch/__init__.py": "",
    "torch/_ops.py": "from nvmathx.linalg import matmul\nfrom ..fft import fft\n",
    "distributed/__init__.py": "",
    "distributed/_group.py": "",
    "distributed/fft/__init__.py": "",
    "distributed/fft/_gpu.py": "from ...fft._cufft_plan import CufftPlan\nfrom .._group import Group\n",
    "distributed/linalg/__init__.py": "",
    "distributed/linalg/_problem.py": "from nvmathx.linalg._epilogs import epilog_spec\n",
}


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "nvmathx"
    for relative, text in _TREE.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    return root


def test_the_checker_finds_both_cycles_with_their_imports(tree):
    known, edges = import_edges(tree)
    found = cycles(known, edges)
    assert sorted([str(e) for e in group] for group in found) == [
        [
            "nvmathx._core.memory:1 -> nvmathx._core.streams.order_after",
            "nvmathx._core.streams:2 -> nvmathx._core.tensor.legacy_stream_handle (in a function)",
            "nvmathx._core.tensor._lookup:1 -> nvmathx._core.memory.allocate",
            "nvmathx._core.tensor:1 -> nvmathx._core.tensor._lookup.legacy_stream_handle",
        ],
        [
            "nvmathx.fft._callback_codegen:1 -> nvmathx.fft._callbacks.CallbackCompileError",
            "nvmathx.fft._callbacks:10 -> nvmathx.fft._callback_codegen.lower (in a function)",
        ],
    ]


def test_the_checker_finds_every_sideways_import_and_passes_public_ones(tree):
    _, edges = import_edges(tree)
    assert sorted(str(e) for e in sideways(edges)) == [
        "nvmathx.distributed.fft._gpu:1 -> nvmathx.fft._cufft_plan.CufftPlan",
        "nvmathx.distributed.linalg._problem:1 -> nvmathx.linalg._epilogs.epilog_spec",
        "nvmathx.fft._callbacks:5 -> nvmathx.device_api._target.resolve_target (in a function)",
        "nvmathx.fft._callbacks:7 -> nvmathx.device_api._link_cache._library_file (in a function)",
        "nvmathx.fft._callbacks:9 -> nvmathx.device_api._cache (in a function)",
        "nvmathx.linalg._calls:2 -> nvmathx.fft._kernels (in a function)",
        "nvmathx.linalg._kernels:2 -> nvmathx.fft._kernels._core_stream (in a function)",
    ]


def test_the_checker_finds_a_shared_package_importing_an_area(tree):
    _, edges = import_edges(tree)
    assert [str(e) for e in upward(edges)] == ["nvmathx._core._demo:2 -> nvmathx.fft (in a function)"]


def test_the_report_names_each_offending_import(tree):
    message = "\n".join(check(tree))
    assert message.count("import cycle:") == 2
    assert "nvmathx.linalg._calls:2 -> nvmathx.fft._kernels (in a function)" in message
    assert "nvmathx._core._demo:2 -> nvmathx.fft" in message
    assert "torch._ops" not in message and "_group" not in message  # public names, and the area's own


def test_a_type_checking_import_makes_no_cycle(tree):
    def fft_cycles():
        known, edges = import_edges(tree)
        return [group for group in cycles(known, edges) if any(e.source.startswith("nvmathx.fft") for e in group)]

    (tree / "fft" / "_callback_codegen.py").write_text("")
    assert fft_cycles() == []  # _callbacks imports _fft under TYPE_CHECKING only
    (tree / "fft" / "_callbacks.py").write_text("from ._fft import FFT\n")
    assert [[str(e) for e in group] for group in fft_cycles()] == [
        ["nvmathx.fft._callbacks:1 -> nvmathx.fft._fft.FFT",
         "nvmathx.fft._fft:1 -> nvmathx.fft._callbacks.compile_prolog"]]
