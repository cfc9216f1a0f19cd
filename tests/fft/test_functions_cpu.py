"""The scipy.fft functions on the CPU: against numpy.fft, scipy.fft and a naive DFT."""

import numpy as np
import pytest
import scipy.fft

import nvmathx.fft as nfft
from helpers.dft import dft_reference, relative_error
from nvmathx import OperandError, OptionsError

C2C_1D = ["fft", "ifft"]
ALL_1D = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
ALL_ND = ["fft2", "ifft2", "fftn", "ifftn", "rfft2", "irfft2", "rfftn", "irfftn", "hfft2", "ihfft2", "hfftn", "ihfftn"]
NORMS = [None, "backward", "ortho", "forward"]
REAL_INPUT = {"rfft", "ihfft", "rfft2", "rfftn", "ihfft2", "ihfftn"}


def _operand(name, shape, rng):
    x = rng.standard_normal(shape)
    return x if name in REAL_INPUT else x + 1j * rng.standard_normal(shape)


def naive_dft(x, inverse=False):
    n = x.shape[-1]
    k = np.arange(n)
    sign = 1 if inverse else -1
    matrix = np.exp(sign * 2j * np.pi * np.outer(k, k) / n)
    return x @ matrix.T


@pytest.mark.parametrize("name", ALL_1D)
@pytest.mark.parametrize("norm", NORMS)
def test_one_dimensional_against_scipy(rng, name, norm):
    x = _operand(name, (3, 10), rng)
    for n in (None, 7, 16):
        for axis in (-1, 0):
            expected = getattr(scipy.fft, name)(x, n=n, axis=axis, norm=norm)
            got = getattr(nfft, name)(x, n=n, axis=axis, norm=norm)
            np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ALL_ND)
