"""MatmulOptions and MatmulPlanPreferences: frozen dataclasses whose every field is checked when
one is made (dataclasses.replace included), so no bad value reaches planning."""

import dataclasses
import logging

import numpy as np
import pytest

from nvmathx import OptionsError
from nvmathx.linalg import Matmul, MatmulOptions, MatmulPlanPreferences, matmul

A, B = np.ones((4, 3), np.float32), np.ones((3, 5), np.float32)

# Values no field takes as they are, whatever its type (each field's own bad values follow).
class _Stranger:
    """An object of no type any field takes (its repr is stable, so test ids match across workers)."""

    def __repr__(self):
        return "stranger"


STRANGERS = [_Stranger(), [1], {"a": 1}, {1, 2}, slice(1), np.array([1, 2]), b"x", 1j]

BAD_OPTIONS = {
    "compute_type": ["TF32", "32f", 68, np.array(["32F"])],
    "scale_type": ["float8_e4m3fn", "int8", "not a dtype", np.int32],
    "result_type": ["int32", "no such dtype", np.bool_],
    "memory_resource": ["device", 3],
    "workspace_limit": [-1, 1.5, "1", True, np.float32(4), 2**64, np.int64(-5), None],
    "blocking": [False, 1, 1.0, "yes", "AUTO", np.False_, None],
    "logger": ["nvmathx", 1],
    "sm_count_target": [-1, 2.0, True, 2**31, np.int64(-3)],
    "fast_accumulation": [1, 0, "yes", None],
    "result_amax": [1, "no", None],
}

BAD_PREFERENCES = {
    "limit": [0, -1, 1.5, True, np.int64(0), 1025, None],
    "max_waves_count": [-0.5, float("nan"), float("inf"), "1", True, None, np.float64("nan")],
    "reduction_scheme_mask": [-1, 2**32, 1.0, True],
    "numerical_impl_mask": [-1, 2**64, 1.0, np.True_],
    "expand_custom_options": [1, "yes", None],
    "autotune": [1, "yes", None, np.int64(1)],
}


def _cases(table):
    for field, values in table.items():
        for value in values + STRANGERS:
            yield pytest.param(field, value, id=f"{field}={value!r}"[:60])


@pytest.mark.parametrize("field, value", _cases(BAD_OPTIONS))
def test_every_options_field_is_checked(field, value):
    _assert_refused(MatmulOptions, "options", field, value)


@pytest.mark.parametrize("field, value", _cases(BAD_PREFERENCES))
def test_every_preferences_field_is_checked(field, value):
    _assert_refused(MatmulPlanPreferences, "preferences", field, value)


def _assert_refused(cls, prefix, field, value):
    for make in (lambda: cls(**{field: value}), lambda: dataclasses.replace(cls(), **{field: value})):
        with pytest.raises(OptionsError) as info:
            make()
        assert info.value.argument == f"{prefix}.{field}" and str(info.value).startswith(f"{prefix}.{field}: ")
    keyword = "options" if cls is MatmulOptions else "preferences"
    with pytest.raises(OptionsError) as info:  # as a dict, in both forms
        matmul(A, B, **{keyword: {field: value}})
    assert info.value.argument == f"{prefix}.{field}"
    with pytest.raises(OptionsError):
        if cls is MatmulOptions:
            Matmul(A, B, options={field: value})
        else:
            Matmul(A, B).plan(preferences={field: value})


def test_every_field_has_bad_values_listed():
    assert set(BAD_OPTIONS) == {field.name for field in dataclasses.fields(MatmulOptions)}
    assert set(BAD_PREFERENCES) == {field.name for field in dataclasses.fields(MatmulPlanPreferences)}


def test_frozen_and_docstrings_say_how_to_change_them():
    options = MatmulOptions()
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.workspace_limit = 0
    for cls in (MatmulOptions, MatmulPlanPreferences):
        assert "Frozen" in cls.__doc__ and "dataclasses.replace" in cls.__doc__


def test_numpy_numbers_are_taken_and_stored_as_python_ones():
    options = MatmulOptions(workspace_limit=np.int64(1 << 20), sm_count_target=np.uint8(8), blocking=np.True_,
                            fast_accumulation=np.False_, result_amax=np.bool_(False), scale_type=np.float32,
                            result_type=np.dtype("float32"))
    assert (options.workspace_limit, options.sm_count_target) == (1 << 20, 8)
    assert type(options.workspace_limit) is int and type(options.sm_count_target) is int
    assert options.blocking is True and options.fast_accumulation is False and options.result_amax is False
    assert (options.scale_type, options.result_type) == ("float32", "float32")
    assert options == MatmulOptions(workspace_limit=1 << 20, sm_count_target=8, blocking=True, scale_type="float32",
                                    result_type="float32")
    preferences = MatmulPlanPreferences(limit=np.int32(4), max_waves_count=np.float32(1.5),
                                        reduction_scheme_mask=np.uint32(3), numerical_impl_mask=np.int64(2**40),
                                        expand_custom_options=np.False_, autotune=np.bool_(False))
    assert preferences == MatmulPlanPreferences(limit=4, max_waves_count=1.5, reduction_scheme_mask=3,
                                                numerical_impl_mask=2**40)
    assert type(preferences.limit) is int and type(preferences.max_waves_count) is float
    assert MatmulPlanPreferences(max_waves_count=2).max_waves_count == 2.0
    largest = MatmulPlanPreferences(limit=1024, reduction_scheme_mask=2**32 - 1, numerical_impl_mask=2**64 - 1)
    assert largest.limit == 1024
    assert MatmulOptions(workspace_limit=2**64 - 1, sm_count_target=2**31 - 1).sm_count_target == 2**31 - 1


def test_replace_checks_again_and_keeps_the_rest():
    options = MatmulOptions(workspace_limit=1024, logger=logging.getLogger("x"))
    changed = dataclasses.replace(options, sm_count_target=np.int16(4))
    assert changed.sm_count_target == 4 and changed.workspace_limit == 1024 and changed.logger is options.logger
    with pytest.raises(OptionsError, match=r"^options\.workspace_limit: "):
        dataclasses.replace(options, workspace_limit=-1)


def test_options_with_numpy_numbers_run_in_both_forms(rng):
    a, b = rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal((3, 5)).astype(np.float32)
    options = {"workspace_limit": np.int64(1 << 20), "sm_count_target": np.int32(0)}
    preferences = {"limit": np.int64(2), "max_waves_count": np.float32(0)}
    expected = a.astype(np.float64) @ b
    np.testing.assert_allclose(matmul(a, b, options=options, preferences=preferences), expected, rtol=1e-5)
    with Matmul(a, b, options=options) as mm:
        mm.plan(preferences=preferences)
        assert mm.autotune(iterations=np.int64(3)) == []
        np.testing.assert_allclose(mm.execute(), expected, rtol=1e-5)


def test_scale_type_must_match_the_operands_kind():
    with pytest.raises(OptionsError, match="complex scale type") as info:
        matmul(A.astype(np.complex64), B.astype(np.complex64), options={"scale_type": "float32"})
    assert info.value.argument == "options.scale_type"
    with pytest.raises(OptionsError, match="real scale type"):
        Matmul(A, B, options={"scale_type": "complex64"})
