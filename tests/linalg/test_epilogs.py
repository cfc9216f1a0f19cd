"""The epilog table and its reference semantics (what every GPU result is compared with)."""

import enum
import math

import numpy as np
import pytest

from nvmathx import OptionsError
from nvmathx._matmulcore.epilogs import (
    EPILOGS,
    epilog_spec,
    gelu,
    gelu_derivative,
    pack_relu_mask,
    reference_epilog,
    relu_aux_width,
    relu_mask,
)
from nvmathx.linalg import Matmul, MatmulEpilog, matmul


def test_table_covers_every_epilog_once():
    assert set(EPILOGS) == set(MatmulEpilog)
    assert len({spec.lt_code for spec in EPILOGS.values()}) == len(MatmulEpilog)
    # Under the row-major swap, cuBLASLt's A is the user's b.
    assert EPILOGS[MatmulEpilog.BGRADB].lt_code == 256 and EPILOGS[MatmulEpilog.BGRADA].lt_code == 512


def test_static_members_are_the_bindings_table():
    """MatmulEpilog is written out for IDEs and type checkers; the bindings' table holds the codes."""
    from nvmathx._bindings import cublaslt as lt

    table = {e.name: e.value for e in lt.Epilogue if e.name != "DEFAULT"}
    assert {e.name: e.value for e in MatmulEpilog} == table
    assert [e.name for e in MatmulEpilog] == list(table)  # the same order, so listings agree
    assert MatmulEpilog.__module__ == "nvmathx._matmulcore.epilogs"


@pytest.mark.parametrize("epilog, aux_output, aux_input", [
    ("RELU", None, None), ("RELU_AUX_BIAS", "relu_aux", None), ("GELU_AUX", "gelu_aux", None),
    ("DRELU_BGRAD", None, "relu_aux"), ("DGELU", None, "gelu_aux"), ("BGRADA", None, None),
])
def test_members_name_their_aux_arrays(epilog, aux_output, aux_input):
    member = MatmulEpilog[epilog]
    assert (member.aux_output, member.aux_input) == (aux_output, aux_input)
    assert member.aux_output == EPILOGS[member].aux_output and member.aux_input == EPILOGS[member].aux_input


@pytest.mark.parametrize("name", ["gelu_bias", "GELU_BIAS", MatmulEpilog.GELU_BIAS, 36, np.int64(36), np.uint16(36)])
def test_epilog_spellings(name):
    assert epilog_spec(name).epilog is MatmulEpilog.GELU_BIAS


class _OtherCodes(enum.IntEnum):
    RELU = 2  # cuBLASLt's RELU code, in another library's enum
    GELU_BIAS = 36


class _Names(str, enum.Enum):
    RELU = "RELU"


@pytest.mark.parametrize("bad", ["swish", 3, 1.5, True, np.True_, _OtherCodes.RELU, _OtherCodes.GELU_BIAS, _Names.RELU,
                                 enum.Enum("Flag", "RELU").RELU])
def test_unknown_epilog(bad):
    with pytest.raises(OptionsError) as info:
        epilog_spec(bad)
    assert info.value.argument == "epilog"


def test_a_foreign_int_enum_never_passes_as_an_epilog(rng):
    """Its members equal (and hash as) their values: no form may take one for the code, not even
    the function form with a plan of that code in its cache."""
    a, b = rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal((3, 5)).astype(np.float32)
    assert isinstance(matmul(a, b, epilog=2), np.ndarray)  # the plain code is accepted
    for call in (lambda: matmul(a, b, epilog=_OtherCodes.RELU),
                 lambda: matmul(a, b, epilog=_OtherCodes.RELU, execution="cpu"),
                 lambda: Matmul(a, b).plan(epilog=_OtherCodes.RELU)):
        with pytest.raises(OptionsError, match="another enum") as info:
            call()
        assert info.value.argument == "epilog"


def test_gelu_is_the_tanh_form(rng):
    x = rng.standard_normal(1000)
    exact = 0.5 * x * (1 + np.array([math.erf(v / math.sqrt(2)) for v in x]))
    assert np.max(np.abs(gelu(x) - exact)) < 1e-3  # tanh form is within 1e-3 of the erf form
    expected = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    np.testing.assert_allclose(gelu(x), expected, rtol=1e-14)


def test_gelu_derivative_matches_finite_differences(rng):
    x = rng.standard_normal(1000) * 3
    h = 1e-6
    numeric = (gelu(x + h) - gelu(x - h)) / (2 * h)
    np.testing.assert_allclose(gelu_derivative(x), numeric, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("n", [1, 7, 128, 129, 300])
def test_relu_mask_round_trip(rng, n):
    positive = rng.standard_normal((2, 5, n)) > 0
    packed = pack_relu_mask(positive)
    assert packed.dtype == np.uint8 and packed.shape == (2, 5, relu_aux_width(n))
    assert relu_aux_width(n) % 16 == 0
    np.testing.assert_array_equal(relu_mask(packed, n), positive)
    # Bit n % 8 of byte n // 8, least significant first.
    m, col = 3, n - 1
    assert bool(packed[1, m, col // 8] >> (col % 8) & 1) == positive[1, m, col]


def _rand(rng, *shape):
    return rng.standard_normal(shape)


def test_forward_epilogs(rng):
    d, bias = _rand(rng, 2, 4, 6), _rand(rng, 6)
    cases = {
        "RELU": (np.maximum(d, 0), {}), "GELU": (gelu(d), {}), "BIAS": (d + bias, {}),
        "RELU_BIAS": (np.maximum(d + bias, 0), {}), "GELU_BIAS": (gelu(d + bias), {}),
        "GELU_AUX": (gelu(d), {"gelu_aux": d}), "GELU_AUX_BIAS": (gelu(d + bias), {"gelu_aux": d + bias}),
        "RELU_AUX": (np.maximum(d, 0), {"relu_aux": pack_relu_mask(d > 0)}),
        "RELU_AUX_BIAS": (np.maximum(d + bias, 0), {"relu_aux": pack_relu_mask(d + bias > 0)}),
    }
    for name, (expected, expected_aux) in cases.items():
        result, aux = reference_epilog(epilog_spec(name), d, bias=bias)
        np.testing.assert_allclose(result, expected, err_msg=name)
        assert set(aux) == set(expected_aux), name
        for key in aux:
            np.testing.assert_array_equal(aux[key], expected_aux[key])


def test_gradient_epilogs(rng):
    d, z = _rand(rng, 2, 4, 6), _rand(rng, 2, 4, 6)
    a, b = _rand(rng, 2, 4, 3), _rand(rng, 3, 6)
    result, aux = reference_epilog(epilog_spec("DRELU_BGRAD"), d, aux_input=pack_relu_mask(z > 0))
    np.testing.assert_allclose(result, d * (z > 0))
    np.testing.assert_allclose(aux["drelu_bgrad"], (d * (z > 0)).sum(axis=-2))
    result, aux = reference_epilog(epilog_spec("DGELU_BGRAD"), d, aux_input=z)
    np.testing.assert_allclose(result, d * gelu_derivative(z))
    np.testing.assert_allclose(aux["dgelu_bgrad"], result.sum(axis=-2))
    _, aux = reference_epilog(epilog_spec("BGRADA"), d, a=a, b=b)
    np.testing.assert_allclose(aux["bgrada"], a.sum(axis=-1))
    _, aux = reference_epilog(epilog_spec("BGRADB"), d, a=a, b=b)
    np.testing.assert_allclose(aux["bgradb"], np.broadcast_to(b.sum(axis=-2), (2, 6)))
