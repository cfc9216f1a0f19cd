"""The few CUDA driver calls nvmathx makes itself, through cuda.bindings, with typed errors.

cuda.bindings returns ``(CUresult, *values)`` tuples; :func:`_check` turns a failure into
:class:`CudaDriverError` carrying the C name of the status.
"""

from __future__ import annotations

from .._errors import CudaLibraryError

__all__ = [
    "CudaDriverError",
    "driver_available",
    "device_count",
    "driver_version",
    "device_total_memory",
    "memcpy_async",
    "memset_async",
    "stream_synchronize",
    "stream_wait_stream",
    "event_create",
    "event_record",
    "event_query",
    "event_destroy",
    "stream_is_capturing",
    "kernel_set_max_dynamic_shared_memory",
]


class CudaDriverError(CudaLibraryError):
    """A CUDA driver call failed."""

    library = "CUDA driver"
    hint = "Set CUDA_LAUNCH_BLOCKING=1 to locate asynchronous errors"


_driver = None


def _module():
    global _driver
    if _driver is None:
        from cuda.bindings import driver

        (status,) = driver.cuInit(0)
        _check(status, "cuInit")
        _driver = driver
    return _driver


def _check(status, function):
    if int(status) != 0:
        raise CudaDriverError(int(status), getattr(status, "name", str(status)), function)


def _call(name, *args):
    driver = _module()
    status, *values = getattr(driver, name)(*args)
    _check(status, name)
    return values[0] if len(values) == 1 else values


def driver_available() -> bool:
    """True when the CUDA driver loads and reports at least one device. Never raises."""
    try:
        return device_count() > 0
    except Exception:
        return False


def device_count() -> int:
    return _call("cuDeviceGetCount")


def driver_version() -> int:
    """The driver's CUDA version as an integer (13000 = CUDA 13.0)."""
    return _call("cuDriverGetVersion")


def device_total_memory(device_id: int) -> int:
    """The total memory of device ``device_id`` in bytes."""
    return int(_call("cuDeviceTotalMem", _call("cuDeviceGet", device_id)))


def memcpy_async(dst: int, src: int, nbytes: int, stream_handle: int) -> None:
    """Copy ``nbytes`` between any two pointers (host or device, unified addressing) on a stream."""
    _call("cuMemcpyAsync", dst, src, nbytes, stream_handle)


def memset_async(ptr: int, value: int, nbytes: int, stream_handle: int) -> None:
    """Set ``nbytes`` bytes at ``ptr`` to ``value`` (0-255) on a stream."""
    _call("cuMemsetD8Async", ptr, value, nbytes, stream_handle)


def stream_synchronize(stream_handle: int) -> None:
    _call("cuStreamSynchronize", stream_handle)


def stream_wait_stream(waiting_handle: int, producing_handle: int) -> None:
    """Make ``waiting_handle`` wait for the work queued so far on ``producing_handle``."""
    driver = _module()
    event = _call("cuEventCreate", driver.CUevent_flags.CU_EVENT_DISABLE_TIMING)
    try:
        _call("cuEventRecord", event, producing_handle)
        _call("cuStreamWaitEvent", waiting_handle, event, 0)
    finally:
        _call("cuEventDestroy", event)


def stream_is_capturing(stream_handle: int) -> bool:
    driver = _module()
    status = _call("cuStreamIsCapturing", stream_handle)
    return status != driver.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_NONE


def kernel_set_max_dynamic_shared_memory(kernel_handle, nbytes: int, device_id: int) -> None:
    """Let the library kernel ``kernel_handle`` (a CUkernel, as cuda.core's ``Kernel.handle``) launch
    with up to ``nbytes`` of dynamic shared memory on GPU ``device_id`` (above 48 KiB needs this)."""
    driver = _module()
    attribute = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    _call("cuKernelSetAttribute", attribute, int(nbytes), kernel_handle, _call("cuDeviceGet", device_id))


def event_create() -> object:
    """An event without timing (for :func:`event_query`); release it with :func:`event_destroy`."""
    driver = _module()
    return _call("cuEventCreate", driver.CUevent_flags.CU_EVENT_DISABLE_TIMING)


def event_record(event, stream_handle: int) -> None:
    _call("cuEventRecord", event, stream_handle)


def event_query(event) -> bool:
    """Whether the work before the event's record has finished (never blocks)."""
    driver = _module()
    (status,) = driver.cuEventQuery(event)
    if status == driver.CUresult.CUDA_ERROR_NOT_READY:
        return False
    _check(status, "cuEventQuery")
    return True


def event_destroy(event) -> None:
    _call("cuEventDestroy", event)
