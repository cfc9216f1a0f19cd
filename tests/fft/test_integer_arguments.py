"""numpy integers are ints: ``np.int64``, ``np.int32``, ``np.uint8`` and 0-d integer arrays are
taken wherever a Python int is (``n``, ``s`` entries, ``axis``, ``axes``, ``workers``,
``ExecutionCPU(num_threads=)``, ``execute(direction=)``, ``FFT(axes=)``), with the result of the plain
int; floats and bools, numpy's included, are refused as Python's are. Array-likes follow numpy and
scipy: lists and tuples are operands of the functions and of the stateful FFT alike."""

import dataclasses

import numpy as np
import pytest
import scipy.fft

import nvmathx.fft as nfft
from helpers.dft import dft_reference, relative_error
from nvmathx import ExecutionCPU, ExecutionCUDA, OptionsError

from ._fake_device import install, to_device, to_host

KINDS = {
    "int": int,
    "np.int64": np.int64,
    "np.int32": np.int32,
    "np.uint8 (non-negative values)": np.uint8,
    "0-d array": lambda value: np.array(value),
}


def _kind(name, value):
    if name.startswith("np.uint8") and value < 0:
        pytest.skip("unsigned")
    return KINDS[name](value)


@pytest.fixture(params=["cpu", "fake-gpu"])
def space(request, monkeypatch):
    nfft.plan_cache.clear()
    if request.param == "fake-gpu":
        install(monkeypatch)
    yield request.param
    nfft.plan_cache.clear()


def _on(space, host):
    return host if space == "cpu" else to_device(host)


def _numpy(space, array):
    return array if space == "cpu" else to_host(array)


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("call", [
    ("fft", {"n": 6}), ("fft", {"n": 12, "axis": 0}), ("ifft", {"axis": -2}), ("rfft", {"n": 7, "axis": 1}),
    ("irfft", {"n": 9}), ("hfft", {"n": 10, "axis": 0}),
], ids=lambda call: f"{call[0]}-{'-'.join(call[1])}")
def test_n_and_axis(space, rng, kind, call):
    name, arguments = call
    host = rng.standard_normal((4, 8)) + (0 if name == "rfft" else 1j * rng.standard_normal((4, 8)))
    given = {key: _kind(kind, value) for key, value in arguments.items()}
    got = getattr(nfft, name)(_on(space, host), **given)
    expected = dft_reference(name, host, arguments.get("n"), arguments.get("axis"))
    assert relative_error(_numpy(space, got), expected) < 1e-12


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("name", ["fftn", "irfftn", "fft2"])
def test_s_and_axes_entries(space, rng, kind, name):
    host = rng.standard_normal((3, 4, 6)) + 1j * rng.standard_normal((3, 4, 6))
    s, axes = (5, 8), (2, 0)
    given_s, given_axes = tuple(_kind(kind, v) for v in s), [_kind(kind, v) for v in axes]
    got = getattr(nfft, name)(_on(space, host), s=given_s, axes=given_axes)
    assert relative_error(_numpy(space, got), dft_reference(name, host, s, axes)) < 1e-12
    as_arrays = getattr(nfft, name)(_on(space, host), s=np.array(s), axes=np.array(axes))  # integer arrays
    assert relative_error(_numpy(space, as_arrays), dft_reference(name, host, s, axes)) < 1e-12


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_single_axis_and_length_as_numpy_scalars(rng, kind):
    host = rng.standard_normal((3, 8)) + 0j
    got = nfft.fftn(host, s=_kind(kind, 5), axes=_kind(kind, 1))
    assert relative_error(got, dft_reference("fftn", host, (5,), (1,))) < 1e-12


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_workers_and_execution_cpu_num_threads(rng, kind):
    host = rng.standard_normal((4, 8)) + 1j * rng.standard_normal((4, 8))
    assert relative_error(nfft.fft(host, workers=_kind(kind, 2)), dft_reference("fft", host)) < 1e-12
    execution = ExecutionCPU(num_threads=_kind(kind, 2))
    assert type(execution.num_threads) is int and execution == ExecutionCPU(2) and hash(execution) == hash(
        ExecutionCPU(2))
    assert type(ExecutionCUDA(device_id=_kind(kind, 0)).device_id) is int
    with nfft.FFT(host, axes=[_kind(kind, 1)], execution=execution) as f:
        f.plan()
        assert f.axes == (1,)
        assert relative_error(f.execute(), dft_reference("fft", host)) < 1e-12


@pytest.mark.parametrize("kind", ["int", "np.int64", "np.int32", "0-d array"])
def test_execute_direction(space, rng, kind):
    host = rng.standard_normal((4, 8)) + 1j * rng.standard_normal((4, 8))
    with nfft.FFT(_on(space, host), axes=[-1]) as f:
        f.plan()
        forward = _numpy(space, f.execute(_kind(kind, -1)))
        inverse = _numpy(space, f.execute(direction=_kind(kind, 1)))
    assert relative_error(forward, dft_reference("fft", host)) < 1e-12
    assert relative_error(inverse, 8 * dft_reference("ifft", host)) < 1e-12


@pytest.mark.parametrize("direction", [np.True_, True, -1.0, np.float64(1.0), np.array(-1.0), np.array([-1])])
def test_bools_and_floats_are_no_direction(rng, direction):
    with nfft.FFT(rng.standard_normal(8) + 0j) as f:
        f.plan()
        with pytest.raises(OptionsError, match="^direction: "):
            f.execute(direction)


