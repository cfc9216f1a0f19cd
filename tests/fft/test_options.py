"""FFTOptions, direction and norm arguments, and the pure argument normalisation."""

import dataclasses
import math

import pytest

from nvmathx import OptionsError
from nvmathx._fftcore.normalize import check_norm, normalize_direction, scale_factor, swap_direction
from nvmathx.fft import FFTOptions
from nvmathx.fft._arguments import normalize_axes, one_axis, shape_and_axes


def test_options_defaults_and_validation():
    options = FFTOptions()
    fields = (options.fft_type, options.inplace, options.last_axis_parity, options.blocking)
    assert fields == (None, False, "even", "auto")
    for field, value in (("fft_type", "R2R"), ("last_axis_parity", "odd-ish"), ("blocking", "sometimes"),
                         ("logger", "stdout")):
        with pytest.raises(OptionsError) as info:
            FFTOptions(**{field: value})
        assert info.value.argument == f"options.{field}"


def test_directions():
    assert normalize_direction(None, "C2C") == -1
    assert normalize_direction(None, "C2R") == +1
    assert normalize_direction("Inverse", "C2C") == +1
    assert normalize_direction(-1, "R2C") == -1
    for bad in ("up", 0, 2, True):
        with pytest.raises(OptionsError):
            normalize_direction(bad, "C2C")


def test_norm_scales():
    assert check_norm(None) == "backward"
    with pytest.raises(OptionsError):
        check_norm("unitary")
    assert scale_factor("backward", -1, (4, 8)) == 1.0
    assert scale_factor("backward", +1, (4, 8)) == 1 / 32
    assert scale_factor("forward", -1, (4, 8)) == 1 / 32
    assert scale_factor("forward", +1, (4, 8)) == 1.0
    assert scale_factor("ortho", +1, (4, 8)) == pytest.approx(1 / math.sqrt(32))
    assert [swap_direction(n) for n in ("backward", "ortho", "forward")] == ["forward", "ortho", "backward"]


def test_axes_and_lengths():
    assert normalize_axes(3, (-1, 0)) == (2, 0)
    assert normalize_axes(3, 1) == (1,)
    assert shape_and_axes((2, 3, 4), None, None) == ((2, 3, 4), (0, 1, 2))
    assert shape_and_axes((2, 3, 4), (5, 6), None) == ((5, 6), (1, 2))
    assert shape_and_axes((2, 3, 4), (5, -1), (0, 2)) == ((5, 4), (0, 2))
    assert one_axis((2, 3), None, 0) == ((2,), (0,))
    assert one_axis((2, 3), 7, -1) == ((7,), (1,))
    for call, argument in ((lambda: normalize_axes(2, []), "axes"), (lambda: normalize_axes(2, "ab"), "axes"),
                           (lambda: shape_and_axes((2, 3), (1, 2, 3), None), "s"),
                           (lambda: one_axis((), None, -1), "x"), (lambda: one_axis((4,), 0, -1), "n")):
        with pytest.raises(OptionsError) as info:
            call()
        assert info.value.argument == argument


def test_options_are_frozen_and_replace_checks_again():
    options = FFTOptions(fft_type="C2R")
    for field, value in (("fft_type", "X2Y"), ("inplace", True), ("last_axis_parity", "odd"), ("blocking", False)):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(options, field, value)
    assert options == FFTOptions(fft_type="C2R")
    assert dataclasses.replace(options, last_axis_parity="odd").last_axis_parity == "odd"
    for field, value in (("fft_type", "X2Y"), ("inplace", "yes"), ("last_axis_parity", 1), ("blocking", False)):
        with pytest.raises(OptionsError) as info:
            dataclasses.replace(options, **{field: value})
        assert info.value.argument == f"options.{field}"
