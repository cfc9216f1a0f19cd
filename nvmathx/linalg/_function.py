"""The function form: matmul(a, b, ...) looks its plan up in a per-device LRU cache and runs it."""

from __future__ import annotations

import dataclasses

from .._core.errors import OptionsError
from .._core.execution import ExecutionCUDA, normalize_execution
from .._core.options import check_or_create_options
from .._core.plan_cache import PlanCache
from .._core.streams import resolve_stream
from .._core.tensor import adapter_for, wrap_operand
from ._epilogs import epilog_spec
from ._matmul import Matmul
from ._operands import info, wrap_all
from ._options import MatmulOptions, MatmulPlanPreferences
from ._problem import check_quantization_scales, check_scalar, describe_problem

__all__ = ["matmul", "matmul_plan_key", "plan_cache"]

plan_cache = PlanCache("matmul", max_size=128, max_memory_bytes=1 << 30)


# -- keys ----------------------------------------------------------------------------------------


# Pointer alignment up to 256 bytes, inline (a hot path): the lowest set bit when one of the low
# eight bits is set, else 256 (a null pointer counts as 256, as the planner treats it).


def _torch_signature(x):
    ptr = x.data_ptr()
    return ("torch", x.shape, x.stride(), x.dtype, x.get_device(), ptr & 255 and ptr & -ptr or 256), ptr


def _cupy_signature(x):
    ptr = x.data.ptr
    return ("cupy", x.shape, x.strides, x.dtype, x.device.id, ptr & 255 and ptr & -ptr or 256), ptr


def _numpy_signature(x):
    ptr = x.ctypes.data
    return ("numpy", x.shape, x.strides, x.dtype, -1, ptr & 255 and ptr & -ptr or 256), ptr


def _adapter_signature(adapter):
    """Any other library, through its adapter's own signature and pointer."""
    signature, pointer, name = adapter.signature, adapter.pointer, adapter.name

    def signature_of(x):
        ptr = pointer(x)
        return (name, *signature(x), ptr & 255 and ptr & -ptr or 256), ptr  # (shape, strides, dtype, device)

    return signature_of


_SIGNATURES = {"torch": _torch_signature, "cupy": _cupy_signature, "numpy": _numpy_signature}
_signature_by_type: dict = {}


def _signature_function(x, argument):
    """The signature function of ``x``'s type (found once per type)."""
    adapter = adapter_for(x, argument)
    function = _signature_by_type[type(x)] = _SIGNATURES.get(adapter.name) or _adapter_signature(adapter)
    return function


def _signature(x, argument):
    """(hashable description, pointer) of an array: library, shape, strides, dtype, device, alignment."""
    function = _signature_by_type.get(type(x)) or _signature_function(x, argument)
    return function(x)


def matmul_plan_key(a, b, c=None, *, epilog=None, epilog_inputs=None, quantization_scales=None, options=None,
                    preferences=None, execution=None):
    """The plan-cache key of a :func:`matmul` call: everything that changes the plan.

    The key is a hashable tuple built only from the arguments: each array's library, shape,
    strides, dtype, device and pointer alignment (up to 256 bytes), the epilog, which
    quantization scales are numbers or arrays, and the options, preferences and execution
    space. Values (pointers, ``alpha``, ``beta``, numeric scales) are not part of it.
    """
    return _key(a, b, c, epilog, epilog_inputs, quantization_scales, options, preferences, execution)[0]


