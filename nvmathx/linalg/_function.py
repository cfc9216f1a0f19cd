"""The function form: matmul(a, b, ...) looks its plan up in a per-device LRU cache and runs it."""

from __future__ import annotations

import dataclasses
from typing import Any, overload

import numpy as np

from .._core.alignment import ALIGNMENT_OF_LOW_BYTE
from .._core.errors import UnsupportedOperandError
from .._core.execution import ExecutionCUDA, normalize_execution
from .._core.options import check_or_create_options
from .._core.tensor import key_function, operand_keys
from .._matmulcore.epilogs import EpilogLike, EpilogWithoutOutputs, EpilogWithOutputs, MatmulEpilog, epilog_spec
from ..typing import AnyArray, ArrayLike, ArrayT, ExecutionLike, HostArrayLike, NumpyArrayT, OptionsLike, StreamLike
from ._cached import CachedMatmul, plan_cache
from ._matmul import Matmul, plan_detached
from ._operands import has_array_likes, input_argument
from ._options import MatmulOptions, MatmulPlanPreferences

__all__ = ["matmul", "plan_key", "plan_cache"]


# Epilogs that go into a key as they are (planning checks them): names, codes and MatmulEpilogs.
_EPILOG_KEY_TYPES = (str, int, MatmulEpilog)


# -- keys ----------------------------------------------------------------------------------------


def plan_key(a: ArrayLike, b: ArrayLike, c: ArrayLike | None = None, *, epilog: EpilogLike = None,
             epilog_inputs: dict[str, Any] | None = None,
             quantization_scales: dict[str, Any] | None = None, options: OptionsLike = None,
             preferences: OptionsLike = None, execution: ExecutionLike = None) -> tuple:
    """The plan-cache key of a :func:`matmul` call: everything that changes the plan.

    The key is a hashable tuple built only from the arguments: each array's library, shape,
    strides, dtype, lazy-view flags (torch's conjugate and negative bits) and pointer alignment (up
    to 256 bytes), the epilog, which quantization scales are numbers or arrays, and the options,
    preferences and execution space. Values (pointers, ``alpha``, ``beta``, numeric scales) are
    not part of it.
    """
    return _key(a, b, c, epilog, epilog_inputs, quantization_scales, options, preferences, execution)[0]


def _key(a, b, c, epilog, epilog_inputs, scales, options, preferences, execution):
    """(key, device of a, addresses of a, b and c, addresses of the epilog inputs or None) of a call."""
    sig_a, a_ptr, device_id = (operand_keys.get(type(a)) or key_function(a, "a"))(a)
    sig_b, b_ptr, _ = (operand_keys.get(type(b)) or key_function(b, "b"))(b)
    sig_c = c_ptr = None
    if c is not None:
        sig_c, c_ptr, _ = (operand_keys.get(type(c)) or key_function(c, "c"))(c)
        sig_c = (sig_c, ALIGNMENT_OF_LOW_BYTE[c_ptr & 255])
    extra = input_pointers = None
    if epilog_inputs or scales:
        extra, input_pointers = _extra_key(epilog_inputs, scales)
    if epilog is not None and type(epilog) not in _EPILOG_KEY_TYPES:
        # A member of another IntEnum equals (and hashes as) its value: checked here, before a
        # cached plan of that code could answer for it; numpy integers become the MatmulEpilog.
        epilog = epilog_spec(epilog).epilog
    if options is not None or preferences is not None or execution is not None:
        options, preferences, execution = _normalized(options, preferences, execution, device_id)
    key = (sig_a, ALIGNMENT_OF_LOW_BYTE[a_ptr & 255], sig_b, ALIGNMENT_OF_LOW_BYTE[b_ptr & 255], sig_c, epilog, extra,
           options, preferences, execution)
    return key, device_id, a_ptr, b_ptr, c_ptr, input_pointers


_NO_SCALES = ("not a dict", "NoneType")  # the scale part of the key of a call without scales


