"""Every function form (the one-call counterpart of a stateful planner) takes ``execution`` and
``stream`` as keyword-only parameters defaulting to None, after its own, and documents each of
its parameters itself, with Returns, Raises and Examples sections."""

import inspect

import pytest

import nvmathx.fft
import nvmathx.linalg
import nvmathx.sparse

# The public functions of each area that are not function forms: helpers that plan nothing.
NOT_FUNCTION_FORMS = {
    nvmathx.linalg: {"plan_key", "relu_mask", "solve_plan_key", "choose_solver_engine"},
    nvmathx.sparse: {"plan_key", "spsolve_plan_key"},
    nvmathx.fft: {"fftfreq", "rfftfreq", "fftshift", "ifftshift", "plan_key", "compile_prolog", "compile_epilog"},
}


def _function_forms():
    for module, helpers in NOT_FUNCTION_FORMS.items():
        for name in module.__all__:
            value = getattr(module, name)
            if inspect.isfunction(value) and name not in helpers:
                yield pytest.param(value, id=f"{module.__name__}.{name}")


FUNCTION_FORMS = list(_function_forms())


def test_the_areas_function_forms_are_all_found():
    names = {param.id for param in FUNCTION_FORMS}
    assert "nvmathx.linalg.matmul" in names and "nvmathx.fft.ihfftn" in names
    others = {"nvmathx.linalg.matmul", "nvmathx.linalg.solve", "nvmathx.linalg.direct_solver", "nvmathx.sparse.matmul",
              "nvmathx.sparse.spsolve"}
    assert others <= names and len(names) == len(others) + len(nvmathx.fft._transforms.TRANSFORMS)


@pytest.mark.parametrize("function", FUNCTION_FORMS)
def test_execution_and_stream_are_keyword_only_and_last(function):
    parameters = list(inspect.signature(function).parameters.values())
    assert [p.name for p in parameters[-2:]] == ["execution", "stream"]
    for parameter in parameters[-2:]:
        assert parameter.kind is inspect.Parameter.KEYWORD_ONLY and parameter.default is None


@pytest.mark.parametrize("function", FUNCTION_FORMS)
def test_each_parameter_is_documented_by_the_function_itself(function):
    doc = inspect.getdoc(function)
    for section in ("Parameters\n----------", "Returns\n-------", "Raises\n------", "Examples\n--------"):
        assert section in doc, section
    documented = doc.split("Parameters\n----------", 1)[1].split("Returns\n-------", 1)[0]
    for name in inspect.signature(function).parameters:
        assert any(line.startswith(name + " :") or line.startswith(name + ",") or f", {name} :" in line
                   or f", {name}," in line for line in documented.splitlines()), name
    assert "As for" not in documented  # each parameter is described here, not by reference
