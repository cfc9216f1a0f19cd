"""Bad input raises a typed error whose message names the argument (CPU execution space)."""

import numpy as np
import pytest

from nvmathx import InvalidStateError, OperandError, OptionsError, UnsupportedOperandError
from nvmathx.linalg import Matmul, MatmulOptions, MatmulPlanPreferences, matmul

# Every call below fails before any arithmetic: the values do not matter, only shapes and dtypes.
A, B, C = (np.linspace(-1, 1, n * m, dtype=np.float32).reshape(n, m) for n, m in ((4, 3), (3, 5), (4, 5)))
BIAS = np.linspace(-1, 1, 5, dtype=np.float32)

BAD_CALLS = [
    ("a", OperandError, lambda: matmul(np.ones((), np.float32), B)),
    ("b", OperandError, lambda: matmul(A, np.ones((4, 5), np.float32))),
    ("b", OperandError, lambda: matmul(np.ones((2, 4, 3), np.float32), np.ones((3, 3, 5), np.float32))),
    ("a", UnsupportedOperandError, lambda: matmul(A.astype(np.int32), B)),
    ("a", UnsupportedOperandError, lambda: matmul("not an array", B)),
    ("b", OperandError, lambda: matmul(A, B.astype(np.float64))),
    ("c", OperandError, lambda: matmul(A, B, np.ones((4, 4), np.float32), beta=1)),
    ("c", OperandError, lambda: matmul(A, B, C.astype(np.float64), beta=1)),
    ("beta", OptionsError, lambda: matmul(A, B, beta=1.0)),
    ("alpha", OptionsError, lambda: matmul(A, B, alpha="2")),
    ("alpha", OptionsError, lambda: matmul(A, B, alpha=1j)),
    ("epilog", OptionsError, lambda: matmul(A, B, epilog="SWISH")),
    ("epilog_inputs", OperandError, lambda: matmul(A, B, epilog="BIAS")),
    ("epilog_inputs", OptionsError, lambda: matmul(A, B, epilog="RELU", epilog_inputs={"bias": BIAS})),
    (
        "epilog_inputs['bias']",
        OperandError,
        lambda: matmul(A, B, epilog="BIAS", epilog_inputs={"bias": np.ones(4, np.float32)}),
    ),
    (
        "epilog_inputs['bias']",
        OperandError,
        lambda: matmul(A, B, epilog="BIAS", epilog_inputs={"bias": BIAS.astype(np.float64)}),
    ),
    ("epilog_inputs['bias']", OperandError, lambda: matmul(A, B, C, beta=1, epilog="BIAS", epilog_inputs={"bias": C})),
    (
        "epilog_inputs['relu_aux']",
        OperandError,
        lambda: matmul(A, B, epilog="DRELU", epilog_inputs={"relu_aux": np.zeros((4, 16), np.float32)}),
    ),
    (
        "epilog_inputs['gelu_aux']",
        OperandError,
        lambda: matmul(A, B, epilog="DGELU", epilog_inputs={"gelu_aux": np.zeros((4, 6), np.float32)}),
    ),
    ("epilog_inputs", OptionsError, lambda: matmul(A, B, epilog="BIAS", epilog_inputs=[BIAS])),
    ("epilog", OptionsError, lambda: matmul(A.astype(np.complex64), B.astype(np.complex64), epilog="RELU")),
    ("options", OptionsError, lambda: matmul(A, B, options=42)),
    ("options", OptionsError, lambda: matmul(A, B, options={"compute": "32F"})),
    ("options.compute_type", OptionsError, lambda: matmul(A, B, options={"compute_type": "TF32"})),
    ("options.result_type", OptionsError, lambda: matmul(A, B, options={"result_type": "float16"})),
    ("options.blocking", OptionsError, lambda: MatmulOptions(blocking=False)),
    ("options.fast_accumulation", OptionsError, lambda: matmul(A, B, options={"fast_accumulation": True})),
    ("preferences.limit", OptionsError, lambda: MatmulPlanPreferences(limit=0)),
    ("preferences.expand_custom_options", OptionsError, lambda: MatmulPlanPreferences(expand_custom_options="yes")),
    ("execution", OptionsError, lambda: matmul(A, B, execution="tpu")),
    ("quantization_scales", OptionsError, lambda: matmul(A, B, quantization_scales={"a": 2.0})),
    ("stream", OptionsError, lambda: Matmul(A, B, stream=0)),
]


@pytest.mark.parametrize(
    "argument, error, call", BAD_CALLS, ids=[f"{i}-{arg}" for i, (arg, _, _) in enumerate(BAD_CALLS)]
)
def test_bad_input_names_the_argument(argument, error, call):
    with pytest.raises(error) as info:
        call()
    assert info.value.argument == argument
    assert str(info.value).startswith(argument)


def test_float8_rules():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    e5 = np.ones((16, 16), ml_dtypes.float8_e5m2)
    with pytest.raises(OperandError, match="e5m2") as info:
        matmul(e5, e5)
    assert info.value.argument == "b"
    e4 = np.ones((16, 16), ml_dtypes.float8_e4m3fn)
    with pytest.raises(OptionsError) as info:
        matmul(e4, e4.T, quantization_scales={"d": 2.0}, options={"result_type": "bfloat16"})
    assert info.value.argument == "quantization_scales"
    with pytest.raises(OptionsError) as info:
        matmul(e4, e4.T, epilog="GELU_AUX")
    assert info.value.argument == "epilog"


def test_reset_operands_checks_the_new_operand():
    mm = Matmul(A, B, C, beta=1.0)
    mm.plan()
    for kwargs, argument in ((dict(a=np.ones((5, 3), np.float32)), "a"), (dict(b=B.astype(np.float64)), "b"),
                             (dict(c=np.asfortranarray(C)), "c"), (dict(epilog_inputs={"bias": BIAS}), "epilog_inputs"),
                             (dict(beta="x"), "beta")):
        with pytest.raises((OperandError, OptionsError)) as info:
            mm.reset_operands(**kwargs)
        assert info.value.argument == argument
    mm.free()
    mm_no_c = Matmul(A, B)
    with pytest.raises(OperandError) as info:
        mm_no_c.reset_operands(c=C)
    assert info.value.argument == "c"


def test_lifecycle_errors():
    mm = Matmul(A, B)
    with pytest.raises(InvalidStateError, match="plan"):
        mm.execute()
    mm.plan()
    mm.free()
    mm.free()  # twice is fine
    for call in (mm.execute, mm.plan, mm.autotune, lambda: mm.reset_operands(a=A), lambda: mm.algorithms, mm.__enter__):
        with pytest.raises(InvalidStateError, match="freed"):
            call()


def test_context_manager_frees_and_keeps_user_error():
    with pytest.raises(ZeroDivisionError):
        with Matmul(A, B) as mm:
            1 / 0
    with pytest.raises(InvalidStateError):
        mm.execute()