def _extra_key(epilog_inputs, scales) -> tuple:
    """(the epilog inputs' signatures and which float8 scales are arrays, the inputs' addresses)."""
    if type(epilog_inputs) is dict and len(epilog_inputs) == 1:
        # one input (a bias, an aux): the layers' every call; the same key as the loop below makes
        ((name, value),) = epilog_inputs.items()
        signature, ptr, _ = (operand_keys.get(type(value)) or key_function(value, input_argument(name)))(value)
        inputs_key: tuple = ((name, signature, ALIGNMENT_OF_LOW_BYTE[ptr & 255]),)
        pointers = {name: ptr}
        if scales is None:
            return (inputs_key, _NO_SCALES), pointers
    else:
        inputs = []
        pointers = {}
        for name, value in sorted(epilog_inputs.items()) if isinstance(epilog_inputs, dict) else ():
            signature, ptr, _ = (operand_keys.get(type(value)) or key_function(value, input_argument(name)))(value)
            inputs.append((name, signature, ALIGNMENT_OF_LOW_BYTE[ptr & 255]))
            pointers[name] = ptr
        inputs_key = tuple(inputs)
    return (inputs_key, _scales_key(scales, pointers)), pointers


def _scales_key(scales, pointers: dict) -> tuple:
    """Which float8 scales are device arrays (with their signatures) and which numbers; the arrays'
    addresses go into ``pointers``."""
    if type(scales) is dict and len(scales) == 2:
        # a's and b's scales in device memory, arrays of a type seen before: the float8 layers'
        # every GEMM; the same key as the loop below makes
        (first, first_value), (second, second_value) = scales.items()
        first_key, second_key = operand_keys.get(type(first_value)), operand_keys.get(type(second_value))
        if first_key is not None and second_key is not None and type(first) is str and type(second) is str:
            first_signature, first_ptr, first_device = first_key(first_value)
            second_signature, second_ptr, second_device = second_key(second_value)
            if first_device >= 0 and second_device >= 0:
                pointers["scale:" + first] = first_ptr
                pointers["scale:" + second] = second_ptr
                if second < first:
                    return (second, "array", second_signature), (first, "array", first_signature)
                return (first, "array", first_signature), (second, "array", second_signature)
    if isinstance(scales, dict):
        kinds: list = []
        for k in sorted(scales, key=str):  # (str: the names may mix strings and enum members)
            device_scale = _device_scale(k, scales[k])
            if device_scale is not None:  # its signature keys the plan; its address is set per call
                kinds.append((k, "array", device_scale[0]))
                pointers[f"scale:{k}"] = device_scale[1]
            else:
                kinds.append((k, "number"))
        return tuple(kinds)
    return "not a dict", type(scales).__name__  # planning raises the typed error


def _device_scale(name, value) -> tuple | None:
    """(signature, address) of a float8 scale held in device memory; None for numbers and host arrays,
    whose values are read on each call."""
    key = operand_keys.get(type(value))  # an array type seen before: its key says where it lives
    if key is None:
        if not hasattr(value, "shape") or isinstance(value, (np.ndarray, np.generic)):
            return None
        key = key_function(value, f"quantization_scales[{name!r}]")
    signature, ptr, device_id = key(value)
    return (signature, ptr) if device_id >= 0 else None


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


def _plan(a, b, c, *, alpha, beta, epilog, epilog_inputs, scales, options, preferences, execution,
          stream) -> CachedMatmul:
    """A cache entry, planned as ``Matmul(...).plan(...)`` does (keeping only the best candidate)."""
    planned = plan_detached(a, b, c, alpha=alpha, beta=beta, epilog=epilog, epilog_inputs=epilog_inputs,
                            scales=scales, options=options, preferences=preferences, execution=execution,
                            stream=stream, keep=1)
    # Epilog inputs and float8 scales that are device arrays as they are are set by address per call.
    scales_by_pointer = not scales or all(_device_scale(k, v) is not None for k, v in scales.items())
    by_pointer = (bool(epilog_inputs or scales) and scales_by_pointer and not planned.views_copied
                  and not planned.inputs_copied)
    rebind = (bool(epilog_inputs or scales) or planned.views_copied) and not by_pointer
    return CachedMatmul(planned.runner, planned.streams, alpha=planned.alpha, beta=planned.beta, has_c=c is not None,
                        rebind=rebind, by_pointer=by_pointer)


