"""``benchmarks/results/`` holds, per suite, the JSON and PNG of one reference run and nothing else
(logs, notes and profiles stay out of the tree)."""

import json
import pathlib
import subprocess

from benchmarks._report import validate_result

RESULTS = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "results"


def tracked():
    """The files git tracks under benchmarks/results (the folder's files where git is absent)."""
    try:
        listing = subprocess.run(["git", "ls-files", "."], cwd=RESULTS, capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return sorted(path.name for path in RESULTS.iterdir())
    return sorted(listing.stdout.split())


def test_one_json_and_one_png_per_suite_and_nothing_else():
    names = tracked()
    stems = {name.rsplit(".", 1)[0] for name in names}
    assert names == sorted(f"{stem}.{extension}" for stem in stems for extension in ("json", "png"))


def test_each_json_is_a_valid_result_of_its_suite():
    for path in RESULTS.glob("*.json"):
        result = json.loads(path.read_text())
        validate_result(result)
        assert path.stem.startswith(result["suite"]), (path.name, result["suite"])
        assert result["cases"], path.name


# Cases a suite defines that its committed JSON does not hold yet, each with the reason.
NOT_YET_COMMITTED = {
    ("device", name): "issue 50: not yet run on a GPU together with the numba-cuda-mlir column"
    for name in ("copy_4gib_f32", "rng_normal_2p30_f32", "rng_montecarlo_2p32_f32", "solve_spd_65536x32_f32",
                 "solve_lu_65536x64_f64")
}


def test_every_single_gpu_case_of_a_suite_is_in_its_committed_json():
    from benchmarks._context import Context
    from benchmarks._runner import load_suite

    context = Context(peers=())  # a machine without a GPU: the case list, nothing timed
    for path in sorted(RESULTS.glob("*.json")):
        result = json.loads(path.read_text())
        if result["suite"].startswith("distributed"):
            continue  # its cases depend on the world size of the run
        defined = [case.name for case in load_suite(result["suite"]).cases(context)]
        held = {case["name"] for case in result["cases"]}
        missing = {name for name in defined if name not in held}
        assert missing == {name for suite, name in NOT_YET_COMMITTED if suite == result["suite"]}, path.name
        assert held <= set(defined), (path.name, held - set(defined))  # no case the suite no longer has
