"""The import graph of nvmathx/, read from the source: no cycle between modules, no area importing
another area's private module, no shared layer importing an area, and the C bindings below
``_core``; and no module reaching into another class's private attributes.

Every import statement counts, those inside functions and ``if TYPE_CHECKING:`` blocks included (a
deferred import still ties the two modules together, and a type-only one ties them for the type
checker and the reader). ``nvmathx._bindings`` imports only itself and ``nvmathx._errors`` (the
exception hierarchy), so ``_core`` depends on the bindings and never the other way. The areas are
the public packages: ``fft``, ``linalg``, ``sparse``, ``device_api``, ``torch`` and ``distributed`` with its
subpackages. Below them sit the shared underscore packages (``_bindings``,
``_core``, ``_codegen``, ``_fftcore``, ``_matmulcore``, ...), which any area may import and which
import no area. An area reaches another only through its public names (``nvmathx.linalg.matmul``),
never through a module or a name that starts with an underscore, except where an area declares an
internal interface for another (:data:`ALLOWED_SIDEWAYS`, each with its reason).

No module reads or writes an underscore attribute of anything but ``self``/``cls`` unless a class
of that module defines it (:func:`private_reaches`); the exceptions, mostly third-party internals,
are in :data:`ALLOWED_PRIVATE`, each with its reason.

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
        where = (" (in a function)" if self.deferred else "") + (" (under TYPE_CHECKING)" if self.type_only else "")
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


ALLOWED_SIDEWAYS = {
    ("nvmathx.torch._gemm_calls", "nvmathx.linalg._cached"):
        "torch's GEMMs run nvmathx.linalg.matmul's cached plans by address, through the internal interface "
        "linalg declares for that (by_address, CachedMatmul.run_by_address), without wrapping operands",
}
"""(importing module, imported private module) -> why the one may reach the other's private module."""


def sideways(edges) -> list[Edge]:
    """Imports of another area's private module or name, but those :data:`ALLOWED_SIDEWAYS`."""
    return [e for e in edges if area_of(e.target) not in (None, area_of(e.source)) and is_private(e)
            and (e.source, e.target) not in ALLOWED_SIDEWAYS]


def above_the_bindings(edges) -> list[Edge]:
    """Imports by the C bindings (``nvmathx._bindings``) of anything but themselves and the exception
    hierarchy (``nvmathx._errors``), and imports by ``nvmathx._errors`` of any nvmathx module."""
    def package(module):
        return ".".join(module.split(".")[:2])

    top = {"nvmathx._bindings", "nvmathx._errors"}
    return [e for e in edges if (package(e.source) == "nvmathx._bindings" and package(e.target) not in top)
            or (e.source == "nvmathx._errors" and e.target != "nvmathx._errors")]


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
        if edge.target in known and edge.target != edge.source:
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
            if edge.source in group and edge.target in group:
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
    if found := above_the_bindings(edges):
        problems.append(_report("imports by the C bindings of nvmathx modules above them", found))
    return problems


def test_nvmathx_has_no_cycle_no_sideways_import_and_no_upward_import():
    problems = check(ROOT)
    assert not problems, "\n".join(problems)


def test_the_areas_are_the_public_packages():
    public = {p.name for p in ROOT.iterdir() if (p / "__init__.py").exists() and not p.name.startswith("_")}
    assert public == set(AREAS)


# -- private attributes ----------------------------------------------------------------------------------

NAMEDTUPLE_API = frozenset({"_replace", "_fields", "_asdict", "_make", "_field_defaults"})  # public, despite the "_"

_NUMBA_LINKER = "numba-cuda's linker and code library have no public hook for a cache of linked images"
_DESCRIPTOR_HALF = ("a compiler's typing and lowering of the device_api descriptors is the descriptor's other half: "
                    "it reads the code and traits the descriptor generated")
