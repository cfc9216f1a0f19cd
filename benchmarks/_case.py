"""What a suite declares: :class:`Case`, :class:`Skip`, and derived-figure helpers."""

from __future__ import annotations

import dataclasses
import importlib
import re
from typing import Any, Callable

__all__ = ["Case", "Skip", "UNITS", "FIXED_LIBRARIES", "KNOWN_PEERS", "bandwidth", "tflops"]

#: Units a case may report in; smaller is better for each of them.
UNITS = ("ms", "us_per_call", "s")

#: Library names of the fixed result format, in column order.
FIXED_LIBRARIES = ("nvmathx", "torch", "cupy", "nvmath-python")

#: Libraries that ``--peers`` selects among (nvmathx always runs).
KNOWN_PEERS = ("torch", "cupy", "nvmath-python", "cuda.core")

_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


class Skip(Exception):
    """Raised by a setup to leave its column out of a case (recorded under ``skipped``)."""


def import_or_skip(name: str):
    """Import ``name``, or :class:`Skip` the column when it is not installed."""
    try:
        return importlib.import_module(name)
    except ImportError as error:
        raise Skip(f"{name} is not installed ({error})") from None


@dataclasses.dataclass
class Case:
    """One measured configuration, timed for each library that has a setup.

    Parameters
    ----------
    name : str
        Unique within the suite; letters, digits, ``_``, ``.``, ``-``.
    unit : {"ms", "us_per_call", "s"}
        GPU time per call from CUDA events, host time per call, or wall seconds.
    setups : dict
        Library name -> zero-argument callable returning the callable to time, or a list of
        callables to rotate over.
    params : dict
        JSON-able description of the problem (sizes, dtypes, ...).
    gpu : bool
        The case needs a GPU (skipped without one).
    derive : callable, optional
        Measured time -> derived figure (larger is better); its ``unit`` attribute names the unit.
    stream : optional
        Where the timing events go for ``"ms"`` cases (default: the legacy default stream).
    warmup, repeats : int, optional
        GPU timing overrides.
    iterations, loops : int, optional
        Host timing overrides (``repeats`` also sets the repeats of ``"s"`` cases).
    note : str
        Free text copied into the result.
    """

    name: str
    unit: str
    setups: dict[str, Callable[[], Any]]
    params: dict = dataclasses.field(default_factory=dict)
    gpu: bool = True
    derive: Callable[[float], float] | None = None
    stream: Any = None
    warmup: int | None = None
    repeats: int | None = None
    iterations: int | None = None
    loops: int | None = None
    note: str = ""

    def __post_init__(self):
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise ValueError(f"Case name must match {_NAME.pattern} (got {self.name!r})")
        if self.unit not in UNITS:
            raise ValueError(f"Case {self.name}: unit must be one of {UNITS} (got {self.unit!r})")
        if not self.setups or not all(callable(setup) for setup in self.setups.values()):
            raise ValueError(f"Case {self.name}: setups must map library names to callables")


def _derived(function: Callable[[float], float], unit: str) -> Callable[[float], float]:
    function.unit = unit
    return function


def bandwidth(nbytes: int, unit: str = "TB/s") -> Callable[[float], float]:
    """Derive bytes moved per second from a time in ms: ``nbytes`` read plus written, say."""
    scale = {"TB/s": 1e12, "GB/s": 1e9}[unit]
    return _derived(lambda ms: nbytes / (ms * 1e-3) / scale, unit)


def tflops(flops: float) -> Callable[[float], float]:
    """Derive TFLOP/s from a time in ms for a problem of ``flops`` floating-point operations."""
    return _derived(lambda ms: flops / (ms * 1e-3) / 1e12, "TFLOP/s")
