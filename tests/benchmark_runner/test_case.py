"""Case declarations: validation and the derived-figure helpers."""

import pytest

from benchmarks import Case, bandwidth, tflops


def _noop_setup():
    return lambda: None


@pytest.mark.parametrize("unit", ["ms", "us_per_call", "s"])
def test_case_accepts_each_unit(unit):
    case = Case(name="ok_case-1.x", unit=unit, setups={"nvmathx": _noop_setup})
    assert case.gpu and case.params == {}


@pytest.mark.parametrize("name", ["", "has space", "slash/name", 3])
def test_case_rejects_bad_names(name):
    with pytest.raises(ValueError, match="name"):
        Case(name=name, unit="ms", setups={"nvmathx": _noop_setup})


def test_case_rejects_unknown_unit():
    with pytest.raises(ValueError, match="unit"):
        Case(name="a", unit="seconds", setups={"nvmathx": _noop_setup})


@pytest.mark.parametrize("setups", [{}, {"nvmathx": 3}])
def test_case_rejects_bad_setups(setups):
    with pytest.raises(ValueError, match="setups"):
        Case(name="a", unit="ms", setups=setups)


def test_bandwidth_from_ms():
    derive = bandwidth(2 * 10**12)
    assert derive.unit == "TB/s"
    assert derive(500.0) == pytest.approx(4.0)
    assert bandwidth(10**9, "GB/s")(1.0) == pytest.approx(1000.0)


def test_tflops_from_ms():
    derive = tflops(2 * 8192**3)
    assert derive.unit == "TFLOP/s"
    assert derive(1.0) == pytest.approx(2 * 8192**3 / 1e9)
