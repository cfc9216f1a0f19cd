"""Results out: the schema check, the JSON file, the PNG plot and the stdout table."""

from __future__ import annotations

import json
import math
import os

from ._case import FIXED_LIBRARIES, UNITS

__all__ = ["validate_result", "write_json", "write_plot", "format_table", "normalised_times", "best_peer", "is_ours"]

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
    """Each library's time divided by the best peer's (the fastest column not named ``nvmathx...``),
    or by the fastest column where the case has no peer with a time."""
    times = {library: time for library, time in case["times"].items() if time}
    if not times:
        return {}
    _, base = best_peer(case) or min(times.items(), key=lambda item: item[1])
    return {library: time / base for library, time in times.items()}


def is_ours(column: str) -> bool:
    """Whether a column measures nvmathx itself (``nvmathx``, ``nvmathx.first``, ...)."""
    return column == "nvmathx" or column.startswith("nvmathx.")


def best_peer(case: dict) -> tuple[str, float] | None:
    """The fastest peer library of ``case`` and its time, or ``None`` where no peer has a time."""
    peers = [(library, time) for library, time in case["times"].items() if time and not is_ours(library)]
    return min(peers, key=lambda item: item[1]) if peers else None


# Ratios past this are drawn to the frame's edge with their value written inside it, so that one
# case far ahead does not squash every other row on a linear axis.
_RATIO_AXIS_LIMIT = 3.0


def write_plot(result: dict, directory: str) -> str | None:
    """Write ``<directory>/<suite>.png``: one row per case, a bar per library of its time over the
    best peer's time (lower is better), on a linear axis with a line at 1.0.

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
    largest = max((value for ratio in ratios for value in ratio.values()), default=1.0)
    limit = min(max(largest * 1.15, 1.25), _RATIO_AXIS_LIMIT)
    colours = dict(zip(columns, _cycle(plt.rcParams["axes.prop_cycle"].by_key()["color"], len(columns))))
    bars = sum(len(ratio) for ratio in ratios)
    figure, axes = plt.subplots(figsize=(8.0, 1.4 + 0.17 * bars + 0.2 * len(cases)))
    y, centres, labelled = 0.0, [], set()
    for ratio in ratios:
        first = y
        for library in (column for column in columns if column in ratio):
            value = ratio[library]
            width = min(value, limit)
            axes.barh(y, width, height=0.85, color=colours[library],
                      label=None if library in labelled else library)
            labelled.add(library)
            inside = width > 0.8 * limit  # near the frame's edge: the label goes inside the bar
            axes.text(width - 0.01 * limit if inside else width + 0.01 * limit, y, f"{value:.2f}x",
                      ha="right" if inside else "left", va="center", fontsize=6,
                      color="white" if inside else "black", clip_on=True)
            y += 1.0
        centres.append((first + y - 1.0) / 2)
        y += 0.8  # a gap between cases
    axes.axvline(1.0, color="black", linewidth=0.9)
    axes.set_xlim(0.0, limit)
    axes.set_ylim(y - 0.5, -0.9)
    axes.set_yticks(centres)
    axes.set_yticklabels([case["name"] for case in cases], fontsize=7)
    axes.set_xlabel("time / best peer's time (lower is better; 1.0 = the fastest of torch, CuPy, ...)", fontsize=8)
    axes.set_title(f"{result['suite']} on {result['device']}", fontsize=9)
    axes.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.06 - 2.0 / (bars + 10)),
                ncol=min(len(columns), 4), frameon=False)
    figure.tight_layout()
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"{result['suite']}.png")
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def _cycle(items: list, count: int) -> list:
    return [items[index % len(items)] for index in range(count)]


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