_DISTRIBUTED = "distributed's function forms run their stateful plans' agreed paths (an interface is being declared)"
ALLOWED_PRIVATE = {
    ("nvmathx._bindings._loader", "_handle_uint"):
        "cuda.pathfinder's LoadedDL gives the handle of a library loaded without a path only there",
    ("nvmathx._core.tensor._torch", "_C"): "torch._C holds DLPack and stream queries torch exposes nowhere else",
    ("nvmathx._core.tensor._sparse", "_version"):
        "torch's version counter, bumped by every in-place write, is exposed only as Tensor._version",
    ("nvmathx._fftcore.callback_codegen_mlir", "_type"):
        "numba-cuda-mlir's C struct model keeps its type there (no public accessor)",
    ("nvmathx.device_api._launch", "_codelibrary"): "numba's compiled kernel gives its CUfunction only there",
    **{("nvmathx.device_api._link_cache", name): _NUMBA_LINKER for name in (
        "_Linker", "_cubin_cache", "_ensure_cc", "_get_linker_options", "_linkerinfo_cache", "_linking_files",
        "_max_registers", "_nvmathx_link_cache", "_object_codes")},
    ("nvmathx.device_api._numba_cuda", "_lto"): _NUMBA_LINKER,
    **{(module, name): _DESCRIPTOR_HALF
       for module in ("nvmathx.device_api._numba_cuda", "nvmathx.device_api._numba_cuda_mlir")
       for name in ("_curanddx_code", "_entry", "_entry_code", "_function", "_kernel_attributes", "_library_code",
                    "_row_code", "_row_dtype")},
    ("nvmathx.device_api._rows", "_row_dtype"): _DESCRIPTOR_HALF,
    ("nvmathx.device_api._signatures", "_spec"): _DESCRIPTOR_HALF,
    ("nvmathx.device_api._signatures", "_has"): _DESCRIPTOR_HALF,
    **{("nvmathx.distributed.fft._functions", name): _DISTRIBUTED
       for name in ("_from_agreed", "_operand", "_problem", "_run")},
    **{("nvmathx.distributed.linalg._functions", name): _DISTRIBUTED
       for name in ("_from_agreed", "_plan_agreed", "_rebind")},
    ("nvmathx.torch._float8.gemms", "_version"):
        "a tensor's version counter (torch's documented in-place check) says when a cached weight cast is stale",
    ("nvmathx.torch._fused", "_base"): "torch's autograd view base: the whole buffer an aux slice views",
}
"""(module, underscore attribute) -> why that module may touch it on objects not its own."""


