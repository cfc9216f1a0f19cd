"""Operand views and result creation on the CPU (numpy, torch CPU tensors, array-likes)."""

import numpy as np
import pytest

from helpers.torch_random import randn
from nvmathx._core.dtypes import numpy_dtype
from nvmathx._core.errors import OperandError, UnsupportedOperandError
from nvmathx._core.tensor import (
    Operand,
    adapter_for,
    c_strides,
    f_strides,
    key_function,
    operand_keys,
    resolve_operand,
    wrap_operand,
)


def test_c_and_f_strides():
    assert c_strides((2, 3, 4)) == (12, 4, 1)
    assert f_strides((2, 3, 4)) == (1, 2, 6)
    assert c_strides(()) == ()
    assert c_strides((0, 5)) == (5, 1)


@pytest.mark.parametrize(
    "make",
    [
        lambda rng: rng.standard_normal((5, 7)),
        lambda rng: np.asfortranarray(rng.standard_normal((5, 7)).astype(np.float32)),
        lambda rng: rng.standard_normal((6, 8))[::2, 1::3],
        lambda rng: rng.standard_normal((4, 5))[::-1],
        lambda rng: (rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))).astype(np.complex64).T,
        lambda rng: rng.standard_normal(()),
    ],
)
def test_numpy_view_matches_array(rng, make):
    array = make(rng)
    operand = wrap_operand(array, "x")
    assert operand.package == "numpy"
    assert operand.device_id == -1 and not operand.is_device
    assert operand.shape == array.shape
    assert operand.dtype == array.dtype
    assert operand.strides == tuple(s // array.itemsize for s in array.strides)
    assert operand.ptr == array.__array_interface__["data"][0]
    # Reading through (ptr, strides) reproduces every element.
    base = np.lib.stride_tricks.as_strided(array, array.shape, array.strides)
    np.testing.assert_array_equal(base, array)


def test_contiguity_flags(rng):
    array = rng.standard_normal((3, 4))
    assert wrap_operand(array, "x").is_c_contiguous()
    assert not wrap_operand(array, "x").is_f_contiguous()
    assert wrap_operand(array.T, "x").is_f_contiguous()
    assert not wrap_operand(array[:, ::2], "x").is_c_contiguous()


def test_array_like_inputs():
    operand = wrap_operand([[1.0, 2.0], [3.0, 4.0]], "a", array_like=True)
    assert operand.shape == (2, 2) and operand.dtype == np.float64
    with pytest.raises(UnsupportedOperandError, match="^a:"):
        wrap_operand([[1.0, 2.0]], "a")
    for ragged in ([[1.0, 2.0], [3.0]], ((1j,), (2j, 3j))):  # numpy's own ValueError, typed and named
        with pytest.raises(OperandError, match="^b: could not be converted to an array with numpy.asarray"):
            wrap_operand(ragged, "b", array_like=True)


@pytest.mark.parametrize("bad", [object(), "text", {"a": 1}, 3.0, np.float32(2.0)])
def test_unsupported_objects_name_the_argument(bad):
    with pytest.raises(UnsupportedOperandError, match="^weights:"):
        wrap_operand(bad, "weights")


def test_unviewable_dlpack_object_raises_typed_error():
    class Broken:
        def __dlpack__(self, **kwargs):
            raise RuntimeError("no")

        def __dlpack_device__(self):
            return (1, 0)

    with pytest.raises(UnsupportedOperandError, match="^x:"):
        wrap_operand(Broken(), "x")


def test_adapter_lookup_is_cached_on_type():
    first = adapter_for(np.ones(3))
    assert adapter_for(np.zeros((2, 2))) is first


def test_numpy_result_creation_round_trip(rng):
    operand = wrap_operand(rng.standard_normal((3, 4)), "x")
    result = operand.adapter.empty((4, 5), np.dtype(np.complex64), -1, None)
    assert isinstance(result, np.ndarray) and result.shape == (4, 5) and result.dtype == np.complex64
    fortran = operand.adapter.empty((4, 5), np.float32, -1, None, strides=f_strides((4, 5)))
    assert fortran.flags.f_contiguous
    with pytest.raises(OperandError, match="device_id"):
        operand.adapter.empty((2,), np.float32, 0, None)


@pytest.fixture
def torch():
    """The torch module (the test is skipped without it; the numpy tests above run anyway)."""
    return pytest.importorskip("torch")


@pytest.mark.parametrize(
    "dtype_name",
    ["float16", "bfloat16", "float32", "float64", "complex64", "complex128", "float8_e4m3fn", "float8_e5m2"],
)
def test_torch_cpu_view_and_dtype_mapping(rng, torch, dtype_name):
    tensor = randn(rng, 6, 10).to(getattr(torch, dtype_name))[:, ::2].t()
    operand = wrap_operand(tensor, "b")
    assert operand.package == "torch"
    assert operand.device_id == -1
    assert operand.shape == tuple(tensor.shape)
    assert operand.strides == tensor.stride()
    assert operand.dtype == numpy_dtype(dtype_name)
    assert operand.ptr == tensor.data_ptr()
    # and back: the adapter creates tensors of the same dtype
    back = operand.adapter.empty((2, 3), operand.dtype, -1, None)
    assert isinstance(back, torch.Tensor) and back.dtype == tensor.dtype and back.device.type == "cpu"


def test_torch_strided_result(rng, torch):
    operand = wrap_operand(randn(rng, 3, 4), "x")
    result = operand.adapter.empty((3, 4), np.float32, -1, None, strides=(1, 3))
    assert result.stride() == (1, 3)


def test_torch_unsupported_dtype(torch):
    with pytest.raises(UnsupportedOperandError, match="^x:.*uint32|^x:"):
        unsupported = torch.uint32 if hasattr(torch, "uint32") else torch.qint8
        wrap_operand(torch.ones(3, dtype=unsupported), "x")


def test_operand_repr_and_size():
    operand = wrap_operand(np.ones((2, 3, 4)), "x")
    assert isinstance(operand, Operand)
    assert operand.size == 24 and operand.ndim == 3
    assert "numpy" in repr(operand)


def test_key_agrees_with_the_view(rng, torch):
    arrays = [rng.standard_normal((4, 6)), rng.standard_normal((4, 6))[:, ::2], randn(rng, 3, 5).t()]
    for array in arrays:
        key = key_function(array, "x")
        assert operand_keys[type(array)] == key  # remembered per type for the hot paths
        operand = wrap_operand(array, "x")
        signature, pointer, device_id = key(array)
        assert pointer == operand.ptr and device_id == operand.device_id == -1
        same_layout = array.copy() if isinstance(array, np.ndarray) and array.flags.c_contiguous else array
        assert key(same_layout)[0] == signature
        hash(signature)
    signature = key_function(arrays[0])(arrays[0])[0]
    assert signature != key_function(arrays[1])(arrays[1])[0]
    assert signature != key_function(arrays[0])(arrays[0].astype(np.float32))[0]
    # one layout in two libraries: two signatures (the results are made in each caller's library)
    assert signature != key_function(torch.from_numpy(arrays[0]))(torch.from_numpy(arrays[0]))[0]


@pytest.mark.parametrize("dtype_name", ["float32", "bfloat16", "complex64"])
def test_host_array_views_torch_cpu_memory(rng, torch, dtype_name):
    from nvmathx._core.tensor import host_array

    tensor = randn(rng, 6, 10, dtype=getattr(torch, dtype_name))[1:, ::3].t()
    view = host_array(wrap_operand(tensor, "x"))
    assert view.shape == tuple(tensor.shape) and view.dtype == numpy_dtype(dtype_name)
    np.testing.assert_array_equal(view.astype(np.complex128), tensor.to(torch.complex128).numpy())
    writeable = host_array(wrap_operand(tensor, "x"), writeable=True)
    writeable[0, 0] = 3
    assert complex(tensor[0, 0]) == 3  # the same memory, not a copy


def test_host_array_of_numpy_and_empty_operands(rng, torch):
    from nvmathx._core.tensor import host_array

    array = rng.standard_normal((4, 5))[::-1, ::2]
    assert host_array(wrap_operand(array, "x")) is array
    assert host_array(wrap_operand(torch.ones(0, 3), "x")).shape == (0, 3)


def test_is_read_only(rng, torch):
    from nvmathx._core.tensor import is_read_only

    array = rng.standard_normal(4)
    assert not is_read_only(wrap_operand(array, "x"))
    array.flags.writeable = False
    assert is_read_only(wrap_operand(array, "x"))
    assert not is_read_only(wrap_operand(torch.ones(3), "x"))


def _complex(torch, rng, shape):
    return torch.from_numpy(rng.standard_normal(shape) + 1j * rng.standard_normal(shape))


@pytest.mark.parametrize("lazy", [lambda x: x.conj(), lambda x: x.mH, lambda x: x._neg_view(),
                                  lambda x: x.conj()._neg_view().mT, lambda x: x.conj().imag])
def test_torch_lazy_views_are_materialised(rng, torch, lazy):
    base = _complex(torch, rng, (4, 3))
    view = lazy(base)
    assert view.is_conj() or view.is_neg()
    expected = view.resolve_conj().resolve_neg().numpy()  # torch's own values of the view
    for keep_conj in (False, True):  # a host operand is materialised either way
        operand = wrap_operand(view, "x", keep_conj=keep_conj)
        assert not operand.conj and not operand.obj.is_conj() and not operand.obj.is_neg()
        np.testing.assert_array_equal(operand.obj.numpy(), expected)
        assert operand.ptr == operand.obj.data_ptr() != base.data_ptr()


def test_torch_keys_carry_the_lazy_bits(rng, torch):
    base = _complex(torch, rng, (4, 3))
    key = key_function(base)
    plain = key(base.mT)[0]
    signatures = {plain, key(base.mH)[0], key(torch._neg_view(base.mT))[0], key(torch._neg_view(base.mH))[0]}
    assert len(signatures) == 4  # same layout, four different values: four plans
    assert key(base.mH)[1] == base.data_ptr()  # the address of the memory the view reads


def test_keep_conj_views_a_device_conjugate_as_its_memory(rng, torch, monkeypatch):
    """On a device (torch CPU memory presented as device 0), keep_conj keeps a conjugate view lazy."""
    monkeypatch.setattr(torch.Tensor, "get_device", lambda self: 0)
    base = _complex(torch, rng, (4, 3))
    operand = wrap_operand(base.mH, "x", keep_conj=True)
    assert operand.conj and operand.ptr == base.data_ptr() and operand.strides == (1, 3)
    assert not wrap_operand(base.mH, "x").conj  # not asked: materialised
    negated = wrap_operand(torch._neg_view(base.mH), "x", keep_conj=True)  # a negative bit: always materialised
    assert not negated.conj and negated.ptr != base.data_ptr()
    np.testing.assert_array_equal(negated.obj.numpy(), -base.numpy().conj().T)
    resolved = resolve_operand(operand, "x")
    assert not resolved.conj
    np.testing.assert_array_equal(resolved.obj.numpy(), base.numpy().conj().T)


def test_torch_result_allocator_makes_the_asked_layout(rng, torch):
    operand = wrap_operand(randn(rng, 3, 4), "x")
    allocate = operand.adapter.result_allocator((2, 5), np.complex64, -1)
    array, pointer = allocate(None)
    assert array.dtype == torch.complex64 and array.shape == (2, 5) and array.stride() == (5, 1)
    assert pointer == array.data_ptr()
    strided, _ = operand.adapter.result_allocator((2, 5), np.float32, -1, strides=(1, 2))(None)
    assert strided.stride() == (1, 2)
    transposed = randn(rng, 5, 4).t()  # results laid out like each call's operand
    like = wrap_operand(transposed, "x")
    allocate = like.adapter.result_allocator((4, 5), np.float32, -1, strides=(1, 4), like=like)
    result, pointer = allocate(None, randn(rng, 5, 4).t())
    assert result.stride() == (1, 4) and result.dtype == torch.float32 and pointer == result.data_ptr()


@pytest.mark.parametrize("dtype_name", ["float32", "complex128", "bfloat16", "float8_e4m3fn"])
def test_host_results_in_the_callers_library(rng, torch, dtype_name):
    values = rng.standard_normal((3, 5)).astype(numpy_dtype(dtype_name))
    assert adapter_for(values).from_host(values) is values
    result = adapter_for(torch.zeros(1)).from_host(values.T)
    assert isinstance(result, torch.Tensor) and result.dtype == getattr(torch, dtype_name)
    assert result.shape == (5, 3)
    if dtype_name in ("bfloat16", "float8_e4m3fn"):  # (numpy of torch's float32 widening, exact)
        np.testing.assert_array_equal(result.float().numpy(), values.T.astype(np.float32))
    else:
        np.testing.assert_array_equal(result.numpy(), values.T)


@pytest.mark.parametrize("dtype_name", ["float64", "complex64", "bfloat16"])
def test_host_results_keep_zero_dimensions(rng, torch, dtype_name):
    """A 0-d result (matmul of two vectors) comes back 0-d from every adapter, never as one element."""
    from nvmathx._core.tensor import Adapter

    value = np.asarray(rng.standard_normal(), dtype=numpy_dtype(dtype_name))
    generic = Adapter()  # the adapter of DLPack producers nvmathx has no module for (jax, ...)
    generic.name = "numpy"
    for adapter in (adapter_for(value), adapter_for(torch.zeros(1)), generic):
        if adapter is generic and dtype_name == "bfloat16":
            continue  # numpy's from_dlpack takes no bfloat16
        result = adapter.from_host(value)
        assert result.shape == () and result.ndim == 0, type(adapter).__name__
        if isinstance(result, torch.Tensor) and not result.is_complex():
            result = result.double()  # (numpy takes no bfloat16 tensor)
        assert complex(np.asarray(result)) == complex(value)
