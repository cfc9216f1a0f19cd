"""Logging: the ``nvmathx`` logger, with specification, planning and execution phases at INFO."""

from __future__ import annotations

import logging

from .errors import OptionsError

__all__ = ["get_logger"]

_default = logging.getLogger("nvmathx")


def get_logger(logger=None) -> logging.Logger:
    """The user's logger, or the package logger ``nvmathx``."""
    if logger is None:
        return _default
    if not isinstance(logger, logging.Logger):
        raise OptionsError("logger", f"expected a logging.Logger (got {type(logger).__name__})")
    return logger
