"""``python -m benchmarks``: argument errors, listing, and the no-GPU behaviour."""

import os
import subprocess
import sys

import pytest

from benchmarks._cli import main
from benchmarks._context import gpu_status

_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.parametrize(
    "argv, message",
    [
        (["nope"], "unknown suite(s) nope"),
        (["smoke", "--peers", "torch,jax"], "unknown peer(s) jax"),
        ([], "name at least one SUITE"),
    ],
)
def test_cli_rejects_bad_arguments(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_cli_lists_suites(capsys):
    assert main(["--list"]) == 0
    assert "smoke" in capsys.readouterr().out.split()


def test_cli_with_no_matching_case_writes_nothing(tmp_path, capsys):
    out = tmp_path / "results"
    assert main(["smoke", "--case", "no_such_case_*", "--out", str(out)]) == 0
    assert "no results written" in capsys.readouterr().out
    assert not out.exists()


def test_cli_without_gpu_says_so_and_exits_zero(tmp_path, capsys):
    if gpu_status(0) is None:
        pytest.skip("a GPU is present: the no-GPU path does not apply")
    out = tmp_path / "results"
    assert main(["smoke", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "no CUDA device" in printed and "no results written" in printed
    assert not out.exists()


def test_module_entry_point_runs():
    completed = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--list"], cwd=_REPO_ROOT, capture_output=True, text=True, timeout=120
    )
    assert completed.returncode == 0, completed.stderr
    assert "smoke" in completed.stdout.split()
