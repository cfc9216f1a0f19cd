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
