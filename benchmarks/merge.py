"""``python -m benchmarks.merge [--out DIR] PART.json PART.json ...``: one suite's result from parts.

A suite too long for one GPU call (the device tool stops a command at 600 s) runs as parts,
``--case`` selections of the same suite on the same machine and library versions; this joins their
JSON files into ``DIR/<suite>.json`` (and the plot). The merged result records each part's date and
cases under ``"parts"``; its ``date`` is the latest part's.
"""

from __future__ import annotations

import argparse
import json
import sys

from ._report import validate_result, write_json, write_plot

__all__ = ["merge_results", "main"]


def merge_results(parts: list[dict]) -> dict:
    """The result of one run of the union of ``parts``' cases.

    Raises
    ------
    ValueError
        When there are no parts, a part does not fit the results format, the parts differ in suite,
        device or versions (naming what differs), or a case appears in more than one part.
    """
    if not parts:
        raise ValueError("parts: nothing to merge")
    for part in parts:
        validate_result(part)
    first = parts[0]
    for index, part in enumerate(parts[1:], start=1):
        for key in ("suite", "device"):
            if part[key] != first[key]:
                raise ValueError(f"parts[{index}]: {key} {part[key]!r} differs from parts[0]'s {first[key]!r}")
        differing = sorted(
            name for name in set(part["versions"]) | set(first["versions"])
            if part["versions"].get(name) != first["versions"].get(name)
        )
        if differing:
            detail = ", ".join(
                f"{name} {first['versions'].get(name)} vs {part['versions'].get(name)}" for name in differing
            )
            raise ValueError(f"parts[{index}]: versions differ from parts[0]'s ({detail})")
    owner: dict[str, int] = {}
    for index, part in enumerate(parts):
        for case in part["cases"]:
            if case["name"] in owner:
                raise ValueError(f"parts[{index}]: case {case['name']!r} is also in parts[{owner[case['name']]}]")
            owner[case["name"]] = index
    merged = {
        "suite": first["suite"],
        "device": first["device"],
        "date": max(part["date"] for part in parts),
        "versions": dict(first["versions"]),
        "cases": [case for part in parts for case in part["cases"]],
        "parts": [{"date": part["date"], "cases": [case["name"] for case in part["cases"]]} for part in parts],
    }
    validate_result(merged)
    return merged


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.merge", description=__doc__.splitlines()[0])
    parser.add_argument("parts", nargs="+", metavar="PART.json", help="results of parts of one suite's run")
    parser.add_argument("--out", default="benchmarks/results", metavar="DIR", help="where to write <suite>.json/.png")
    parser.add_argument("--no-plot", action="store_true", help="write only the JSON")
    arguments = parser.parse_args(argv)
    parts = []
    for path in arguments.parts:
        with open(path) as file:
            parts.append(json.load(file))
    try:
        merged = merge_results(parts)
    except ValueError as error:
        print(f"merge: {error}", file=sys.stderr)
        return 2
    print("wrote", write_json(merged, arguments.out))
    if not arguments.no_plot:
        plot = write_plot(merged, arguments.out)
        if plot:
            print("wrote", plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
