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

# Each misuse, and the words of the error mypy must report on its line.
MISUSES = [
    ('matmul(a, a, epilog_inputs=5)', '"epilog_inputs" to "matmul"'),
    ('Matmul(a, a).execute(release_workspace="yes")', '"release_workspace" to "execute" of "Matmul"'),
    ('fft(x, n="8")', '"n" to "fft"'),
    ('fft(x, norm="orthogonal")', '"norm" to "fft"'),
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
