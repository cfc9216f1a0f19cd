"""The stateful FFT on the CPU execution space: results, lifecycle and errors."""

import dataclasses

import numpy as np
import pytest

import nvmathx.fft as nfft
from helpers.dft import relative_error
from nvmathx import ExecutionCPU, InvalidStateError, OperandError, OptionsError


def _complex(shape, rng):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)



def test_c2c_forward_and_unnormalised_inverse(rng):
    x = _complex((4, 6, 8), rng)
    with nfft.FFT(x, axes=(0, 2)) as f:
        f.plan()
        assert relative_error(f.execute(), np.fft.fftn(x, axes=(0, 2))) < 1e-12
        assert relative_error(f.execute("inverse"), np.fft.ifftn(x, axes=(0, 2)) * 32) < 1e-12
        np.testing.assert_array_equal(f.execute(+1), f.execute(direction="inverse"))


def test_r2c_and_c2r_parity(rng):
    x = rng.standard_normal((3, 10))
    with nfft.FFT(x, axes=[1], execution=ExecutionCPU(num_threads=2)) as f:
        f.plan()
        assert f.fft_type == "R2C"
        spectrum = f.execute()
    assert relative_error(spectrum, np.fft.rfft(x, axis=1)) < 1e-12
    for parity, n in (("even", 10), ("odd", 11)):
        c = _complex((3, 6), rng)
        with nfft.FFT(c, axes=[1], options={"fft_type": "C2R", "last_axis_parity": parity}) as f:
            f.plan()
            result = f.execute()
        assert result.shape == (3, n)
        np.testing.assert_allclose(result, np.fft.irfft(c, n, axis=1) * n, rtol=1e-12, atol=1e-12)


def test_inplace_writes_operand(rng):
    x = _complex((8,), rng)
    expected = np.fft.fft(x)
    with nfft.FFT(x, options=nfft.FFTOptions(inplace=True)) as f:
        f.plan()
        result = f.execute()
    assert result is x
    assert relative_error(x, expected) < 1e-12


def test_reset_operand(rng):
    x, y = _complex((4, 8), rng), _complex((4, 8), rng)
    f = nfft.FFT(x)
    f.plan()
    f.reset_operand(y)
    assert relative_error(f.execute(), np.fft.fftn(y)) < 1e-12
    with pytest.raises(OperandError, match="shape"):
        f.reset_operand(_complex((4, 9), rng))
    with pytest.raises(OperandError, match="dtype"):
        f.reset_operand(y.astype(np.complex64))
    with pytest.raises(OperandError, match="strides"):
        f.reset_operand(np.asfortranarray(y))
    f.free()


def test_lifecycle(rng):
    f = nfft.FFT(_complex((8,), rng))
    with pytest.raises(InvalidStateError, match="plan"):
        f.execute()
    f.plan()
    f.plan()  # a second plan() is harmless
    f.free()
    f.free()  # and so is a second free()
    for call in (f.plan, f.execute, lambda: f.reset_operand(np.ones(8, complex)), f.__enter__):
        with pytest.raises(InvalidStateError, match="freed"):
            call()
    assert "freed" in repr(f)


def test_exit_does_not_mask_errors(rng):
    with pytest.raises(KeyError):
        with nfft.FFT(_complex((8,), rng)) as f:
            raise KeyError("user error")
    with pytest.raises(InvalidStateError):
        f.execute()


@pytest.mark.parametrize("kwargs,argument", [
    ({"axes": ()}, "axes"),
    ({"axes": (0, 0)}, "axes"),
    ({"axes": (3,)}, "axes"),
    ({"options": {"fft_type": "X2Y"}}, "options.fft_type"),
    ({"options": {"fft_type": "R2C"}}, "options.fft_type"),
    ({"options": {"inplace": True, "fft_type": "C2R"}}, "options.inplace"),
    ({"options": {"bogus": 1}}, "options"),
    ({"options": {"blocking": False}}, "options.blocking"),
    ({"options": {"memory_resource": object()}}, "options.memory_resource"),
    ({"execution": "tpu"}, "execution"),
])
def test_bad_arguments(kwargs, argument, rng):
    with pytest.raises(OptionsError) as info:
        nfft.FFT(_complex((4, 8), rng), **kwargs)
    assert info.value.argument == argument


def test_bad_direction(rng):
    with nfft.FFT(rng.standard_normal(8)) as f:
        f.plan()
        with pytest.raises(OptionsError, match="direction"):
            f.execute("sideways")
        with pytest.raises(OptionsError, match="R2C"):
            f.execute("inverse")


def test_c2r_needs_complex(rng):
    with pytest.raises(OptionsError, match="C2R"):
        nfft.FFT(rng.standard_normal(8), options={"fft_type": "C2R"})


def test_what_was_planned_is_read_only(rng):
    x = _complex((4, 6), rng)
    original = x.copy()
    options = nfft.FFTOptions(inplace=False)
    with nfft.FFT(x, axes=[1], options=options) as f:
        assert f.options is options
        described = (f.options, f.fft_type, f.axes, f.lengths, f.operand_shape, f.key)
        for name, value in (("options", nfft.FFTOptions(inplace=True)), ("fft_type", "R2C"), ("axes", (0,)),
                            ("lengths", (3,)), ("operand_shape", (4, 3)), ("key", ())):
            with pytest.raises(AttributeError):
                setattr(f, name, value)
        with pytest.raises(dataclasses.FrozenInstanceError):
            f.options.inplace = True
        assert (f.options, f.fft_type, f.axes, f.lengths, f.operand_shape, f.key) == described
        assert described[1:5] == ("C2C", (1,), (6,), (4, 6))
        f.plan()
        assert relative_error(f.execute(), np.fft.fft(x, axis=1)) < 1e-12
    np.testing.assert_array_equal(x, original)


def test_options_given_as_a_dict_become_frozen_options(rng):
    with nfft.FFT(rng.standard_normal(8), options={"fft_type": "R2C"}) as f:
        assert f.options == nfft.FFTOptions(fft_type="R2C")
