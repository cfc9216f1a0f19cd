"""``python -m benchmarks``: parse arguments, run suites, write and print results."""

from __future__ import annotations

import argparse
import os

from ._case import KNOWN_PEERS
from ._context import Context, gpu_status, installed_peers, select_peers
from ._report import format_table, write_json, write_plot
from ._runner import available_suites, run_suite

__all__ = ["build_parser", "main", "DEFAULT_OUT"]

DEFAULT_OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``python -m benchmarks``."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="Time nvmathx beside torch, cupy, nvmath-python and cuda.core; see benchmarks/README.md.",
    )
    parser.add_argument("suites", nargs="*", metavar="SUITE", help="suite module(s) under benchmarks/suites")
    parser.add_argument(
        "--peers", action="append", default=[],
        help=f"peers to compare, comma separated ({', '.join(KNOWN_PEERS)}); default: all installed",
    )
    parser.add_argument("--case", action="append", default=[], metavar="GLOB", help="run only matching cases")
    parser.add_argument("--quick", action="store_true", help="small sizes: a fast check, not a measurement")
    parser.add_argument("--out", default=DEFAULT_OUT, metavar="DIR", help="where to write <suite>.json/.png")
    parser.add_argument("--device", type=int, default=int(os.environ.get("LOCAL_RANK", 0)),
                        help="CUDA device ordinal (default: LOCAL_RANK under torchrun, else 0)")
    parser.add_argument("--seed", type=int, default=0, help="seed of ctx.rng")
    parser.add_argument("--no-plot", action="store_true", help="write only the JSON")
    parser.add_argument("--list", action="store_true", help="list the suites and exit")
    return parser


def _parse(argv) -> tuple[argparse.Namespace, tuple[str, ...]]:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.list:
        return args, ()
    if not args.suites:
        parser.error("name at least one SUITE (see --list)")
    known = available_suites()
    unknown = [name for name in args.suites if name not in known]
    if unknown:
        parser.error(f"unknown suite(s) {', '.join(unknown)}; available: {', '.join(known)}")
    try:
        peers = select_peers(args.peers, installed_peers())
    except ValueError as error:
        parser.error(str(error))
    return args, peers


def _emit(result: dict, args) -> None:
    path = write_json(result, args.out)
    print(f"wrote {path}")
    if not args.no_plot:
        plot = write_plot(result, args.out)
        if plot:
            print(f"wrote {plot}")
    print(f"\n{result['suite']} on {result['device']} (smaller is better)")
    print(format_table(result))


def main(argv=None) -> int:
    """Run the suites named in ``argv``; 0 on success (also without a GPU), 1 if nvmathx failed."""
    args, peers = _parse(argv)
    if args.list:
        print("\n".join(available_suites()))
        return 0
    reason = gpu_status(args.device)
    if reason is not None:
        print(f"{reason}: GPU cases are skipped")
    ctx = Context.for_device(peers, args.device, quick=args.quick, seed=args.seed)
    print(f"peers: {', '.join(ctx.peers) or '(none)'}")
    nvmathx_failed = False
    for name in args.suites:
        result = run_suite(name, ctx, args.case)
        if result is None:
            print(f"[{name}] nothing to run here: no results written")
            continue
        if ctx.rank == 0:  # in a distributed run every rank measures, rank 0 writes
            _emit(result, args)
        nvmathx_failed |= any("nvmathx" in case.get("errors", {}) for case in result["cases"])
    return 1 if nvmathx_failed else 0
