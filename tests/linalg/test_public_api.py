"""The public surface of nvmathx.linalg is pinned: every listed name resolves and is documented."""

import nvmathx.linalg as linalg

PUBLIC = {
    "Matmul", "matmul", "MatmulOptions", "MatmulPlanPreferences", "MatmulEpilog", "MatmulAlgorithm", "matmul_plan_key",
    "plan_cache", "relu_mask",
}


def test_all_is_pinned():
    assert set(linalg.__all__) == PUBLIC


def test_names_resolve_and_have_docstrings():
    for name in linalg.__all__:
        value = getattr(linalg, name)
        assert (value.__doc__ or "").strip(), f"nvmathx.linalg.{name} has no docstring"


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
