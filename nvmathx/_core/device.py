"""Devices: make a device current once per thread, and report what is there."""

from __future__ import annotations

import threading

from .._bindings import cuda_driver
from .errors import OperandError

__all__ = ["ensure_device", "device_properties"]

_current = threading.local()


def ensure_device(device_id: int):
    """The cuda.core ``Device`` for ``device_id``, made current on this thread (cached per thread).

    Raises
    ------
    OperandError
        When ``device_id`` is not a valid device ordinal.
    """
    devices = getattr(_current, "devices", None)
    if devices is None:
        devices = _current.devices = {}
    device = devices.get(device_id)
    if device is None:
        from cuda.core import Device

        count = cuda_driver.device_count()
        if not 0 <= device_id < count:
            raise OperandError("device_id", f"expected a device ordinal in [0, {count}) (got {device_id})")
        device = Device(device_id)
        device.set_current()
        devices[device_id] = device
    return device


def device_properties(device_id: int) -> dict:
    """Name, compute capability and multiprocessor count of a device."""
    device = ensure_device(device_id)
    major, minor = device.compute_capability
    return {
        "name": device.name,
        "compute_capability": (major, minor),
        "sm": major * 100 + minor * 10,
        "multiprocessor_count": device.properties.multiprocessor_count,
    }
