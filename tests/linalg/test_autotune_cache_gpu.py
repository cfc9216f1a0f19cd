"""The persistent autotune cache across two real processes on a GPU: the first tunes and records,
the second takes the stored algorithm without timing a candidate, and both products agree with
numpy in float64."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.gpu

_CHILD = textwrap.dedent("""
    import glob, json, os, sys
    import numpy as np
    import nvmathx.autotune_cache as autotune_cache
    from nvmathx.linalg import Matmul, _autotune

    folder, seed = sys.argv[1], int(sys.argv[2])
    cupy = __import__("cupy")
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal((256, 192)), rng.standard_normal((192, 320))
    timed = []
    original = _autotune._timed_candidates
    _autotune._timed_candidates = lambda *args: timed.append(1) or original(*args)
    autotune_cache.enable(folder)
    with Matmul(cupy.asarray(a, np.float32), cupy.asarray(b, np.float32)) as mm:
        mm.plan()
        # the fields in which this process's key differs from each stored one (a miss's reason)
        key = json.loads(json.dumps(_autotune.autotune_key(mm._space.runner)))
        differ = [sorted(name for name in key if json.load(open(path))["key"].get(name) != key[name])
                  for path in glob.glob(os.path.join(folder, "*.json"))]
        mm.autotune(iterations=2)
        product = cupy.asnumpy(mm.execute())
    error = float(np.abs(product - a @ b).max() / np.abs(a @ b).max())
    info = autotune_cache.info()
    print(json.dumps({"timed": len(timed), "hits": info.hits, "misses": info.misses, "rejected": info.rejected,
                      "entries": info.entries, "error": error, "stored_keys_differ_in": differ}))
""")


def _run(folder, seed):
    pytest.importorskip("cupy")
    done = subprocess.run([sys.executable, "-c", _CHILD, str(folder), str(seed)], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_second_process_reuses_the_first_ones_tuning(tmp_path, rng):
    seed = int(rng.integers(1 << 30))
    first = _run(tmp_path, seed)
    second = _run(tmp_path, seed)
    assert first["timed"] == 1 and first["hits"] == 0 and first["entries"] == 1, first
    assert second["stored_keys_differ_in"] == [[]], second  # the same machine and problem: the same key
    assert second["timed"] == 0 and second["hits"] == 1, second  # taken from the folder, re-checked, not timed
    assert first["error"] < 1e-5 and second["error"] < 1e-5