@pytest.mark.parametrize("norm", NORMS)
def test_n_dimensional_against_scipy(rng, name, norm):
    x = _operand(name, (4, 6, 8), rng)
    cases = [{}, {"s": (5, 8)}, {"axes": (0, 2)}, {"s": (3, 4), "axes": (2, 0)}]
    if name.endswith("n"):
        cases += [{"axes": (1,)}, {"s": (3, 5, 6)}]
    for kwargs in cases:
        expected = getattr(scipy.fft, name)(x, norm=norm, **kwargs)
        got = getattr(nfft, name)(x, norm=norm, **kwargs)
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
        if not kwargs and hasattr(np.fft, name):  # the numpy spelling agrees too
            np.testing.assert_allclose(got, getattr(np.fft, name)(x, norm=norm), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("n", [1, 2, 4, 8, 16, 64, 3, 5, 7, 11, 13, 97])
@pytest.mark.parametrize("norm", NORMS)
def test_naive_dft(rng, n, norm):
    x = rng.standard_normal((2, n)) + 1j * rng.standard_normal((2, n))
    forward_scale = {None: 1, "backward": 1, "ortho": 1 / np.sqrt(n), "forward": 1 / n}[norm]
    inverse_scale = {None: 1 / n, "backward": 1 / n, "ortho": 1 / np.sqrt(n), "forward": 1}[norm]
    np.testing.assert_allclose(nfft.fft(x, norm=norm), forward_scale * naive_dft(x), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(nfft.ifft(x, norm=norm), inverse_scale * naive_dft(x, inverse=True), rtol=1e-10,
                               atol=1e-10)
    real = x.real.copy()
    np.testing.assert_allclose(nfft.rfft(real, norm=norm), forward_scale * naive_dft(real)[:, : n // 2 + 1],
                               rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("n", [1, 2, 5, 8, 17])
def test_round_trips(rng, norm, n):
    x = rng.standard_normal((3, n)) + 1j * rng.standard_normal((3, n))
    np.testing.assert_allclose(nfft.ifft(nfft.fft(x, norm=norm), norm=norm), x, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(nfft.ifftn(nfft.fftn(x, norm=norm), norm=norm), x, rtol=1e-12, atol=1e-12)
    real = x.real.copy()
    np.testing.assert_allclose(nfft.irfft(nfft.rfft(real, norm=norm), n, norm=norm), real, rtol=1e-12, atol=1e-12)
    # hfft reads x as the first half of a Hermitian spectrum (x[0] real: its imaginary part is
    # dropped) and ihfft recovers that half, padded with one zero to 2 * n // 2 + 1 points.
    hermitian = np.concatenate([x, np.zeros((3, 1))], axis=1)
    hermitian[:, 0] = hermitian[:, 0].real
    np.testing.assert_allclose(nfft.ihfft(nfft.hfft(x, 2 * n, norm=norm), norm=norm), hermitian, rtol=1e-12,
                               atol=1e-12)
    np.testing.assert_allclose(nfft.hfft(x, 2 * n, norm=norm), dft_reference("hfft", x, 2 * n, norm=norm), rtol=1e-12,
                               atol=1e-12)
    # Parseval with the orthonormal scale
    if norm == "ortho":
        np.testing.assert_allclose(np.linalg.norm(nfft.fft(x, norm=norm)), np.linalg.norm(x), rtol=1e-12)


def test_lists_and_workers():
    np.testing.assert_allclose(nfft.fft([1, 2, 3, 4], workers=2), np.fft.fft([1, 2, 3, 4]))


def test_float32_keeps_single_precision(rng):
    x = rng.standard_normal(16).astype(np.float32)
    assert nfft.fft(x).dtype == np.complex64
    assert nfft.rfft(x).dtype == np.complex64


def test_overwrite_x_is_accepted_and_input_intact_by_default(rng):
    x = rng.standard_normal((4, 5)) + 1j
    copy = x.copy()
    nfft.irfft(x)
    np.testing.assert_array_equal(x, copy)
    nfft.fft(x, overwrite_x=True)


# -- bad inputs: typed errors naming the argument -------------------------------------------------


@pytest.mark.parametrize("call,argument", [
    (lambda x: nfft.irfftn(x, axes=()), "axes"),
    (lambda x: nfft.fftn(x, axes=(0, 0)), "axes"),
    (lambda x: nfft.fftn(x, axes=(0, -2)), "axes"),
    (lambda x: nfft.fft2(x, axes=(5, 0)), "axes"),
    (lambda x: nfft.fft(x, axis=2), "axis"),
    (lambda x: nfft.fft(x, n=0), "n"),
    (lambda x: nfft.fft(x, n=-3), "n"),
    (lambda x: nfft.fftn(x, s=(0, 4)), "s"),
    (lambda x: nfft.fftn(x, s=(4, 4), axes=(0,)), "s"),
    (lambda x: nfft.fft(x, norm="bogus"), "norm"),
    (lambda x: nfft.fft(x, n=2.5), "n"),
    (lambda x: nfft.irfft(x[:, :1]), "n"),
])
def test_bad_arguments(call, argument):
    x = np.ones((4, 6), complex)
    with pytest.raises(OptionsError) as info:
        call(x)
    assert info.value.argument == argument
    assert argument in str(info.value)
    assert isinstance(info.value, ValueError)


def test_zero_length_axis_rejected():
    with pytest.raises(OptionsError):
        nfft.fft(np.ones((3, 0)))


def test_not_an_array():
    from nvmathx import UnsupportedOperandError

    with pytest.raises(UnsupportedOperandError) as info:
        nfft.fft(object())
    assert info.value.argument == "x"


def test_mismatched_plan():
    x = np.ones((4, 8), complex)
    with nfft.FFT(np.ones((4, 4), complex)) as plan:
        plan.plan()
        with pytest.raises(OperandError) as info:
            nfft.fft(x, plan=plan)
        assert info.value.argument == "plan"
    with pytest.raises(OptionsError) as info:
        nfft.fft(x, plan="not a plan")
    assert info.value.argument == "plan"


# -- overwrite_x on any host array --------------------------------------------------------------------------

HOST_KINDS = ["numpy", "numpy read-only", "numpy broadcast", "torch", "torch conj view", "torch expanded row",
              "torch column slice", "torch requiring grad"]


def _values_of(array):
    """A numpy copy of what a host array holds (a torch tensor's lazy bits and autograd left out)."""
    if hasattr(array, "resolve_conj"):
        return array.detach().resolve_conj().numpy().copy()
    return np.array(array)


def _host_operand(kind, values):
    """(array of ``kind`` holding ``values``, the memory whose values must not change when it may
    not be written)."""
    if kind.startswith("numpy"):
        if kind == "numpy read-only":
            values = values.copy()
            values.flags.writeable = False
        elif kind == "numpy broadcast":
            values = np.broadcast_to(values[:1], values.shape)
        return values, (values if kind != "numpy" else None)
    torch = pytest.importorskip("torch")
    if kind == "torch conj view":
        base = torch.from_numpy(np.conj(values))
        return base.conj(), base
    if kind == "torch expanded row":
        base = torch.from_numpy(values[:1].copy())
        return base.expand(*values.shape), base
    if kind == "torch column slice":
        base = torch.from_numpy(np.repeat(values, 2, axis=-1))
        return base[:, ::2], None  # writeable, strided: may be overwritten
    if kind == "torch requiring grad":  # autograd would not see a write
        base = torch.from_numpy(values.copy()).requires_grad_()
        return base, base
    return torch.from_numpy(values.copy()), None


@pytest.mark.parametrize("name", ALL_1D + ALL_ND)
@pytest.mark.parametrize("kind", HOST_KINDS)
def test_overwrite_x_takes_any_host_array(rng, name, kind):
    """overwrite_x=True permits writing x: honoured in writeable memory (a torch tensor's included),
    ignored where the memory is read-only, shared between elements or not x's values (a lazy view),
    never an error, and the result is right either way."""
    values = _operand(name, (4, 6), rng)
    if kind == "torch conj view" and name in REAL_INPUT:
        pytest.skip("torch has no conjugate view of a real tensor")
    x, kept = _host_operand(kind, values)
    values = _values_of(x)
    before = None if kept is None else _values_of(kept)
    result = getattr(nfft, name)(x, overwrite_x=True)
    assert type(result) is type(x)
    assert relative_error(_values_of(result), dft_reference(name, values)) < 1e-12
    if kept is not None:
        np.testing.assert_array_equal(_values_of(kept), before)


def test_overwrite_x_result_in_a_torch_tensor_stays_valid(rng):
    """A result computed in a torch tensor's memory is that tensor (a numpy view of its memory would
    not keep it alive)."""
    torch = pytest.importorskip("torch")
    values = rng.standard_normal((4, 6)) + 1j * rng.standard_normal((4, 6))
    x = torch.from_numpy(values.copy())
    result = nfft.fft(x, overwrite_x=True)
    assert isinstance(result, torch.Tensor) and (result is x or result.data_ptr() != x.data_ptr())
    del x
    assert relative_error(result.numpy(), dft_reference("fft", values)) < 1e-12


# -- sizes past the host's memory ---------------------------------------------------------------------------


def test_result_bytes_of_each_transform_type():
    from nvmathx._fftcore.layout import C2C, C2R, R2C
    from nvmathx.fft._sizes import result_bytes

    assert result_bytes(C2C, (4, 8), np.complex128, (1,), (2**40,)) == 4 * 2**40 * 16
    assert result_bytes(C2C, (4, 8), np.float32, (0, 1), (3, 5)) == 15 * 8  # complex64
    assert result_bytes(R2C, (4, 8), np.float64, (1,), (10,)) == 4 * 6 * 16  # n // 2 + 1 complex values
    assert result_bytes(C2R, (4, 8), np.complex64, (1,), (10,)) == 4 * 10 * 4  # real float32
    assert result_bytes(C2C, (3,), np.int64, (0,), (2**70,)) == 2**70 * 16  # no overflow


def test_check_result_fits():
    from nvmathx.fft._sizes import check_result_fits, host_memory_bytes

    memory = host_memory_bytes()
    assert memory is None or memory > 2**20
    check_result_fits(100, 100, "n")
    check_result_fits(2**80, None, "n")  # no limit known
    with pytest.raises(OptionsError, match=r"^s: asks for a result of 101 bytes, more than this machine's 100 "):
        check_result_fits(101, 100, "s")


@pytest.mark.parametrize("space", ["cpu", "fake-gpu"])
@pytest.mark.parametrize("name", ALL_1D + ALL_ND)
def test_sizes_past_memory_name_n_or_s_and_the_bytes(rng, name, space, monkeypatch):
    """On the CPU against the machine's memory, on the GPU code path (the host stand-in of
    ``_fake_device.py``) against the GPU's."""
    from nvmathx.fft._sizes import host_memory_bytes

    x = _operand(name, (4, 6), rng)
    if space == "fake-gpu":
        from ._fake_device import install, to_device

        install(monkeypatch)
        x = to_device(x)
        nfft.plan_cache.clear()
    elif host_memory_bytes() is None:
        pytest.skip("this platform does not report its memory")
    family = name.rstrip("2n") or name  # fft, ifft, rfft, irfft, hfft, ihfft
    if name in ALL_1D:  # (4, 6) -> (4, 2**40)
        argument, lengths, extents = "n", 2**40, [4, 2**40]
    else:  # (4, 6) -> (2**20, 2**20)
        argument, lengths, extents = "s", [2**20] * 2, [2**20, 2**20]
    if family in ("rfft", "ihfft"):  # complex results of n // 2 + 1 values on the last axis
        extents[-1] = extents[-1] // 2 + 1
    itemsize = 8 if family in ("irfft", "hfft") else 16  # real or complex float64 results
    with pytest.raises(OptionsError) as info:
        getattr(nfft, name)(x, **{argument: lengths})
    where = "this machine's" if space == "cpu" else "GPU 0's"
    assert str(info.value).startswith(f"{argument}: asks for a result of {extents[0] * extents[1] * itemsize} bytes, "
                                      f"more than {where} ")


def test_running_out_of_memory_is_typed(rng, monkeypatch):
    """A result that fits the machine but not its free memory: scipy's MemoryError comes back typed."""
    def out_of_memory(*args, **kwargs):
        raise MemoryError("Unable to allocate")

    monkeypatch.setattr(scipy.fft, "rfftn", out_of_memory)
    with pytest.raises(OptionsError, match=r"^s: asks for more memory than is free: the result alone needs 1040 "):
        nfft.rfftn(rng.standard_normal((4, 6)), s=(5, 24))


def test_functions_take_execution_and_stream_as_matmul_does(rng):
    """``execution="cpu"`` (or an ExecutionCPU, whose ``num_threads`` become ``workers``) runs as the
    default does; a stream with CPU execution is refused, naming ``stream``."""
    from nvmathx import ExecutionCPU

    x = rng.standard_normal((4, 6)) + 1j * rng.standard_normal((4, 6))
    expected = np.fft.fftn(x, norm="forward")
    np.testing.assert_allclose(nfft.fftn(x, norm="forward", execution="cpu"), expected, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(nfft.fftn(x, norm="forward", execution=ExecutionCPU(num_threads=2)), expected,
                               rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(nfft.ihfft(x.real.tolist(), execution="cpu"), np.fft.ihfft(x.real),
                               rtol=1e-12, atol=1e-14)
    for call in (lambda: nfft.fft(x, stream=0), lambda: nfft.fft(x, execution="cpu", stream=0)):
        with pytest.raises(OptionsError, match="^stream"):
            call()
    with pytest.raises(OptionsError, match="^execution"):
        nfft.fft(x, execution="tpu")
