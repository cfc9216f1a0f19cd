"""``FFTOptions(inplace=True)``: the result goes into the operand's own memory, so that memory must
hold the operand's values, one element each. Lazy views (torch's conjugate and negative bits),
read-only memory, broadcast or overlapping strides and lists are refused naming ``x``, at
construction and in ``reset_operand``; every other layout is written in place and returned, on the
CPU space, on the GPU code path (the host stand-in of ``_fake_device.py``) and on a real GPU."""

import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided

import nvmathx.fft as nfft
from helpers.dft import relative_error
from helpers.fake_torch_device import present_torch_as_device
from nvmathx import OperandError
from nvmathx._core.tensor import may_overlap

from ._fake_device import install, to_device, to_host

torch = pytest.importorskip("torch")

IN_PLACE = {"inplace": True}


def _complex(rng, shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


@pytest.fixture(params=["cpu", "fake-gpu"])
def space(request, monkeypatch):
    """Where torch tensors run: the CPU space, or the GPU code path (tensors presented as device 0)."""
    if request.param == "fake-gpu":
        nfft.plan_cache.clear()
        install(monkeypatch)
        present_torch_as_device(monkeypatch)
    yield request.param
    nfft.plan_cache.clear()


# -- operands whose memory is not their values: refused naming x -------------------------------------

TORCH_REFUSED = {
    "conj view": (lambda t: t.conj(), "is a lazily conjugated view"),
    "negative view": (lambda t: torch._neg_view(t), "is a lazily negated view"),
    "conj of a transpose": (lambda t: t.mT.conj(), "is a lazily conjugated view"),
    "expanded row": (lambda t: t[:1].expand(4, 8), "has elements that share memory"),
    "overlapping strides": (lambda t: t.as_strided((4, 8), (1, 1)), "has elements that share memory"),
}


@pytest.mark.parametrize("case", sorted(TORCH_REFUSED))
def test_torch_views_are_refused_at_construction(space, rng, case):
    make, reason = TORCH_REFUSED[case]
    base = torch.from_numpy(_complex(rng, (4, 8)))
    before = base.clone()
    with pytest.raises(OperandError, match=f"^x: {reason}.*options.inplace") as info:
        nfft.FFT(make(base), options=IN_PLACE)
    assert info.value.argument == "x"
    assert torch.equal(base, before)


@pytest.mark.parametrize("case", sorted(TORCH_REFUSED))
def test_torch_views_are_refused_by_reset_operand(space, rng, case):
    make, reason = TORCH_REFUSED[case]
    operand = torch.from_numpy(_complex(rng, (4, 8)))
    expected = np.fft.fftn(operand.numpy())
    view = make(torch.from_numpy(_complex(rng, (4, 8))))
    with nfft.FFT(operand, options=IN_PLACE) as f:
        f.plan()
        if tuple(view.stride()) == tuple(operand.stride()):  # else the layout check speaks first
            with pytest.raises(OperandError, match=f"^x: {reason}"):
                f.reset_operand(view)
        else:
            with pytest.raises(OperandError, match="^x: "):
                f.reset_operand(view)
        assert f.execute() is operand  # the plan still serves its own operand
    assert relative_error(operand.numpy(), expected) < 1e-12


def test_the_reported_case_no_longer_returns_a_new_tensor(rng):
    t = torch.from_numpy(_complex(rng, (16,)))
    with pytest.raises(OperandError, match="^x: is a lazily conjugated view"):
        nfft.FFT(t.conj(), options=IN_PLACE)
    with nfft.FFT(t.conj()) as f:  # out of place the view is fine: its values are transformed
        f.plan()
        assert relative_error(f.execute().numpy(), np.fft.fft(np.conj(t.numpy()))) < 1e-12


def _read_only(array):
    array.flags.writeable = False
    return array


NUMPY_REFUSED = {
    "read-only": (lambda c: _read_only(c.copy()), "is read-only"),
    "zero stride": (lambda c: as_strided(c[0], (4, 8), (0, 16)), "has elements that share memory"),
    "overlapping strides": (lambda c: as_strided(c, (4, 8), (16, 16)), "has elements that share memory"),
    "list": (lambda c: c.tolist(), "is a list, which is converted to a new array"),
    "tuple": (lambda c: tuple(map(tuple, c)), "is a tuple, which is converted to a new array"),
}


@pytest.mark.parametrize("case", sorted(NUMPY_REFUSED))
def test_host_arrays_that_cannot_take_the_result(rng, case):
    make, reason = NUMPY_REFUSED[case]
    x = make(_complex(rng, (4, 8)))
    with pytest.raises(OperandError, match=f"^x: {reason}"):
        nfft.FFT(x, options=IN_PLACE)
    with nfft.FFT(np.zeros((4, 8), complex), options=IN_PLACE) as f:
        with pytest.raises(OperandError, match="^x: "):
            f.reset_operand(x)


@pytest.mark.parametrize("strides", [(0, 1), (1, 1)])
def test_device_arrays_with_shared_elements_on_the_gpu_path(monkeypatch, rng, strides):
    install(monkeypatch)
    dense = to_device(_complex(rng, (16,)))
    from nvmathx._core.device_array import DeviceArray

    shared = DeviceArray(dense.buffer, dense.ptr, (4, 8), strides, dense.dtype, 0, None)
    with pytest.raises(OperandError, match="^x: has elements that share memory"):
        nfft.FFT(shared, options=IN_PLACE)
    nfft.plan_cache.clear()


# -- layouts that hold their values: written in place --------------------------------------------------


NUMPY_VIEWS = {
    "dense": lambda a: a,
    "transposed": lambda a: a.T,
    "reversed and sliced": lambda a: a[::-1, 1::2],
    "Fortran": np.asfortranarray,
}


@pytest.mark.parametrize("view", sorted(NUMPY_VIEWS))
def test_views_are_written_in_place_on_the_cpu(rng, view):
    x = NUMPY_VIEWS[view](_complex(rng, (6, 10)))
    expected = np.fft.fftn(x, axes=(0,))
    with nfft.FFT(x, axes=[0], options=IN_PLACE) as f:
        f.plan()
        assert f.execute() is x
    assert relative_error(x, expected) < 1e-12


@pytest.mark.parametrize("view", ["dense", "transposed"])
def test_torch_tensors_are_written_in_place(space, rng, view):
    x = torch.from_numpy(_complex(rng, (6, 10)))
    x = x.mT if view == "transposed" else x
    expected = np.fft.fft(x.numpy(), axis=-1)
    with nfft.FFT(x, axes=[-1], options=IN_PLACE) as f:
        f.plan()
        assert f.execute() is x
    assert relative_error(x.numpy(), expected) < 1e-12


@pytest.mark.parametrize("view", sorted(NUMPY_VIEWS))
def test_host_operand_on_cuda_execution_is_written_back(monkeypatch, rng, view):
    """A host operand runs on the GPU through a copy: in place, the result is copied back into it."""
    install(monkeypatch)
    x = NUMPY_VIEWS[view](_complex(rng, (6, 10)))
    expected = np.fft.fft2(x)
    with nfft.FFT(x, execution="cuda", options=IN_PLACE) as f:
        f.plan()
        assert f.execute() is x
    assert relative_error(x, expected) < 1e-12
    out_of_place = _complex(rng, (6, 10))
    original = out_of_place.copy()
    with nfft.FFT(out_of_place, execution="cuda") as f:
        f.plan()
        result = f.execute()
    assert result is not out_of_place and relative_error(result, np.fft.fft2(original)) < 1e-12
    np.testing.assert_array_equal(out_of_place, original)
    nfft.plan_cache.clear()


def test_device_array_views_are_written_in_place(monkeypatch, rng):
    install(monkeypatch)
    host = _complex(rng, (6, 20))[1::2, ::4]
    x = to_device(host)
    with nfft.FFT(x, axes=[1], options=IN_PLACE) as f:
        f.plan()
        assert f.execute() is x
    assert relative_error(to_host(x), np.fft.fft(host, axis=1)) < 1e-12
    nfft.plan_cache.clear()


def test_device_arrays_with_negative_strides_are_refused_at_construction(monkeypatch, rng):
    """cuFFT writes in place only along positive strides (out of place any layout is fine)."""
    install(monkeypatch)
    host = _complex(rng, (6, 10))[::-1]
    x = to_device(host)
    with pytest.raises(OperandError, match=r"^x: has strides \(-10, 1\).*positive strides"):
        nfft.FFT(x, options=IN_PLACE)
    with nfft.FFT(x) as f:
        f.plan()
        assert relative_error(to_host(f.execute()), np.fft.fft2(host)) < 1e-12
    nfft.plan_cache.clear()


# -- the layout test -----------------------------------------------------------------------------------


@pytest.mark.parametrize("shape, strides, overlap", [
    ((4, 8), (8, 1), False),
    ((4, 8), (1, 4), False),
    ((4, 8), (-8, -1), False),
    ((4, 8), (16, 2), False),
    ((2, 3, 4), (1, 8, 2), False),
    ((4, 1, 8), (8, 0, 1), False),  # extent 1: its stride is never used
    ((4, 0), (0, 0), False),  # no element
    ((4, 8), (0, 1), True),
    ((4, 8), (4, 1), True),
    ((4, 8), (1, 1), True),
    ((3,), (0,), True),
])
def test_may_overlap(shape, strides, overlap):
    assert may_overlap(shape, strides) is overlap
    offsets = sum(index * stride for index, stride in zip(np.indices(shape), strides))  # the elements' offsets
    assert (np.unique(offsets).size < offsets.size) == overlap


# -- on a real GPU ----------------------------------------------------------------------------------------


@pytest.mark.gpu
def test_gpu_lazy_views_are_refused_and_plain_tensors_written_in_place(rng):
    from helpers.torch_cuda import torch_with_cuda

    cuda_torch = torch_with_cuda()
    base = cuda_torch.from_numpy(_complex(rng, (8, 32))).cuda()
    for view, reason in ((base.conj(), "is a lazily conjugated view"),
                         (cuda_torch._neg_view(base), "is a lazily negated view"),
                         (base[:1].expand(8, 32), "has elements that share memory")):
        with pytest.raises(OperandError, match=f"^x: {reason}"):
            nfft.FFT(view, options=IN_PLACE)
    expected = cuda_torch.fft.fft(base, dim=-1)
    with nfft.FFT(base, axes=[-1], options=IN_PLACE) as f:
        f.plan()
        assert f.execute() is base
        cuda_torch.cuda.synchronize()
    assert float((base - expected).abs().norm() / expected.abs().norm()) < 1e-12


@pytest.mark.gpu
def test_gpu_host_operand_is_written_back(rng):
    x = _complex(rng, (8, 32))[:, ::2]
    expected = np.fft.fft2(x)
    with nfft.FFT(x, execution="cuda", options=IN_PLACE) as f:
        f.plan()
        assert f.execute() is x
    assert relative_error(x, expected) < 1e-12
