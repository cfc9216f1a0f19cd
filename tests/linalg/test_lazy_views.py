"""torch's lazy views (conjugate and negative bits) through matmul() and Matmul on the GPU code path,
with torch CPU tensors presented as device tensors to the host fake of cuBLASLt; checked against
numpy on the views' values."""

import gc

import numpy as np
import pytest

from helpers.fake_torch_device import present_torch_as_device
from nvmathx import OperandError
from nvmathx.linalg import Matmul, matmul, plan_cache, plan_key

from ._fake_cublaslt import install
from ._reference import relative_error

torch = pytest.importorskip("torch")

# (torch view of an array, numpy of the same values); every one reads the base array's memory.
VIEWS = {
    "plain": (lambda x: x, lambda x: x),
    "conj": (lambda x: x.conj(), np.conj),
    "mH": (lambda x: x.mH, lambda x: np.conj(np.swapaxes(x, -1, -2))),
    "mT": (lambda x: x.mT, lambda x: np.swapaxes(x, -1, -2)),
    "neg": (lambda x: torch._neg_view(x), np.negative),
    "neg_mH": (lambda x: torch._neg_view(x.mH), lambda x: -np.conj(np.swapaxes(x, -1, -2))),
    "conj_of_neg_mT": (lambda x: torch._neg_view(x.mT).conj(), lambda x: -np.conj(np.swapaxes(x, -1, -2))),
}
# the views whose transposed memory cuBLASLt conjugates as it reads (CUBLAS_OP_C)
CONJUGATE_TRANSPOSES = {"mH"}


@pytest.fixture
def fake(monkeypatch):
    fake_lt, resource = install(monkeypatch)
    present_torch_as_device(monkeypatch)
    yield fake_lt
    plan_cache.clear()
    gc.collect()