@pytest.mark.parametrize("call, argument", [
    (lambda x: nfft.fft(x, n=np.float64(4.0)), "n"),
    (lambda x: nfft.fft(x, axis=np.float32(0.0)), "axis"),
    (lambda x: nfft.fftn(x, s=(np.float64(4.0),), axes=(0,)), "s"),
    (lambda x: nfft.fftn(x, axes=np.array([0.0])), "axes"),
    (lambda x: nfft.fft(x, workers=np.True_), "workers"),
    (lambda x: nfft.fft(x, workers=np.array(2.0)), "workers"),
    (lambda x: nfft.fft(x, n=True), "n"),
    (lambda x: nfft.fft(x, axis=True), "axis"),
    (lambda x: nfft.fftn(x, s=[True]), "s"),
    (lambda x: nfft.fftn(x, s=True, axes=1), "s"),
    (lambda x: nfft.fftn(x, axes=[True]), "axes"),
    (lambda x: nfft.FFT(x, axes=[False, True]), "axes"),
    (lambda x: nfft.FFT(x, execution=ExecutionCPU(num_threads=np.True_)), "execution.num_threads"),
    (lambda x: nfft.FFT(x, execution=ExecutionCPU(num_threads=np.float64(2.0))), "execution.num_threads"),
])
def test_numpy_floats_and_bools_are_refused_as_python_ones(call, argument):
    with pytest.raises(OptionsError) as info:
        call(np.ones((4, 8), complex))
    assert info.value.argument == argument and str(info.value).startswith(f"{argument}: ")


def test_a_float_or_bool_equal_to_an_int_is_refused_after_that_int_was_used(space, rng):
    """The functions remember how they resolved each distinct call: 1.0 and True equal 1 but must not
    find the int's entry."""
    x = _on(space, rng.standard_normal((4, 8)) + 0j)
    for warm in (lambda: nfft.fft(x, axis=-1), lambda: nfft.fft(x, n=1), lambda: nfft.fftn(x, s=(4, 8)),
                 lambda: nfft.fft(x, axis=1), lambda: nfft.fftn(x, s=(1, 8))):
        warm()
    for call, argument in ((lambda: nfft.fft(x, axis=-1.0), "axis"), (lambda: nfft.fft(x, n=np.True_), "n"),
                           (lambda: nfft.fft(x, n=True), "n"), (lambda: nfft.fft(x, axis=True), "axis"),
                           (lambda: nfft.fftn(x, s=(True, 8)), "s"),
                           (lambda: nfft.fft(x, n=np.float64(1.0)), "n"),
                           (lambda: nfft.fftn(x, s=(np.float64(4.0), 8)), "s")):
        with pytest.raises(OptionsError) as info:
            call()
        assert info.value.argument == argument


# -- array-likes --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [[1, 2, 3, 4], [[1.5, 2.0], [0.5, -1.0]], (1j, 2, 3 - 1j), [[True, False]]])
def test_lists_and_tuples_are_operands_of_the_stateful_fft_too(value):
    expected = np.fft.fftn(np.asarray(value))
    assert relative_error(nfft.fftn(value), expected) < 1e-12
    with nfft.FFT(value, options={"fft_type": "C2C"} if np.iscomplexobj(value) else None) as f:
        f.plan()
        result = f.execute()
    assert type(result) is np.ndarray
    if np.iscomplexobj(value):
        assert relative_error(result, expected) < 1e-12
    else:
        assert relative_error(result, scipy.fft.rfftn(np.asarray(value, dtype=float))) < 1e-12


def test_reset_operand_takes_a_list_of_the_same_layout(rng):
    host = rng.standard_normal(8) + 1j * rng.standard_normal(8)
    with nfft.FFT(np.zeros(8, complex)) as f:
        f.plan()
        f.reset_operand(host.tolist())
        assert relative_error(f.execute(), dft_reference("fft", host)) < 1e-12


def test_check_positive_int():
    from nvmathx._core.options import check_positive_int

    for value in (3, np.int64(3), np.uint16(3), np.array(3)):
        result = check_positive_int(value, "n")
        assert result == 3 and type(result) is int
    assert check_positive_int(np.int8(0), "n", allow_zero=True) == 0
    assert check_positive_int(None, "n", allow_none=True) is None
    for value in (0, -1, True, np.True_, 2.0, np.float32(2), "2", None, np.array([2]), np.array(True)):
        with pytest.raises(OptionsError, match="^n: expected an int >= 1"):
            check_positive_int(value, "n")


def test_options_dataclasses_are_hashable_with_numpy_integers():
    assert dataclasses.replace(ExecutionCPU(2), num_threads=np.int64(3)) == ExecutionCPU(3)
    assert nfft.plan_cache.info(np.int64(0)).size >= 0


@pytest.mark.gpu
def test_numpy_integers_on_a_gpu(rng):
    from helpers.torch_cuda import torch_with_cuda

    cuda_torch = torch_with_cuda()
    host = rng.standard_normal((4, 8)) + 1j * rng.standard_normal((4, 8))
    x = cuda_torch.from_numpy(host).cuda()
    got = nfft.fft(x, n=np.int64(6), axis=np.array(0))
    assert relative_error(got.cpu().numpy(), dft_reference("fft", host, 6, 0)) < 1e-12
    got = nfft.irfftn(x, s=np.array([5, 8]), axes=(np.int32(1), 0))
    assert relative_error(got.cpu().numpy(), dft_reference("irfftn", host, (5, 8), (1, 0))) < 1e-12
    with nfft.FFT(x, axes=[np.int64(-1)]) as f:
        f.plan()
        inverse = f.execute(np.int64(1))
    assert relative_error(inverse.cpu().numpy(), 8 * dft_reference("ifft", host)) < 1e-12
