"""The reference, the fused path and the dispatch between them implement one declared interface."""

import inspect

import pytest

pytest.importorskip("torch")

from nvmathx.torch import _dispatch, _fused, _layer_gemms, _reference  # noqa: E402


def _interface_signature(name):
    parameters = list(inspect.signature(getattr(_layer_gemms.LayerGemms, name)).parameters.values())[1:]  # no self
    return [(p.name, p.kind, p.default) for p in parameters]


@pytest.mark.parametrize("module", [_reference, _fused, _dispatch], ids=lambda m: m.__name__)
@pytest.mark.parametrize("name", _layer_gemms.GEMM_NAMES)
def test_each_module_implements_every_gemm_of_the_interface(module, name):
    function = getattr(module, name)
    assert name in module.__all__
    ours = [(p.name, p.kind, p.default) for p in inspect.signature(function).parameters.values()]
    assert ours == _interface_signature(name)


def test_the_interface_names_exactly_its_gemms():
    declared = [name for name, value in vars(_layer_gemms.LayerGemms).items()
                if inspect.isfunction(value) and not name.startswith("_")]
    assert declared == list(_layer_gemms.GEMM_NAMES)


def test_the_reference_ignores_autotune(rng):
    import torch

    x, weight = (torch.from_numpy(rng.standard_normal(shape)) for shape in ((3, 4), (5, 4)))
    assert torch.equal(_reference.grad_input(x @ weight.T, weight, True), _reference.grad_input(x @ weight.T, weight))