def _key(a, b, c, epilog, epilog_inputs, scales, options, preferences, execution):
    signatures = _signature_by_type
    sig_a, ptr_a = (signatures.get(type(a)) or _signature_function(a, "a"))(a)
    sig_b, ptr_b = (signatures.get(type(b)) or _signature_function(b, "b"))(b)
    pointers = {"a": ptr_a, "b": ptr_b}
    sig_c = None
    if c is not None:
        sig_c, pointers["c"] = _signature(c, "c")
    extra = None
    if epilog_inputs or scales:
        inputs = []
        for name, value in sorted((epilog_inputs or {}).items()) if isinstance(epilog_inputs, dict) else ():
            signature, pointers[name] = _signature(value, f"epilog_inputs[{name!r}]")
            inputs.append((name, signature))
        if isinstance(scales, dict):
            kinds = tuple(sorted((k, "array" if hasattr(v, "shape") else "number") for k, v in scales.items()))
        else:
            kinds = ("not a dict", type(scales).__name__)  # planning raises the typed error
        extra = (tuple(inputs), kinds)
    if epilog is not None and not isinstance(epilog, (str, int)):
        epilog_spec(epilog)  # raises the typed error for an unhashable or unknown epilog
    if options is not None or preferences is not None or execution is not None:
        options, preferences, execution = _normalized(options, preferences, execution, sig_a[4])
    return (sig_a, sig_b, sig_c, epilog, extra, options, preferences, execution), pointers


def _normalized(options, preferences, execution, device_id):
    """Hashable forms of the options, preferences and execution space (dicts become dataclasses)."""
    if options is not None:
        options = check_or_create_options(MatmulOptions, options, "options")
        if options.memory_resource is not None or options.logger is not None:
            # Identity stands in for objects that may not hash; the cached plan keeps them alive.
            options = (dataclasses.replace(options, memory_resource=None, logger=None), id(options.memory_resource),
                       id(options.logger))
    if isinstance(preferences, dict):
        preferences = check_or_create_options(MatmulPlanPreferences, preferences, "preferences")
    if isinstance(execution, dict):
        execution = normalize_execution(execution, device_id)
    return options, preferences, execution


# -- cached plans --------------------------------------------------------------------------------


class _CachedMatmul:
    """A planned problem kept in the cache: the runner, and its operand library's stream getter."""

    __slots__ = ("runner", "plan", "current_stream", "fast", "alpha", "beta", "holder")

    def __init__(self, runner, current_stream):
        self.runner = runner
        self.plan = runner.plan
        self.current_stream = current_stream
        self.fast = not runner.outputs and not runner.blocking and runner.calls is None
        self.alpha = self.beta = None
        self.holder = runner.stream  # the stream the plan last ran on

    @property
    def workspace_bytes(self) -> int:
        return self.plan.workspace_bytes

    def free(self) -> None:
        try:
            self.runner.free()
        finally:
            self.plan.free()


def _build(a, b, c, alpha, beta, epilog, epilog_inputs, scales, options, preferences, device_id, stream):
    from ._planning import build_runner

    options = check_or_create_options(MatmulOptions, options, "options")
    preferences = check_or_create_options(MatmulPlanPreferences, preferences, "preferences")
    a_op, b_op, c_op, inputs = wrap_all(a, b, c, epilog_inputs)
    problem = describe_problem(info(a_op), info(b_op), info(c_op), beta=beta, epilog=epilog_spec(epilog),
                               epilog_inputs={name: info(op) for name, op in inputs.items()}, options=options)
    complex_ok = problem.a_dtype.startswith("complex")
    check_scalar(alpha, "alpha", complex_ok)
    check_scalar(beta, "beta", complex_ok)
    scales = check_quantization_scales(scales, problem)
    holder = resolve_stream(stream, device_id, a_op.adapter.current_stream)
    runner = build_runner(problem, {"a": a_op, "b": b_op, "c": c_op}, inputs, options, preferences, None, holder, None,
                          device_id, keep=1)
    try:
        runner.set_scales(scales)
    except BaseException:
        runner.plan.free()
        raise
    return _CachedMatmul(runner, a_op.adapter.current_stream)


_PLAIN_NUMBERS = (int, float)


