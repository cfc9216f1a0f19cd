"""Results out: the schema check, the JSON file, the PNG plot and the stdout table."""

from __future__ import annotations

import json
import math
import os

from ._case import FIXED_LIBRARIES, UNITS

__all__ = ["validate_result", "write_json", "write_plot", "format_table", "normalised_times"]

_TOP_KEYS = ("suite", "device", "date", "versions", "cases")
_CASE_KEYS = ("name", "params", "unit", "times")


def validate_result(result: dict) -> None:
    """Check ``result`` against the fixed format.

    Raises
    ------
    ValueError
        Naming the first key or value that does not fit.
    """
    for key in _TOP_KEYS:
        if key not in result:
            raise ValueError(f"result lacks {key!r}")
    if not isinstance(result["versions"], dict) or not all(isinstance(v, str) for v in result["versions"].values()):
        raise ValueError("result 'versions' must map package names to version strings")
    if not isinstance(result["cases"], list):
        raise ValueError("result 'cases' must be a list")
    for case in result["cases"]:
        missing = [key for key in _CASE_KEYS if key not in case]
        if missing:
            raise ValueError(f"case {case.get('name', '?')!r} lacks {missing}")
        if case["unit"] not in UNITS:
            raise ValueError(f"case {case['name']!r}: unit {case['unit']!r} is not one of {UNITS}")
        if not isinstance(case["params"], dict):
            raise ValueError(f"case {case['name']!r}: 'params' must be a dict")
        for library, time in case["times"].items():
            if time is None:
                if library not in case.get("errors", {}):
                    raise ValueError(f"case {case['name']!r}: {library} is null without an 'errors' entry")
            elif not isinstance(time, (int, float)) or not math.isfinite(time) or time < 0:
                raise ValueError(f"case {case['name']!r}: {library} time must be a finite number >= 0 (got {time!r})")


def write_json(result: dict, directory: str) -> str:
    """Validate ``result`` and write ``<directory>/<suite>.json``; returns the path."""
    validate_result(result)
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"{result['suite']}.json")
    with open(path, "w") as file:
        json.dump(result, file, indent=1, sort_keys=False, allow_nan=False)
        file.write("\n")
    return path


def _columns(result: dict) -> list[str]:
    seen = []
    for case in result["cases"]:
        seen.extend(name for name in case["times"] if name not in seen)
    fixed = [name for name in FIXED_LIBRARIES if name in seen]
    return fixed + [name for name in seen if name not in fixed]


def normalised_times(case: dict) -> dict[str, float]:
    """Each library's time divided by torch's (or by the first library with a time)."""
    times = {library: time for library, time in case["times"].items() if time}
    if not times:
        return {}
    base = times.get("torch") or next(iter(times.values()))
    return {library: time / base for library, time in times.items()}


def write_plot(result: dict, directory: str) -> str | None:
    """Write ``<directory>/<suite>.png``: grouped bars per case, normalised to torch.

    Returns the path, or ``None`` (with the reason printed) when matplotlib is missing.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot written (pip install matplotlib)")
        return None
    columns = _columns(result)
    cases = result["cases"]
    ratios = [normalised_times(case) for case in cases]
    width = 0.8 / max(len(columns), 1)
    figure, axes = plt.subplots(figsize=(max(6.0, 1.2 * len(cases) + 2), 4.5))
    for offset, library in enumerate(columns):
        xs = [i + (offset - (len(columns) - 1) / 2) * width for i in range(len(cases))]
        heights = [ratio.get(library, 0.0) for ratio in ratios]
        axes.bar(xs, heights, width=width, label=library)
        for x, height, case in zip(xs, heights, cases):
            if height:
                axes.text(x, height, _cell(case["times"][library]), ha="center", va="bottom", fontsize=6, rotation=90)
    values = [value for ratio in ratios for value in ratio.values()]
    if values and max(values) / min(values) > 20:
        axes.set_yscale("log")
    axes.axhline(1.0, color="grey", linewidth=0.8)
    axes.set_xticks(range(len(cases)))
    axes.set_xticklabels([f"{case['name']}\n({case['unit']})" for case in cases], rotation=30, ha="right", fontsize=8)
    axes.set_ylabel("time / torch time (or first library); lower is better", fontsize=8)
    axes.set_title(f"{result['suite']} on {result['device']}", fontsize=9)
    axes.legend(fontsize=8)
    figure.tight_layout()
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"{result['suite']}.png")
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def _cell(value) -> str:
    if value is None:
        return "error"
    return f"{value:.4g}"


def format_table(result: dict) -> str:
    """A plain-text table: one row per case, one column per library (``-`` = not run)."""
    columns = _columns(result)
    header = ["case", "unit", *columns]
    rows = [header]
    for case in result["cases"]:
        row = [case["name"], case["unit"]]
        row += [_cell(case["times"][name]) if name in case["times"] else "-" for name in columns]
        rows.append(row)
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]
    for case in result["cases"]:
        for library, message in case.get("errors", {}).items():
            lines.append(f"  {case['name']} / {library}: {message}")
    return "\n".join(lines)