# The result is the operands' kind (numpy.ndarray for numpy arrays and host array-likes), with the
# auxiliary outputs' dict where the epilog has them; an epilog known only at run time gives either
# (see nvmathx.typing). A numpy array also matches ArrayT, giving what the numpy overload before it
# gives; mypy's overlap check cannot see that through the TypeVar, hence its two ignores. numpy arrays
# are typed by a TypeVar of their own so that an array whose type holds Any (np.ndarray, NDArray[...])
# still selects one overload rather than making the result Any. The dicts of arrays are dict[str, Any]:
# dict is invariant, and a dict[str, numpy.ndarray] (a forward call's auxiliary outputs) must pass.
@overload
def matmul(a: NumpyArrayT, b: NumpyArrayT, c: NumpyArrayT | None = None, *, alpha: complex | ArrayLike = 1,
           beta: complex | ArrayLike = 0, epilog: EpilogWithOutputs, epilog_inputs: dict[str, Any] | None = None,
           quantization_scales: dict[str, Any] | None = None, options: OptionsLike = None,
           preferences: OptionsLike = None, execution: ExecutionLike = None,
           stream: StreamLike = None) -> tuple[np.ndarray, dict[str, np.ndarray]]: ...
@overload
def matmul(a: HostArrayLike, b: HostArrayLike, c: HostArrayLike | None = None, *, alpha: complex | ArrayLike = 1,
           beta: complex | ArrayLike = 0, epilog: EpilogWithOutputs, epilog_inputs: dict[str, Any] | None = None,
           quantization_scales: dict[str, Any] | None = None, options: OptionsLike = None,
           preferences: OptionsLike = None, execution: ExecutionLike = None,
           stream: StreamLike = None) -> tuple[np.ndarray, dict[str, np.ndarray]]: ...
@overload
def matmul(  # type: ignore[overload-overlap]
           a: ArrayT, b: ArrayT, c: ArrayT | None = None, *, alpha: complex | ArrayLike = 1,
           beta: complex | ArrayLike = 0, epilog: EpilogWithOutputs, epilog_inputs: dict[str, Any] | None = None,
           quantization_scales: dict[str, Any] | None = None, options: OptionsLike = None,
           preferences: OptionsLike = None, execution: ExecutionLike = None,
           stream: StreamLike = None) -> tuple[ArrayT, dict[str, ArrayT]]: ...
@overload
def matmul(a: NumpyArrayT, b: NumpyArrayT, c: NumpyArrayT | None = None, *, alpha: complex | ArrayLike = 1,
           beta: complex | ArrayLike = 0, epilog: EpilogWithoutOutputs = None,
           epilog_inputs: dict[str, Any] | None = None, quantization_scales: dict[str, Any] | None = None,
           options: OptionsLike = None, preferences: OptionsLike = None, execution: ExecutionLike = None,
           stream: StreamLike = None) -> np.ndarray: ...
@overload
def matmul(a: HostArrayLike, b: HostArrayLike, c: HostArrayLike | None = None, *, alpha: complex | ArrayLike = 1,
           beta: complex | ArrayLike = 0, epilog: EpilogWithoutOutputs = None,
           epilog_inputs: dict[str, Any] | None = None, quantization_scales: dict[str, Any] | None = None,
           options: OptionsLike = None, preferences: OptionsLike = None, execution: ExecutionLike = None,
           stream: StreamLike = None) -> np.ndarray: ...
@overload
def matmul(  # type: ignore[overload-overlap]
           a: ArrayT, b: ArrayT, c: ArrayT | None = None, *, alpha: complex | ArrayLike = 1,
           beta: complex | ArrayLike = 0, epilog: EpilogWithoutOutputs = None,
           epilog_inputs: dict[str, Any] | None = None, quantization_scales: dict[str, Any] | None = None,
           options: OptionsLike = None, preferences: OptionsLike = None, execution: ExecutionLike = None,
           stream: StreamLike = None) -> ArrayT: ...
@overload
def matmul(a: NumpyArrayT, b: NumpyArrayT, c: NumpyArrayT | None = None, *, alpha: complex | ArrayLike = 1,
           beta: complex | ArrayLike = 0, epilog: EpilogLike, epilog_inputs: dict[str, Any] | None = None,
           quantization_scales: dict[str, Any] | None = None, options: OptionsLike = None,
           preferences: OptionsLike = None, execution: ExecutionLike = None,
           stream: StreamLike = None) -> np.ndarray | tuple[np.ndarray, dict[str, np.ndarray]]: ...
