"""nvmathx benchmarks: one runner (``python -m benchmarks SUITE``), suites in ``benchmarks.suites``.

A suite is a module with ``cases(ctx) -> list[Case]``; see benchmarks/README.md for the case API
and the fixed results format.
"""

from ._case import Case, Skip, bandwidth, import_or_skip, tflops
from ._context import Context
from ._timing import gpu_time_ms, host_us_per_call, wall_seconds

__all__ = [
    "Case",
    "Skip",
    "import_or_skip",
    "Context",
    "bandwidth",
    "tflops",
    "gpu_time_ms",
    "host_us_per_call",
    "wall_seconds",
]