def matmul(a, b, c=None, *, alpha=1, beta=0, epilog=None, epilog_inputs=None, quantization_scales=None, options=None,
           preferences=None, execution=None, stream=None):
    """Matrix product ``alpha * a @ b + beta * c`` followed by an epilog, with numpy.matmul semantics.

    The semantics, arguments and errors are those of :class:`Matmul` (construction, ``plan()``
    and ``execute()`` in one call): numpy.matmul's 1-D promotion and batch broadcasting (e.g.
    ``(2, 1, M, K) @ (3, K, N)`` gives ``(2, 3, M, N)``), and ``c`` unread when ``beta`` is 0.
    GPU plans are kept in :data:`plan_cache`, keyed by :func:`matmul_plan_key`, so a repeated
    call costs a key computation, a lookup and the library call. Host (numpy) operands run on the
    CPU unless ``execution="cuda"``, which copies them to the GPU and back (that path is not
    cached).

    Parameters
    ----------
    a, b, c, alpha, beta, quantization_scales, options, execution, stream
        As for :class:`Matmul`.
    epilog, epilog_inputs, preferences
        As for :meth:`Matmul.plan`.

    Returns
    -------
    array or (array, dict)
        The result, plus a dict of auxiliary outputs for epilogs that produce some.

    Examples
    --------
    >>> import numpy as np
    >>> from nvmathx.linalg import matmul
    >>> x, w, bias = np.ones((2, 3), np.float32), np.ones((3, 4), np.float32), np.arange(4, dtype=np.float32)
    >>> matmul(x, w, epilog="RELU_BIAS", epilog_inputs={"bias": bias - 4})
    array([[0., 0., 1., 2.],
           [0., 0., 1., 2.]], dtype=float32)
    """
    key, pointers = _key(a, b, c, epilog, epilog_inputs, quantization_scales, options, preferences, execution)
    device_id = key[0][4]
    if device_id < 0 or not (execution is None or (isinstance(execution, ExecutionCUDA) and execution.device_id == device_id)
                             or execution == "cuda"):
        return _uncached(a, b, c, alpha, beta, epilog, epilog_inputs, quantization_scales, options, preferences, execution, stream)
    if type(alpha) not in _PLAIN_NUMBERS or type(beta) not in _PLAIN_NUMBERS:
        check_scalar(alpha, "alpha", True)
        check_scalar(beta, "beta", True)
    if beta and c is None:
        raise OptionsError("beta", f"beta={beta!r} needs c")
    entry = plan_cache.get(device_id, key)
    if entry is None:
        entry = _build(a, b, c, alpha, beta, epilog, epilog_inputs, quantization_scales, options, preferences, device_id, stream)
        plan_cache.put(device_id, key, entry)
    plan = entry.plan
    handle = entry.current_stream(device_id) if stream is None else None
    if handle is None:
        handle = resolve_stream(stream, device_id).handle
    if handle != plan.stream_handle:
        entry.holder = resolve_stream(handle, device_id)
        plan.use_stream(entry.holder)
    plan.a_ptr.value = pointers["b"] or None  # cuBLASLt's A is the user's b
    plan.b_ptr.value = pointers["a"] or None
    if alpha != entry.alpha or beta != entry.beta:
        entry.runner.set_scalars(alpha, beta)
        entry.alpha, entry.beta = alpha, beta
    if key[4] is not None:
        _bind_extras(entry, a, b, c, epilog_inputs, quantization_scales)
    elif c is not None:
        plan.c_ptr.value = pointers["c"] or None
    if entry.fast:
        result, ptr = entry.runner.alloc_result(entry.holder)
        plan.d_ptr.value = ptr
        status = plan.launch(*plan.args)
        if status:
            plan.raise_status(status)
        return result
    return entry.runner.run(entry.holder)


def _bind_extras(entry, a, b, c, epilog_inputs, scales):
    """Point the plan at this call's c, epilog inputs and float8 scales."""
    inputs = {name: wrap_operand(value, f"epilog_inputs[{name!r}]") for name, value in (epilog_inputs or {}).items()}
    entry.runner.bind(wrap_operand(a, "a"), wrap_operand(b, "b"), wrap_operand(c, "c") if c is not None else None, inputs)
    if entry.runner.scale_keys:  # every call states its scales: those it omits are 1.0
        entry.runner.set_scales(check_quantization_scales(scales, entry.plan.problem), complete=True)


def _uncached(a, b, c, alpha, beta, epilog, epilog_inputs, scales, options, preferences, execution, stream):
    with Matmul(a, b, c, alpha=alpha, beta=beta, quantization_scales=scales, options=options, execution=execution,
                stream=stream) as mm:
        mm.plan(epilog=epilog, epilog_inputs=epilog_inputs, preferences=preferences)
        return mm.execute()
