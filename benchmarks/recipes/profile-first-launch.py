#!/usr/bin/env python3
"""Profile the device suite's first launch (fresh interpreter -> first finished kernel) with a warm cache.

    scripts/recipe profile-first-launch [OUTPUT_DIR]

Fills a fresh NVMATHX_CACHE_DIR with one untimed run, then runs the same script three more times:
plainly (wall time), under ``-X importtime`` (import costs) and under cProfile (where the rest
goes). Writes first-launch-profile.txt (wall times, slowest imports, top functions by cumulative
time) to OUTPUT_DIR (default: $OUT or the current folder).
"""

import os
import pstats
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

from benchmarks.suites.device import _FIRST_LAUNCH  # noqa: E402

_SCRIPT = os.path.join(tempfile.mkdtemp(prefix="nvmathx-first-launch-"), "first_launch.py")
with open(_SCRIPT, "w") as _file:  # a file, not -c: cProfile runs scripts only
    _file.write(_FIRST_LAUNCH)


def run(args, env, **kwargs):
    start = time.perf_counter()
    completed = subprocess.run([sys.executable, *args, _SCRIPT], env=env, cwd=ROOT, check=True, **kwargs)
    return time.perf_counter() - start, completed


def main() -> int:
    out = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("OUT", ".")
    os.makedirs(out, exist_ok=True)
    env = dict(os.environ, NVMATHX_CACHE_DIR=tempfile.mkdtemp(prefix="nvmathx-profile-"))
    lines = []
    cold, _ = run([], env)
    lines.append(f"cold (fills the cache): {cold:.3f} s")
    for index in range(3):
        warm, _ = run([], env)
        lines.append(f"warm run {index + 1}: {warm:.3f} s")
    _, imports = run(["-X", "importtime"], env, capture_output=True, text=True)
    rows = []
    for line in imports.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            parts = [part.strip() for part in line[len("import time:"):].split("|")]
            if parts[1].isdigit():
                rows.append((int(parts[1]), parts[2]))
    lines.append("\nslowest imports (cumulative us, module):")
    lines += [f"{cumulative:>10} {name}" for cumulative, name in sorted(rows, reverse=True)[:40]]
    profile_path = os.path.join(tempfile.mkdtemp(), "first-launch.prof")
    run(["-m", "cProfile", "-o", profile_path], env)
    report_path = os.path.join(out, "first-launch-profile.txt")
    with open(report_path, "w") as report:
        report.write("\n".join(lines) + "\n\ntop functions by cumulative time:\n")
        stats = pstats.Stats(profile_path, stream=report)
        stats.sort_stats("cumulative").print_stats(70)
        stats.sort_stats("tottime").print_stats(30)
    print("\n".join(lines[:5]))
    print(f"written: {report_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
