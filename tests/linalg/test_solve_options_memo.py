"""solve()'s keywords merged into DirectSolverOptions once per distinct call, never at the cost of a
check: the memo tells values of different types apart and holds no stale instance."""

import pytest

from nvmathx import OptionsError
from nvmathx.linalg import DirectSolverOptions
from nvmathx.linalg._solver_function import _solve_options


@pytest.mark.parametrize("options", [None, {}, {"check": "none"}, DirectSolverOptions(engine="cusolver")])
def test_the_merged_options_are_those_of_replace(options):
    first = _solve_options(options, "positive definite", True, "conjugate", False)
    again = _solve_options(options, "positive definite", True, "conjugate", False)
    assert first is again
    assert (first.assume_a, first.lower, first.transposed, first.check_finite) == \
        ("positive definite", True, "conjugate", False)
    if isinstance(options, DirectSolverOptions):
        assert first.engine == "cusolver"
    elif options:
        assert first.check == "none"


def test_a_value_equal_to_a_good_one_but_of_another_type_is_still_refused():
    _solve_options(None, None, True, False, True)
    with pytest.raises(OptionsError, match="options.lower"):
        _solve_options(None, None, 1, False, True)  # 1 == True, and hashes alike
    _solve_options({"check": "none"}, None, False, False, True)
    with pytest.raises(OptionsError, match="options.check"):
        _solve_options({"check": "nothing"}, None, False, False, True)


def test_an_instance_is_remembered_by_identity_not_by_a_reused_address():
    made = [DirectSolverOptions(engine=engine) for engine in ("cusolver", "batched")]
    for options in made:
        assert _solve_options(options, None, False, False, True).engine == options.engine
    assert _solve_options(DirectSolverOptions(engine="fused"), None, False, False, True).engine == "fused"


def test_unhashable_values_skip_the_memo():
    class Unhashable(dict):
        __hash__ = None

    with pytest.raises(OptionsError, match="options.logger"):
        _solve_options({"logger": Unhashable()}, None, False, False, True)
