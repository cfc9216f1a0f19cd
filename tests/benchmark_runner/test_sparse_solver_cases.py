"""The direct solver's cases of the sparse suite: the generated systems, the declarations, and the
child-process protocol (a column that runs out of time is killed and recorded as timed out)."""

import numpy as np
import pytest

from benchmarks import Context
from benchmarks._runner import run_case
from benchmarks.suites import _sparse_solver_cases as solver


@pytest.mark.parametrize("build, m, unknowns, per_row", [(solver.poisson2d, 12, 144, 5), (solver.poisson3d, 5, 125, 7),
                                                         (solver.convdiff2d, 12, 144, 5)])
def test_generated_systems(build, m, unknowns, per_row):
    a = build(m)
    dense = a.toarray()
    assert a.shape == (unknowns, unknowns) and a.indices.dtype == np.int32 and a.has_canonical_format
    assert np.diff(a.indptr).max() == per_row and np.all(a.data != 0)
    grid_neighbours = 4 if per_row == 5 else 6
    np.testing.assert_allclose(np.diag(dense), grid_neighbours * (1 if build is not solver.convdiff2d else 1.5))
    if build is solver.convdiff2d:
        assert not np.allclose(dense, dense.T)
        assert np.all(np.diag(dense) >= np.abs(dense).sum(axis=1) - np.abs(np.diag(dense)))  # dominant
    else:
        assert np.allclose(dense, dense.T) and np.linalg.eigvalsh(dense).min() > 0


def test_declarations():
    cases = solver.solver_cases(Context())
    assert [case.name for case in cases] == ["spsolve_poisson2d_1e6_f64", "spsolve_poisson3d_1e6_f64",
                                             "spsolve_convdiff2d_1e6_f64", "refactorize_poisson2d_1e6_f64"]
    for case in cases[:3]:
        assert set(case.setups) == {"nvmathx", "nvmathx.one_thread", "cupy", "torch", "nvmath-python", "scipy"}
        assert case.params["unknowns"] == 10**6 and case.unit == "s" and case.repeats == 1
    assert set(cases[3].setups) == {"nvmathx", "nvmathx.first"}


def test_a_column_past_the_time_limit_is_killed_and_recorded(monkeypatch):
    monkeypatch.setattr(solver, "TIMEOUT_S", 1.0)
    monkeypatch.setattr(solver, "_CHILD", "import sys, time\nprint('ready', flush=True)\nsys.stdin.readline()\n"
                                          "time.sleep(30)\n")
    case = solver.solver_cases(Context(quick=True))[0]
    case.setups = {"scipy": case.setups["scipy"]}
    record = run_case(case, Context(quick=True))
    assert record["times"] == {"scipy": 1.0} and record["params"]["timed_out"] == {"scipy": True}


def test_a_finished_column_records_its_residual():
    case = solver.solver_cases(Context(quick=True))[2]  # convection-diffusion on a 100 x 100 grid
    case.setups = {"scipy": case.setups["scipy"]}
    record = run_case(case, Context(quick=True))
    if "scipy" in record.get("skipped", {}):  # the child could not start here: its own words say why
        pytest.skip(f"the scipy column could not run: {record['skipped']['scipy']}")
    assert record["times"]["scipy"] > 0 and record["params"]["timed_out"] == {}
    assert record["params"]["relative_residual"]["scipy"] < 1e-12


def test_the_slow_peers_run_at_the_same_time(monkeypatch, tmp_path):
    """cupy and scipy are started together: each child notes when it was told to go, and scipy's go
    comes before cupy's one-second solve has ended (run one after the other, it would come after)."""
    monkeypatch.setattr(solver, "TIMEOUT_S", 30.0)
    monkeypatch.setenv("GO_DIR", str(tmp_path))
    child = ("import json, os, sys, time\nprint('ready', flush=True)\nsys.stdin.readline()\n"
             "open(os.path.join(os.environ['GO_DIR'], sys.argv[1]), 'w').write(repr(time.time()))\n"
             "time.sleep(1.0)\nprint(json.dumps({'seconds': 1.0, 'residual': 0.0}))\n")
    monkeypatch.setattr(solver, "_CHILD", child)
    case = solver.solver_cases(Context(quick=True))[0]
    case.setups = {name: case.setups[name] for name in ("cupy", "scipy")}
    record = run_case(case, Context(quick=True, peers=("cupy",)))
    assert record["times"] == {"cupy": 1.0, "scipy": 1.0} and record["params"]["timed_out"] == {}
    go = {name: float((tmp_path / name).read_text()) for name in ("cupy", "scipy")}
    assert abs(go["scipy"] - go["cupy"]) < 1.0