def _private_names_defined(tree) -> set[str]:
    """The underscore names a class of this module defines: methods, class attributes, ``__slots__``
    entries, and attributes assigned on ``self`` or ``cls``."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    names.add(item.name)
                elif isinstance(item, (ast.Assign, ast.AnnAssign)):
                    for target in item.targets if isinstance(item, ast.Assign) else [item.target]:
                        if isinstance(target, ast.Name):
                            names.add(target.id)
                            if target.id == "__slots__" and isinstance(item.value, (ast.Tuple, ast.List)):
                                names.update(e.value for e in item.value.elts if isinstance(e, ast.Constant))
        elif (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and isinstance(node.value, ast.Name)
              and node.value.id in ("self", "cls")):
            names.add(node.attr)
    return names


def private_reaches(root: pathlib.Path) -> list[tuple[str, int, str]]:
    """(module, line, ``obj._name``) for each underscore attribute touched on anything but ``self``
    or ``cls`` that no class of the module defines (dunder names and the namedtuple API aside)."""
    found = []
    for name, (path, _) in modules(root).items():
        tree = ast.parse(path.read_text(), str(path))
        own = _private_names_defined(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Attribute) or not node.attr.startswith("_"):
                continue
            attribute = node.attr
            if attribute.startswith("__") and attribute.endswith("__"):
                continue
            if attribute in own or attribute in NAMEDTUPLE_API:
                continue
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                continue
            found.append((name, node.lineno, f"{ast.unparse(node.value)}.{attribute}"))
    return found


def test_no_module_reaches_into_another_class_private_attributes():
    found = [f"{module}:{line} {text}" for module, line, text in private_reaches(ROOT)
             if (module, text.rpartition(".")[2]) not in ALLOWED_PRIVATE]
    assert not found, "underscore attributes of objects defined elsewhere:\n  " + "\n  ".join(found)


def test_every_allowance_has_a_reason_and_is_used():
    used = {(module, text.rpartition(".")[2]) for module, _, text in private_reaches(ROOT)}
    assert all(isinstance(reason, str) and len(reason) > 20 for reason in ALLOWED_PRIVATE.values())
    # distributed's entries go as its declared interface lands
    stale = [key for key in ALLOWED_PRIVATE if key not in used and not key[0].startswith("nvmathx.distributed")]
    assert not stale, f"allowances no longer needed: {stale}"


def test_the_private_check_passes_own_classes_and_finds_reaches(tmp_path):
    root = tmp_path / "nvmathx"
    root.mkdir()
    (root / "__init__.py").write_text("")
    (root / "plans.py").write_text(
        "class Plan:\n    __slots__ = ('_slot',)\n    def _run(self):\n        self._state = 1\n"
        "    def same(self, other):\n        return other._state, other._slot, other._run()\n"
        "def point(p):\n    return p._replace(x=1)\n")
    (root / "user.py").write_text("def go(plan):\n    plan._run()\n    return self_like._state\n")
    assert sorted((module, text) for module, _, text in private_reaches(root)) == [
        ("nvmathx.user", "plan._run"), ("nvmathx.user", "self_like._state")]


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
            "nvmathx.fft._callbacks:3 -> nvmathx.fft._fft.FFT (under TYPE_CHECKING)",
            "nvmathx.fft._fft:1 -> nvmathx.fft._callbacks.compile_prolog",
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


def test_a_type_checking_import_makes_a_cycle_too(tree):
    def fft_cycles():
        known, edges = import_edges(tree)
        return [group for group in cycles(known, edges) if any(e.source.startswith("nvmathx.fft") for e in group)]

    (tree / "fft" / "_callback_codegen.py").write_text("")
    assert [[str(e) for e in group] for group in fft_cycles()] == [
        ["nvmathx.fft._callbacks:3 -> nvmathx.fft._fft.FFT (under TYPE_CHECKING)",
         "nvmathx.fft._fft:1 -> nvmathx.fft._callbacks.compile_prolog"]]
    (tree / "fft" / "_callbacks.py").write_text("")
    assert fft_cycles() == []


def test_the_bindings_import_only_themselves_and_the_errors(tree):
    (tree / "_errors.py").write_text("")
    (tree / "_bindings").mkdir()
    (tree / "_bindings" / "__init__.py").write_text("")
    (tree / "_bindings" / "cufft.py").write_text("from .._errors import CudaLibraryError\nfrom . import __init__\n")
    (tree / "_bindings" / "cuda_driver.py").write_text("def load():\n    from .._core.errors import CudaLibraryError\n")
    _, edges = import_edges(tree)
    assert [str(e) for e in above_the_bindings(edges)] == [
        "nvmathx._bindings.cuda_driver:2 -> nvmathx._core.errors.CudaLibraryError (in a function)"]


def test_only_the_allowed_module_reaches_the_declared_interface(tree):
    (tree / "linalg" / "_cached.py").write_text("def by_address(device_id, key):\n    pass\n")
    (tree / "torch" / "_gemm_calls.py").write_text("from ..linalg._cached import by_address\n")
    (tree / "torch" / "_layers.py").write_text("from ..linalg._cached import by_address\n")
    _, edges = import_edges(tree)
    reaching = [str(e) for e in sideways(edges) if e.target == "nvmathx.linalg._cached"]
    assert reaching == ["nvmathx.torch._layers:1 -> nvmathx.linalg._cached.by_address"]
    assert all(reason for reason in ALLOWED_SIDEWAYS.values())
