"""Logging: the ``nvmathx`` logger, with specification, planning and execution phases at INFO."""

from __future__ import annotations

import contextlib
import logging
import time

from .errors import OptionsError

__all__ = ["get_logger", "timed_step"]

_default = logging.getLogger("nvmathx")


def get_logger(logger=None) -> logging.Logger:
    """The user's logger, or the package logger ``nvmathx``."""
    if logger is None:
        return _default
    if not isinstance(logger, logging.Logger):
        raise OptionsError("logger", f"expected a logging.Logger (got {type(logger).__name__})")
    return logger


@contextlib.contextmanager
def timed_step(what: str, logger: logging.Logger | None = None):
    """Log ``what`` at INFO when it starts and, with its duration, when it ends (or fails).

    For every step that can take over a second (code generation, NVRTC compiles, links,
    autotuning, a cold cache), so that a long wait is never silent.
    """
    log = logger or _default
    log.info("%s: started", what)
    start = time.perf_counter()
    try:
        yield
    except BaseException:
        log.info("%s: failed after %.2f s", what, time.perf_counter() - start)
        raise
    log.info("%s: done in %.2f s", what, time.perf_counter() - start)