@overload
def matmul(a: HostArrayLike, b: HostArrayLike, c: HostArrayLike | None = None, *, alpha: complex | ArrayLike = 1,
           beta: complex | ArrayLike = 0, epilog: EpilogLike, epilog_inputs: dict[str, Any] | None = None,
           quantization_scales: dict[str, Any] | None = None, options: OptionsLike = None,
           preferences: OptionsLike = None, execution: ExecutionLike = None,
           stream: StreamLike = None) -> np.ndarray | tuple[np.ndarray, dict[str, np.ndarray]]: ...
@overload
def matmul(a: ArrayT, b: ArrayT, c: ArrayT | None = None, *, alpha: complex | ArrayLike = 1,
           beta: complex | ArrayLike = 0, epilog: EpilogLike, epilog_inputs: dict[str, Any] | None = None,
           quantization_scales: dict[str, Any] | None = None, options: OptionsLike = None,
           preferences: OptionsLike = None, execution: ExecutionLike = None,
           stream: StreamLike = None) -> ArrayT | tuple[ArrayT, dict[str, ArrayT]]: ...
def matmul(a: ArrayLike, b: ArrayLike, c: ArrayLike | None = None, *, alpha: complex | ArrayLike = 1,
           beta: complex | ArrayLike = 0, epilog: EpilogLike = None, epilog_inputs: dict[str, Any] | None = None,
           quantization_scales: dict[str, Any] | None = None, options: OptionsLike = None,
           preferences: OptionsLike = None, execution: ExecutionLike = None, stream: StreamLike = None) -> AnyArray:
    """Matrix product ``alpha * a @ b + beta * c`` followed by an epilog, with numpy.matmul semantics.

    The semantics, arguments and errors are those of :class:`Matmul` (construction, ``plan()``
    and ``execute()`` in one call): numpy.matmul's 1-D promotion and batch broadcasting (e.g.
    ``(2, 1, M, K) @ (3, K, N)`` gives ``(2, 3, M, N)``), and ``c`` unread when ``beta`` is 0.
    GPU plans are kept in :data:`plan_cache`, keyed by :func:`plan_key`, so a repeated
    call costs a key computation, a lookup and the library call. Host (numpy) operands run on the
    CPU unless ``execution="cuda"``, which copies them to the GPU and back (that path is not
    cached). Lists, tuples and Python or numpy scalars are taken as ``numpy.matmul`` takes them:
    converted with ``numpy.asarray``, they are that numpy array (dtype and host memory included),
    exactly as :class:`Matmul` takes them.

    Parameters
    ----------
    a, b : array or array-like
        ``(..., M, K)`` and ``(..., K, N)`` arrays (or 1-D, promoted as numpy.matmul promotes
        them) of one library on one device: numpy, cupy, torch, jax or any DLPack / CUDA Array
        Interface producer. Transposed and Fortran-ordered views are used without copies.
    c : array or array-like, optional
        Addend of the result's shape, or of its matrix shape ``(M, N)`` under batch dimensions
        that broadcast to the result's. Read only when ``beta`` is not 0.
    alpha, beta : number
        Scalars (Python or numpy numbers, or 0-d numpy arrays); ``beta`` needs ``c``.
    epilog : MatmulEpilog, str, int or None
        The operation fused after the product: ``"RELU"``, ``"RELU_AUX"``, ``"BIAS"``,
        ``"RELU_BIAS"``, ``"RELU_AUX_BIAS"``, ``"GELU"`` (tanh approximation), ``"GELU_AUX"``,
        ``"GELU_BIAS"``, ``"GELU_AUX_BIAS"``, and for backward passes ``"DRELU"``,
        ``"DRELU_BGRAD"``, ``"DGELU"``, ``"DGELU_BGRAD"``, ``"BGRADA"``, ``"BGRADB"`` (a
        :class:`MatmulEpilog` member, its name in any case, or its cuBLASLt code).
    epilog_inputs : dict, optional
        What the epilog reads: ``{"bias": ...}`` (shape ``(N,)``, the per-output-feature bias of
        ``x @ W + b``), ``{"relu_aux": ...}`` or ``{"gelu_aux": ...}`` (a forward pass's auxiliary
        output, for the D* epilogs).
    quantization_scales : dict, optional
        float8 only: per-tensor scales ``{"a": sa, "b": sb, "d": sd}`` (numbers, or one-element
        float32 device arrays read at execution).
    options : MatmulOptions, dict or None
        Compute type, result type, workspace limit, memory resource, logger (see
        :class:`MatmulOptions`).
    preferences : MatmulPlanPreferences, dict or None
        What cuBLASLt's heuristic may return, and ``{"autotune": True}`` to time its candidates
        when the plan is made and keep the fastest (see :class:`MatmulPlanPreferences`).
    execution : "cuda", "cpu", ExecutionCUDA, ExecutionCPU, dict or None
        Where to run. None: where the operands live (numpy arrays run on the CPU);
        ``"cuda"`` with host operands copies them to the GPU and the result back (not cached).
    stream : cuda.core Stream, object with ``__cuda_stream__``, int or None
        The stream to run on (default: the operand library's current stream, else the device's
        default stream). CPU execution takes none.

    Returns
    -------
    array or (array, dict)
        The result, an array of the operands' library on their device; for epilogs with
        auxiliary outputs (``*_AUX*``, ``*_BGRAD``, ``BGRADA``, ``BGRADB``), ``(result, aux)``
        where ``aux`` is a dict (``"relu_aux"``, ``"gelu_aux"``, ``"drelu_bgrad"``, ...).

    Raises
    ------
    OperandError
        Shapes that do not multiply or broadcast, operands of different devices or libraries, an
        epilog input of the wrong shape; the message starts with the argument's name.
    UnsupportedOperandError
        An object that is no array, or an unsupported dtype.
    UnsupportedLayoutError
        A layout cuBLASLt cannot read without a copy.
    OptionsError
        An unknown epilog, option or preference, ``beta`` without ``c``, or a bad ``execution`` or
        ``stream``.
    DeviceUnavailableError
        ``execution="cuda"`` where no GPU or driver is present.

    See Also
    --------
    Matmul : the stateful form (plan once, execute many times, autotune).

    Examples
    --------
    >>> import numpy as np
    >>> from nvmathx.linalg import matmul
    >>> x, w, bias = np.ones((2, 3), np.float32), np.ones((3, 4), np.float32), np.arange(4, dtype=np.float32)
    >>> matmul(x, w, epilog="RELU_BIAS", epilog_inputs={"bias": bias - 4})
    array([[0., 0., 1., 2.],
           [0., 0., 1., 2.]], dtype=float32)
    """
    try:
        key, device_id, a_ptr, b_ptr, c_ptr, input_pointers = _key(a, b, c, epilog, epilog_inputs,
                                                                   quantization_scales, options, preferences, execution)
    except UnsupportedOperandError:
        if not has_array_likes(a, b, c, epilog_inputs):
            raise
        # Lists and scalars become numpy arrays (in Matmul), which take the uncached path.
        return _uncached(a, b, c, alpha=alpha, beta=beta, epilog=epilog, epilog_inputs=epilog_inputs,
                         scales=quantization_scales, options=options, preferences=preferences, execution=execution,
                         stream=stream)
    if device_id < 0 or not (execution is None or execution == "cuda"
                             or (isinstance(execution, ExecutionCUDA) and execution.device_id == device_id)):
        return _uncached(a, b, c, alpha=alpha, beta=beta, epilog=epilog, epilog_inputs=epilog_inputs,
                         scales=quantization_scales, options=options, preferences=preferences, execution=execution,
                         stream=stream)
    entry = plan_cache.get(device_id, key)
    if entry is None:
        entry = _plan(a, b, c, alpha=alpha, beta=beta, epilog=epilog, epilog_inputs=epilog_inputs,
                      scales=quantization_scales, options=options, preferences=preferences, execution=execution,
                      stream=stream)
        plan_cache.put(device_id, key, entry)
    if alpha is not entry.alpha or beta is not entry.beta:  # values checked once, when they change
        entry.set_scalars(alpha, beta)
    if entry.by_pointer:
        entry.runner.set_input_pointers(input_pointers)
    elif entry.rebind:
        return entry.run_bound(a, b, c, epilog_inputs, quantization_scales, stream)
    return entry.runner.run(entry.streams(stream), a_ptr, b_ptr, c_ptr)


def _uncached(a, b, c, *, alpha, beta, epilog, epilog_inputs, scales, options, preferences, execution, stream):
    with Matmul(a, b, c, alpha=alpha, beta=beta, quantization_scales=scales, options=options, execution=execution,
                stream=stream) as mm:
        mm.plan(epilog=epilog, epilog_inputs=epilog_inputs, preferences=preferences)
        return mm.execute()
