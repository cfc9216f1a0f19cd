"""The public names of nvmathx and the docstrings that document them, for the docstring tests.

Public modules are found as the docs find them (every module without an underscore-led part);
public names are every module's ``__all__``; a public class's own methods and properties (no
leading underscore) are documented on its page, so their docstrings count too.
"""

import ast
import doctest
import importlib
import inspect
import pathlib
import pkgutil

import nvmathx


def public_modules() -> list[str]:
    found = ["nvmathx"] + [info.name for info in pkgutil.walk_packages(nvmathx.__path__, "nvmathx.")
                           if not any(part.startswith("_") for part in info.name.split(".")[1:])]
    return sorted(found)


def importable(module_name: str) -> bool:
    """Whether a public module imports here: False where an optional package it needs (torch) is not
    installed, as in a [test]-only install."""
    try:
        importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if (error.name or "").split(".")[0] == "nvmathx":
            raise
        return False
    return True


def public_names() -> list[tuple[str, str]]:
    """(module, name) for every name in every public module's ``__all__`` (modules that need an
    optional package that is not installed left out)."""
    return [(module, name) for module in public_modules() if importable(module)
            for name in importlib.import_module(module).__all__]


def attribute_docstrings(module_name: str) -> set[str]:
    """Names given a docstring by a string right after their assignment, in the module's own file or,
    for a package, in the files of the package folder (where its private modules define them)."""
    module = importlib.import_module(module_name)
    path = pathlib.Path(module.__file__)
    files = sorted(path.parent.glob("*.py")) if path.name == "__init__.py" else [path]
    names = set()
    for file in files:
        body = ast.parse(file.read_text()).body
        for statement, following in zip(body, body[1:]):
            documented = (isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant)
                          and isinstance(following.value.value, str) and following.value.value.strip())
            if documented and isinstance(statement, (ast.Assign, ast.AnnAssign)):
                targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
                names.update(target.id for target in targets if isinstance(target, ast.Name))
    return names


def documented_objects(module_name: str, name: str):
    """(qualified name, docstring) of a public name and, for a class, of its own public methods and
    properties."""
    value = getattr(importlib.import_module(module_name), name)
    qualified = f"{module_name}.{name}"
    if inspect.ismodule(value):
        return  # documented on its own page, by its module docstring
    yield qualified, inspect.getdoc(value) if inspect.isclass(value) or inspect.isroutine(value) else None
    if inspect.isclass(value) and value.__module__.startswith("nvmathx"):
        for member, attribute in vars(value).items():
            if member.startswith("_"):
                continue
            if isinstance(attribute, (staticmethod, classmethod)):
                attribute = attribute.__func__
            if inspect.isfunction(attribute) or isinstance(attribute, property):
                yield f"{qualified}.{member}", attribute.__doc__


GPU = doctest.register_optionflag("GPU")
"""``# doctest: +GPU`` marks an example that needs a GPU: the CPU run skips it, the GPU run (the
``gpu`` marker) runs the whole docstring."""


def doctest_of(qualified: str, docstring: str, *, on_gpu: bool) -> doctest.DocTest:
    """The examples of one docstring; without a GPU, those marked ``+GPU`` are skipped."""
    test = doctest.DocTestParser().get_doctest(docstring, {}, qualified, None, 0)
    if not on_gpu:
        for example in test.examples:
            if example.options.get(GPU):
                example.options[doctest.SKIP] = True
    return test


class _Runner(doctest.DocTestRunner):
    """Keeps the exceptions examples raised, to tell a missing optional package from a failure."""

    def __init__(self):
        super().__init__(optionflags=doctest.ELLIPSIS)
        self.raised: list[BaseException] = []

    def report_unexpected_exception(self, out, test, example, exc_info):
        self.raised.append(exc_info[1])
        super().report_unexpected_exception(out, test, example, exc_info)


def _missing_package(error: BaseException | None) -> str | None:
    """What is not installed, where ``error`` (or an exception it was raised from) says so: an
    ImportError, LibraryNotFoundError for a CUDA library, or a callback compiler that is missing or
    cannot run here (numba-cuda 0.30 on numpy 2.5, say)."""
    from nvmathx import LibraryNotFoundError
    from nvmathx.fft import CallbackCompileError

    while error is not None:
        if isinstance(error, (ImportError, LibraryNotFoundError)):
            return str(error)
        if isinstance(error, CallbackCompileError) and error.argument == "compiler":
            return str(error)
        error = error.__cause__ or error.__context__
    return None


def run_doctest(test: doctest.DocTest) -> tuple[int, str, str | None]:
    """(failures, report, missing) of running ``test`` with the flags the docs use (ELLIPSIS);
    ``missing`` says which optional package an example found absent (the caller skips), else None."""
    report: list[str] = []
    runner = _Runner()
    failed = runner.run(test, out=report.append).failed
    missing = next(filter(None, map(_missing_package, runner.raised)), None)
    return failed, "".join(report), missing
