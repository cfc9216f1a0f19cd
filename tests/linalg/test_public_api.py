"""The public surface of nvmathx.linalg is pinned: every listed name resolves and is documented."""

import nvmathx.linalg as linalg

PUBLIC = {
    "Matmul", "matmul", "MatmulOptions", "MatmulPlanPreferences", "MatmulEpilog", "MatmulAlgorithm", "plan_key",
    "plan_cache", "relu_mask", "DirectSolver", "DirectSolverOptions", "solve", "direct_solver", "solve_plan_key",
    "choose_solver_engine",
}


def test_all_is_pinned():
    assert set(linalg.__all__) == PUBLIC


def test_names_resolve_and_have_docstrings():
    for name in linalg.__all__:
        value = getattr(linalg, name)
        assert (value.__doc__ or "").strip(), f"nvmathx.linalg.{name} has no docstring"


def test_matmul_plan_key_is_a_deprecated_spelling_of_plan_key():
    import pytest

    message = r"nvmathx\.linalg\.matmul_plan_key is deprecated; use nvmathx\.linalg\.plan_key"
    with pytest.warns(DeprecationWarning, match=message):
        old = linalg.matmul_plan_key
    assert old is linalg.plan_key
    assert "matmul_plan_key" not in linalg.__all__ and "matmul_plan_key" not in dir(linalg)
    with pytest.warns(DeprecationWarning):
        from nvmathx.linalg import matmul_plan_key  # noqa: F401  (the import form too)


def test_plan_cache_is_named_after_its_area():
    """One rule: nvmathx.<area>.plan_cache, named "nvmathx.<area>", keyed by nvmathx.<area>.plan_key."""
    import nvmathx.fft

    assert linalg.plan_cache.name == "nvmathx.linalg"
    assert nvmathx.fft.plan_cache.name == "nvmathx.fft"


def test_public_methods_are_documented():
    for name in ("plan", "autotune", "execute", "reset_operands", "free", "algorithms"):
        assert (getattr(linalg.Matmul, name).__doc__ or "").strip(), name


def test_import_loads_no_gpu_library():
    import subprocess
    import sys

    code = (
        "import sys, nvmathx.linalg; "
        "bad = [m for m in ('torch', 'cupy', 'jax', 'numba', 'cuda.core') if m in sys.modules]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code], capture_output=True).returncode == 0
