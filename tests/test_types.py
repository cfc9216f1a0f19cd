"""The shipped ``py.typed`` is true: mypy checks a user's script against nvmathx's annotations, and a
wrong argument type in a call of the public API is reported (not silently typed as Any)."""

import pathlib
import re
import subprocess
import sys

import pytest

pytest.importorskip("mypy")

ROOT = pathlib.Path(__file__).resolve().parents[1]

USER_SCRIPT = """\
import numpy as np

import nvmathx.fft
import nvmathx.linalg
from nvmathx.fft import FFT, fft
from nvmathx.linalg import Matmul, matmul

a = np.ones((4, 4), dtype=np.float32)
x = np.ones((8, 4), dtype=np.complex64)
r = matmul(a, a, alpha=2.0, epilog="RELU", options={"blocking": True}, execution="cpu")
with Matmul(a, a, beta=0.0, execution="cpu") as mm:
    algorithms = mm.plan(epilog="RELU")
    y = mm.execute(release_workspace=True)
z = fft(x, n=8, axis=0, norm="ortho")
w = nvmathx.fft.ifft2(x, axes=(0, 1))
with FFT(x, axes=[0], execution="cpu") as f:
    f.plan()
    v = f.execute()
member = nvmathx.linalg.MatmulEpilog.RELU
"""

# Each misuse, and the words of the error mypy must report on its line (the function forms are
# overloaded: mypy names the function and the argument types that no overload takes).
MISUSES = [
    ('matmul(a, a, epilog_inputs=5)', 'No overload variant of "matmul" matches argument types'),
    ('Matmul(a, a).execute(release_workspace="yes")', '"release_workspace" to "execute" of "Matmul"'),
    ('fft(x, n="8")', 'No overload variant of "fft" matches argument types'),
    ('fft(x, norm="orthogonal")', 'No overload variant of "fft" matches argument types'),
    ('FFT(x, axes=0)', '"axes" to "FFT"'),
]

def test_a_user_script_type_checks_and_misuses_are_reported(tmp_path):
    script = tmp_path / "user_script.py"
    script.write_text(USER_SCRIPT + "".join(line + "\n" for line, _ in MISUSES))
    first = len(USER_SCRIPT.splitlines()) + 1
    # The project's settings (third-party modules without types) and the checkout's nvmathx (cwd first).
    result = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
                             "--cache-dir", str(tmp_path / "cache"), str(script)],
                            cwd=ROOT, capture_output=True, text=True, timeout=600)
    errors = {}
    for match in re.finditer(r"^(.+?):(\d+): error: (.*)$", result.stdout, re.M):
        assert match.group(1).endswith("user_script.py"), result.stdout  # nothing inside nvmathx
        errors.setdefault(int(match.group(2)), []).append(match.group(3))
    assert set(errors) == set(range(first, first + len(MISUSES))), result.stdout  # MatmulEpilog.RELU is seen
    for offset, (_, words) in enumerate(MISUSES):
        assert any(words in error for error in errors[first + offset]), (words, errors[first + offset])


# -- the results' types: tests/typing_checks/*.py hold assert_type lines, read by mypy ----------------------

CHECKS = ROOT / "tests" / "typing_checks"
# A line that must fail, appended to a copy of each file: mypy reads the file and reports its assert_type.
WRONG = "assert_type(nvmathx.fft.fft([1.0, 2.0]), list)\n"


def _errors(tmp_path, names):
    copies = []
    for name in names:
        text = (CHECKS / name).read_text()
        assert "assert_type(" in text and "import nvmathx.fft\n" in text
        copy = tmp_path / name
        copy.write_text(text + WRONG)
        copies.append((copy, len(text.splitlines()) + 1))
    result = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
                             "--cache-dir", str(tmp_path / "cache"), *(str(copy) for copy, _ in copies)],
                            cwd=ROOT, capture_output=True, text=True, timeout=600)
    errors = re.findall(r"^(.+?):(\d+): error: (.*)$", result.stdout, re.M)
    assert errors, result.stdout + result.stderr  # the appended lines fail at least
    return {(pathlib.Path(path).name, int(line)) for path, line, _ in errors}, copies, result.stdout


@pytest.mark.parametrize("names", [
    ["numpy_results.py"],
    pytest.param(["torch_results.py"], id="torch"),
])
def test_results_have_the_operands_kind(tmp_path, names):
    # numpy arrays and lists give numpy.ndarray, a torch.Tensor gives a torch.Tensor, an epilog with
    # auxiliary outputs gives (array, dict): each assert_type holds, so none of them is Any.
    if "torch_results.py" in names:
        pytest.importorskip("torch")
    errors, copies, stdout = _errors(tmp_path, names)
    assert errors == {(copy.name, line) for copy, line in copies}, stdout


def test_the_epilog_literals_are_the_table():
    import typing

    from nvmathx._matmulcore.epilogs import EPILOGS, EpilogWithoutOutputs, EpilogWithOutputs

    def members_and_names(alias):
        values = [v for part in typing.get_args(alias) for v in typing.get_args(part) or (part,)]
        return values

    with_outputs = {spec.epilog for spec in EPILOGS.values() if spec.outputs}
    for alias, expected in ((EpilogWithOutputs, with_outputs), (EpilogWithoutOutputs, set(EPILOGS) - with_outputs)):
        values = members_and_names(alias)
        names = {e.name for e in expected}
        assert {v for v in values if not isinstance(v, str) and v is not type(None)} == expected
        assert {v for v in values if isinstance(v, str)} == names
    assert type(None) in members_and_names(EpilogWithoutOutputs)
