"""Benchmark suites: each module ``<name>.py`` here defines ``cases(ctx)``; run with ``python -m benchmarks <name>``."""

__all__: list[str] = []