def _aligned(values):
    """A torch copy of ``values`` starting on a 256-byte boundary (as plans made for one expect)."""
    itemsize = values.dtype.itemsize
    raw = torch.empty(values.size + 256 // itemsize, dtype=torch.from_numpy(values).dtype)
    offset = (-raw.data_ptr() % 256) // itemsize
    out = raw[offset:offset + values.size].view(values.shape)
    out.copy_(torch.from_numpy(values))
    return out


def _complex(rng, shape, dtype):
    return _aligned((rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype))


def _base_shape(view, shape):
    """The base array's shape for a view of ``shape`` (transposing views swap the last two axes)."""
    return shape[:-2] + shape[:-3:-1] if view in ("mH", "mT", "neg_mH", "conj_of_neg_mT") else shape


def _operand(rng, view, shape, dtype):
    """(the torch view, its values in numpy, its base tensor)."""
    base = _complex(rng, _base_shape(view, shape), dtype)
    make, values = VIEWS[view]
    return make(base), values(base.numpy()), base


def _check(result, expected, dtype):
    assert isinstance(result, torch.Tensor) and not result.is_conj() and not result.is_neg()
    assert relative_error(result.numpy(), expected.astype(np.complex128)) < (1e-5 if dtype == "complex64" else 1e-12)


def _ops(fake_lt):
    """(TRANSA, TRANSB) of every matmul descriptor alive."""
    from nvmathx._bindings import cublaslt as lt

    descs = [obj for obj in fake_lt.objects.values() if isinstance(obj, dict) and "compute" in obj]
    return {(int(d[lt.MatmulDescAttribute.TRANSA]), int(d[lt.MatmulDescAttribute.TRANSB])) for d in descs}


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("position", ["a", "b"])
@pytest.mark.parametrize("view", sorted(VIEWS))
def test_function_form_first_and_cached_call(fake, rng, view, position, dtype):
    shapes = {"a": (2, 5, 3), "b": (3, 4)}
    other = "b" if position == "a" else "a"
    x, x_values, base = _operand(rng, view, shapes[position], dtype)
    y = _complex(rng, shapes[other], dtype)
    ordered = (x, y) if position == "a" else (y, x)
    values = (x_values, y.numpy()) if position == "a" else (y.numpy(), x_values)
    _check(matmul(*ordered), np.matmul(*values), dtype)  # a cache miss
    base.copy_(_complex(rng, base.shape, dtype))  # new values in the same memory: the view follows
    values = (VIEWS[view][1](base.numpy()), y.numpy()) if position == "a" else (y.numpy(), VIEWS[view][1](base.numpy()))
    _check(matmul(*ordered), np.matmul(*values), dtype)  # a hit
    info = plan_cache.info(0)
    assert (info.misses, info.hits) == (1, 1)
    if view in CONJUGATE_TRANSPOSES:  # no copy: cuBLASLt conjugates the transposed memory as it reads
        assert _ops(fake) == ({(0, 2)} if position == "a" else {(2, 0)})


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_a_cached_plan_is_never_reused_for_other_lazy_bits(fake, rng, dtype):
    base, b = _complex(rng, (3, 5), dtype), _complex(rng, (3, 4), dtype)
    seen = set()
    for view in ("mT", "mH", "neg_mH", "conj_of_neg_mT"):  # one memory layout, different values
        x = VIEWS[view][0](base)
        key = plan_key(x, b)
        assert key not in seen or view == "conj_of_neg_mT"  # (the same bits as neg_mH: the same plan)
        seen.add(key)
        for _ in range(2):
            _check(matmul(x, b), VIEWS[view][1](base.numpy()) @ b.numpy(), dtype)
    assert plan_cache.info(0).size == 3


def test_conjugate_views_of_c_and_of_a_vector_are_materialised(fake, rng):
    a, b, c = (_complex(rng, shape, "complex128") for shape in ((4, 3), (3,), (4, 6)))
    _check(matmul(a, b.conj()), a.numpy() @ b.numpy().conj(), "complex128")
    w = _complex(rng, (3, 6), "complex128")
    for _ in range(2):
        _check(matmul(a, w, torch._neg_view(c.conj()), beta=0.5j),
               a.numpy() @ w.numpy() - 0.5j * c.numpy().conj(), "complex128")


def test_real_negative_views(fake, rng):
    a, b, bias = (_aligned(rng.standard_normal(shape)) for shape in ((6, 5), (5, 3), (3,)))
    imaginary = _complex(rng, (6, 5), "complex128").conj().imag  # a negative view of a real tensor
    assert imaginary.is_neg()
    for _ in range(2):
        result = matmul(torch._neg_view(a), b, epilog="BIAS", epilog_inputs={"bias": torch._neg_view(bias)})
        assert relative_error(result.numpy(), -a.numpy() @ b.numpy() - bias.numpy()) < 1e-12
        assert relative_error(matmul(imaginary, b).numpy(), imaginary.resolve_neg().numpy() @ b.numpy()) < 1e-12


@pytest.mark.parametrize("view", ["mH", "neg_mH", "conj"])
def test_stateful_matmul(fake, rng, view):
    x, x_values, base = _operand(rng, view, (5, 3), "complex128")
    b = _complex(rng, (3, 4), "complex128")
    with Matmul(x, b, alpha=2 - 1j) as mm:
        mm.plan()
        _check(mm.execute(), (2 - 1j) * x_values @ b.numpy(), "complex128")
        if view == "mH":  # the plan reads the base's memory: new values are seen, as for plain operands
            assert _ops(fake) == {(0, 2)}
            base.copy_(_complex(rng, base.shape, "complex128"))
            _check(mm.execute(), (2 - 1j) * VIEWS[view][1](base.numpy()) @ b.numpy(), "complex128")
        if view != "mH":  # (a copy's alignment is torch's CPU allocator's, which may be less than planned)
            return
        y, y_values, _ = _operand(rng, view, (5, 3), "complex128")
        mm.reset_operands(a=y)
        _check(mm.execute(), (2 - 1j) * y_values @ b.numpy(), "complex128")
        plain = _aligned(y.resolve_conj().numpy().T).mT  # the plan conjugates a as it reads: plain memory of
        assert plain.stride() == y.stride()  # the same layout is another problem
        with pytest.raises(OperandError, match="^a: must match the planned operand.*, a conjugate view"):
            mm.reset_operands(a=plain)


def test_host_execution_of_lazy_views(rng):
    """On the CPU execution space torch CPU tensors are read through numpy: views are materialised."""
    a, b = _complex(rng, (3, 4), "complex128"), _complex(rng, (3, 5), "complex128")
    expected = a.numpy().conj().T @ b.numpy()
    assert relative_error(matmul(a.mH, b).numpy(), expected) < 1e-12
    assert relative_error(matmul(torch._neg_view(a.mH), b).numpy(), -expected) < 1e-12
