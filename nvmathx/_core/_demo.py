"""Demos of the shared layer for ``python -m nvmathx``."""

import numpy as np

from .streams import resolve_stream
from .tensor import copy_to_host, stage_to_device, wrap_operand


def _round_trip(execution):
    """Host -> device -> host copy through nvmathx's staging path (CPU: a view round trip)."""
    reference = np.random.default_rng().standard_normal((257, 129))
    operand = wrap_operand(reference, "x")
    if execution == "cpu":
        return np.asarray(operand.obj), reference, 0.0
    stream = resolve_stream(None, 0)
    device = stage_to_device(operand, 0, stream)
    return copy_to_host(device, operand, stream), reference, 0.0


DEMOS = [("operand staging round trip", _round_trip)]
