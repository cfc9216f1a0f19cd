"""Every public callable is fully annotated, so the shipped ``py.typed`` promises nothing it lacks: each
function, constructor and public method or property of a public class names the type of every parameter
and of its return."""

import enum
import importlib
import inspect

import pytest

from test_public_api import PUBLIC_MODULES

# Qualified names that cannot carry an annotation, each with the reason. Keep it empty unless a name
# truly cannot be annotated.
ALLOWED_MISSING: set[str] = set()

# Dunders that a user calls directly (construction, calling, the context protocol); the rest are the
# data model's business.
PUBLIC_DUNDERS = ("__init__", "__call__", "__enter__", "__exit__")


def _ours(obj) -> bool:
    return (getattr(obj, "__module__", None) or "").split(".")[0] == "nvmathx"


def _missing(function, qualname):
    """The parameter names (and "return") of ``function`` that lack an annotation, as qualified names."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):  # a builtin without a signature is not ours to annotate
        return []
    missing = []
    parameters = list(signature.parameters.values())
    for index, parameter in enumerate(parameters):
        if index == 0 and parameter.name in ("self", "cls"):
            continue
        if parameter.annotation is inspect.Parameter.empty:
            missing.append(f"{qualname}({parameter.name})")
    if signature.return_annotation is inspect.Signature.empty:
        missing.append(f"{qualname} -> return")
    return missing


def _class_members(cls, qualname):
    missing = []
    seen = set()
    for base in cls.__mro__:
        if not _ours(base) or base is object:
            continue
        for name, member in vars(base).items():
            if name in seen or (name.startswith("_") and name not in PUBLIC_DUNDERS):
                continue
            seen.add(name)
            where = f"{qualname}.{name}"
            if isinstance(member, property):
                if member.fget is not None:
                    missing += _missing(member.fget, where)
            elif isinstance(member, (staticmethod, classmethod)):
                missing += _missing(member.__func__, where)
            elif inspect.isfunction(member) and _ours(member):
                missing += _missing(member, where)
    return missing


def _public_objects():
    for module_name in sorted(PUBLIC_MODULES):
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError:
            continue
        for name in getattr(module, "__all__", []):
            try:
                value = getattr(module, name)
            except ModuleNotFoundError:  # a lazily imported area not in this build
                continue
            yield f"{module_name}.{name}", value


def unannotated():
    """Every public parameter or return without an annotation, by qualified name."""
    missing = []
    for qualname, value in _public_objects():
        if inspect.isclass(value):
            if not _ours(value) or issubclass(value, enum.Enum):
                continue  # an enum's members are values; its machinery is the standard library's
            missing += _class_members(value, qualname)
        elif callable(value) and _ours(value) and not inspect.ismodule(value):
            missing += _missing(value, qualname)
    return sorted(set(missing))


def test_every_public_callable_is_fully_annotated():
    missing = [name for name in unannotated() if name.split("(")[0].split(" ")[0] not in ALLOWED_MISSING]
    assert not missing, "not annotated:\n  " + "\n  ".join(missing)


def test_the_walk_sees_the_public_api():
    # A walk that found nothing would pass vacuously: the known annotated entry points are visited.
    names = {qualname for qualname, _ in _public_objects()}
    assert {"nvmathx.linalg.matmul", "nvmathx.fft.fft", "nvmathx.fft.FFT"} <= names


@pytest.mark.parametrize("function, expected", [
    (lambda a, b: None, {"q(a)", "q(b)", "q -> return"}),
    (lambda a: None, {"q(a)", "q -> return"}),
])
def test_the_check_reports_what_lacks_an_annotation(function, expected):
    assert set(_missing(function, "q")) == expected
