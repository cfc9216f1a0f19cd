"""torch's lazy views (conjugate and negative bits) on a real GPU: matmul() (first and cached call)
and Matmul against torch's own product of the same views, which honours the bits."""

import pytest

from helpers.torch_cuda import torch_with_cuda
from nvmathx.linalg import Matmul, matmul, plan_cache

pytestmark = pytest.mark.gpu


@pytest.fixture
def torch():
    plan_cache.clear()
    yield torch_with_cuda()
    plan_cache.clear()


def _views(torch):
    return {
        "conj": lambda x: x.conj(),
        "mH": lambda x: x.mH,
        "neg": lambda x: torch._neg_view(x),
        "neg_mH": lambda x: torch._neg_view(x.mH),
        "conj_of_neg_mT": lambda x: torch._neg_view(x.mT).conj(),
    }


def _complex(torch, rng, shape, dtype):
    values = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    return torch.from_numpy(values).to(getattr(torch, dtype)).cuda()


def _close(result, expected, dtype):
    assert not result.is_conj() and not result.is_neg()
    expected = expected.resolve_conj().resolve_neg().to(result.dtype)
    rtol = 1e-5 if dtype == "complex64" else 1e-12
    assert float((result - expected).abs().norm() / expected.abs().norm()) < rtol


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("position", ["a", "b"])
@pytest.mark.parametrize("view", ["conj", "mH", "neg", "neg_mH", "conj_of_neg_mT"])
def test_function_form(torch, rng, view, position, dtype):
    make = _views(torch)[view]
    transposing = view in ("mH", "neg_mH", "conj_of_neg_mT")
    shapes = {"a": (3, 64, 48), "b": (48, 40)}
    shape = shapes[position]
    base = _complex(torch, rng, shape[:-2] + shape[:-3:-1] if transposing else shape, dtype)
    x = make(base)
    y = _complex(torch, rng, shapes["b" if position == "a" else "a"], dtype)
    ordered = (x, y) if position == "a" else (y, x)
    _close(matmul(*ordered), ordered[0] @ ordered[1], dtype)  # first call
    base.copy_(_complex(torch, rng, base.shape, dtype))
    _close(matmul(*ordered, alpha=0.5j), 0.5j * (ordered[0] @ ordered[1]), dtype)  # cached
    plain = (x.resolve_conj().resolve_neg(), y) if position == "a" else (y, x.resolve_conj().resolve_neg())
    _close(matmul(*plain), plain[0] @ plain[1], dtype)  # same layout, plain memory: another plan
    assert plan_cache.info(0).size == 2


@pytest.mark.parametrize("view", ["conj", "mH", "neg", "neg_mH"])
def test_stateful(torch, rng, view):
    make = _views(torch)[view]
    base = _complex(torch, rng, (32, 64) if view in ("mH", "neg_mH") else (64, 32), "complex128")
    b, c = _complex(torch, rng, (32, 16), "complex128"), _complex(torch, rng, (64, 16), "complex128")
    with Matmul(make(base), b, torch._neg_view(c.conj()), alpha=1 - 2j, beta=0.25) as mm:
        mm.plan()
        _close(mm.execute(), (1 - 2j) * (make(base) @ b) - 0.25 * c.conj(), "complex128")
        other = _complex(torch, rng, base.shape, "complex128")
        mm.reset_operands(a=make(other))
        _close(mm.execute(), (1 - 2j) * (make(other) @ b) - 0.25 * c.conj(), "complex128")


def test_conjugate_transpose_is_read_in_place(torch, rng):
    """a.mH is multiplied from a's memory: a change to a shows in the next execute()."""
    a, b = _complex(torch, rng, (40, 64), "complex64"), _complex(torch, rng, (40, 24), "complex64")
    with Matmul(a.mH, b) as mm:
        mm.plan()
        a.mul_(2 - 1j)
        _close(mm.execute(), a.mH @ b, "complex64")
