"""The matmul runner: one cuBLASLt plan bound to device operands, and the one place that writes
cublasLtMatmul's arguments and launches it (for ``Matmul.execute``, the cached plans of ``matmul()``
and autotuning)."""

from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING, Any

import numpy as np

from .._bindings import cublaslt as lt
from .._bindings import cuda_driver
from .._core.device_array import DeviceArray
from .._core.errors import InvalidStateError, OperandError
from .._core.memory import Workspace, allocate
from .._core.streams import StreamHolder
from .._core.tensor import Operand, copy_to_host, wrap_operand
from .._matmulcore.epilogs import GELU_AUX_NAME, RELU_AUX_NAME
from . import _kernels
from ._batching import LAUNCH_OPERANDS
from ._cublaslt_plan import LtPlan, MatmulAlgorithm, workspace_bytes_for
from ._options import FP8_DTYPES

if TYPE_CHECKING:
    from ._calls import BatchCopies

__all__ = ["GpuRunner", "scale_operand", "first_columns"]

_D = lt.MatmulDescAttribute
# Under D^T = B^T A^T, cuBLASLt's A is the user's b and its B the user's a.
_SCALE_ATTRIBUTES = {"a": _D.B_SCALE_POINTER, "b": _D.A_SCALE_POINTER, "d": _D.D_SCALE_POINTER}
_SCALE_SLOTS = {"a": 0, "b": 1, "d": 2}
_SCALE_SLOT_BYTES = 16  # each scale on its own 16-byte boundary


def _slot_index(key: str) -> int:
    """Where scale ``key`` sits in the float32 scale values (and buffer)."""
    return _SCALE_SLOT_BYTES // 4 * _SCALE_SLOTS[key]
_OFFSET_ATTRIBUTES = (_D.BIAS_POINTER, _D.EPILOGUE_AUX_POINTER, _D.BIAS_POINTER)  # bias, aux, bgrad


class GpuRunner:
    """Runs one LtPlan on bound device operands and returns results of the caller's library.

    The launch arguments are prepared once (:meth:`prepare`); a call sets the pointers that change
    and launches. The runner owns the plan, its workspace and the stream it runs on: a call on
    another stream is ordered after the workspace's last use (see :func:`~nvmathx._core.streams.order_after`).

    Parameters
    ----------
    plan : LtPlan
    like : Operand
        A device operand of the caller's library (results are made in it).
    stream : StreamHolder
        The stream for planning (workspace, float8 scales).
    host_like : Operand or None
        The caller's host operand when the operands were staged from host memory (results are
        then copied back), else None.
    blocking : bool
        Wait for each result before returning it.
    """

    def __init__(self, plan: LtPlan, like: Operand, stream: StreamHolder, *, host_like: Operand | None = None,
                 blocking: bool = False):
        self.plan = plan
        self.stream: StreamHolder | None = stream  # None after release_workspace: the next run binds one
        self.host_like = host_like
        self.blocking = blocking or host_like is not None
        problem, traits = plan.problem, plan.traits
        device_id, mr = plan.device_id, plan.options.memory_resource
        allocator = like.adapter.result_allocator
        self._allocate = allocator(problem.shape.result_shape, problem.result_dtype, device_id, memory_resource=mr)
        # (name, allocator, descriptor attribute, columns to keep or None)
        self.outputs: list[tuple[str, Any, int, int | None]] = []
        epilog = problem.epilog
        if epilog is not None and epilog.aux_output:
            dtype = "uint8" if epilog.aux_output == RELU_AUX_NAME else problem.result_dtype
            aux_shape = traits.aux_shape
            assert aux_shape is not None  # lt_traits sizes the output of every epilog that has one
            padded = epilog.aux_output == GELU_AUX_NAME and aux_shape[-1] != problem.shape.n
            keep = problem.shape.n if padded else None
            self.outputs.append((epilog.aux_output, allocator(aux_shape, dtype, device_id, memory_resource=mr),
                                 _D.EPILOGUE_AUX_POINTER, keep))
        if epilog is not None and epilog.bgrad:
            self.outputs.append((epilog.bgrad, allocator(traits.bgrad_shape, problem.result_dtype, device_id,
                                                         memory_resource=mr), _D.BIAS_POINTER, None))
        if problem.result_amax:
            self.outputs.append(("result_amax", allocator((), "float32", device_id, memory_resource=mr),
                                 _D.AMAX_D_POINTER, None))
        self.launch_offsets: tuple[tuple[int, ...], ...] = ()  # see set_launch_offsets
        # inputs copied to the full batch before the launches (see set_launch_offsets)
        self.copies: BatchCopies | None = None
        # descriptor attribute -> the address last set (the base of its launch offsets)
        self.pointers: dict[int, int] = {}
        self._simple = not self.outputs and not self.blocking  # run() allocates, launches, returns
        self.kept: dict[str, Any] = {}  # operands whose pointers the plan holds
        # cublasLtMatmul's arguments: the slots that change between calls, then the whole tuple.
        self._a, self._b, self._c, self._d = (ctypes.c_void_p(0) for _ in range(4))
        self._workspace_ptr = ctypes.c_void_p(0)
        self._workspace_size = ctypes.c_size_t(0)
        self._stream_ptr = ctypes.c_void_p(0)
        self._algo = (ctypes.c_uint64 * 8)()
        self._args: Any = None  # launch_arguments' tuple, set by prepare()
        self._launch: Any = None  # the ctypes cublasLtMatmul, set by prepare()
        self.workspace = Workspace(device_id, mr)
        self.algorithms: list[MatmulAlgorithm] = []
        self.algorithm: MatmulAlgorithm | None = None
        self.scale_buffer: Any = None  # a cuda.core Buffer where float8 scales need one
        self.scale_keys: tuple[str, ...] = ()
        self.scale_pointers: dict[str, int] = {}  # where each scale's descriptor attribute points
        self.scale_copies: dict[str, int] = {}  # device scales not 16-byte aligned: copied to their slot per run
        self.scale_values = np.ones(_SCALE_SLOT_BYTES // 4 * len(_SCALE_SLOTS), np.float32)
        if problem.is_fp8:
            self._point_scales_at_buffer(stream)

    @property
    def problem(self):
        return self.plan.problem

    # -- binding -------------------------------------------------------------------------------

    def bind(self, a: Operand, b: Operand, c: Operand | None, inputs: dict) -> None:
        """Point the plan at these operands (of the planned layouts) and keep them alive."""
        self._a.value = b.ptr  # cuBLASLt's A is the user's b
        self._b.value = a.ptr
        self._c.value = c.ptr if c is not None else None
        self.set_input_pointers({name: operand.ptr for name, operand in inputs.items()})
        self.kept = {"a": a, "b": b, "c": c, **inputs}

    def set_input_pointers(self, pointers: dict) -> None:
        """Point the plan at epilog inputs by address (``{"bias": ptr}``, ``{"gelu_aux": ptr}``, ...),
        of the layouts planned; a bias added through C (no ``c``) takes C's slot."""
        problem = self.plan.problem
        if problem.bias_mode == "fold":
            self._c.value = pointers["bias"]
        elif problem.bias_mode == "fused":
            self._set_pointer(_D.BIAS_POINTER, pointers["bias"])
        epilog = problem.epilog
        if epilog is not None and epilog.aux_input:
            self._set_pointer(_D.EPILOGUE_AUX_POINTER, pointers[epilog.aux_input])
        for key in self.scale_keys:  # float8 scales given as device arrays (``"scale:a"``, ...)
            pointer = pointers.get("scale:" + key)
            if pointer is not None:
                self._point_device_scale(key, pointer)

    def _set_pointer(self, attribute, ptr: int) -> None:
        if self.pointers.get(attribute) != ptr:  # a bias stays where it is from call to call: no C call
            self.plan.set_pointer(attribute, ptr)
            self.pointers[attribute] = ptr

    def unbind(self) -> None:
        """Forget the bound operands (a cached plan must not keep its first caller's arrays alive)."""
        self.kept = {}

    def set_scalars(self, alpha, beta) -> None:
        """Write checked alpha and beta (see ``check_scalars``)."""
        plan = self.plan
        plan.alpha[0] = alpha
        plan.beta[0] = 1 if plan.problem.bias_mode == "fold" else beta

    def _point_scales_at_buffer(self, stream: StreamHolder) -> None:
        """Point every float8 scale (and the amax output) somewhere before the heuristic runs.

        cuBLASLt picks float8 kernels for the descriptor as it is when asked: an algorithm found
        with no scale pointers fails with CUBLAS_STATUS_NOT_SUPPORTED once they are set. So the
        scales start as 1.0 in our buffer and :meth:`set_scales` only moves pointers or values.
        """
        plan = self.plan
        problem = plan.problem
        self.scale_keys = ("a", "b", "d") if problem.result_dtype in FP8_DTYPES else ("a", "b")
        self.scale_buffer = allocate(_SCALE_SLOT_BYTES * len(_SCALE_SLOTS), stream, plan.device_id,
                                     plan.options.memory_resource)
        for key in self.scale_keys:
            self._point_scale(key, self._slot_address(key))
        self._upload_scales(stream)

    def _point_scale(self, key: str, pointer: int) -> None:
        """Set scale ``key``'s descriptor pointer, unless it already points there (a C call saved
        on every execution whose scales stay where they were)."""
        if self.scale_pointers.get(key) != pointer:
            self.plan.set_pointer(_SCALE_ATTRIBUTES[key], pointer)
            self.scale_pointers[key] = pointer

    def _point_device_scale(self, key: str, pointer: int) -> None:
        """Point scale ``key`` at a device float. cuBLASLt refuses a float8 scale that is not 16-byte
        aligned (CUBLAS_STATUS_NOT_SUPPORTED at launch): such a scale
        is copied into the plan's own slot on each run's stream, before the product."""
        if pointer % _SCALE_SLOT_BYTES:
            self.scale_copies[key] = pointer
            self.scale_values[_slot_index(key)] = np.nan  # the slot stops holding the last number given
            pointer = self._slot_address(key)
        elif self.scale_copies:
            self.scale_copies.pop(key, None)
        self._point_scale(key, pointer)

    def _copy_scales(self, stream: StreamHolder) -> None:
        for key, source in self.scale_copies.items():
            _kernels.launch(stream, self.plan.device_id, "copy_float8_scale", 1, source, self._slot_address(key))

    def _slot_address(self, key: str) -> int:
        return int(self.scale_buffer.handle) + _SCALE_SLOT_BYTES * _SCALE_SLOTS[key]

    def _upload_scales(self, stream: StreamHolder) -> None:
        # As kernel arguments: no host copy to wait for (a pageable copy needs a synchronisation) and
        # nothing a CUDA graph cannot capture (a replay writes the captured values).
        values = [np.float32(self.scale_values[_slot_index(key)]) for key in "abd"]
        _kernels.launch(stream, self.plan.device_id, "set_float8_scales", 1, int(self.scale_buffer.handle), *values)

    def set_scales(self, scales: dict, complete: bool = False, stream: StreamHolder | None = None) -> None:
        """Point cuBLASLt at the float8 scales: device arrays as they are, numbers through our buffer.

        ``complete``: ``scales`` is the whole set (a scale not given is 1.0), else an update.
        ``stream``: where changed numbers are uploaded; needed after :meth:`release_workspace`, which
        leaves the runner without one (default: the runner's stream).
        """
        if self.scale_buffer is None:
            return
        plan = self.plan
        changed = False
        for key in self.scale_keys:
            if key not in scales and not complete:
                continue
            operand, value = scale_operand(scales.get(key, 1.0), f"quantization_scales[{key!r}]", plan.device_id)
            if operand is not None:
                self._point_device_scale(key, operand.ptr)
                self.kept[f"scale_{key}"] = operand
                continue
            if self.scale_copies:
                self.scale_copies.pop(key, None)
            index = _slot_index(key)
            changed = changed or self.scale_values[index] != np.float32(value)
            self.scale_values[index] = value
            self._point_scale(key, self._slot_address(key))
        if changed:
            upload_stream = stream if stream is not None else self.stream
            if upload_stream is None:
                raise InvalidStateError("float8 scales changed with no stream to upload them on")
            self._upload_scales(upload_stream)

    # -- algorithms, workspace and stream ------------------------------------------------------

    def prepare(self, algorithms: list[MatmulAlgorithm]) -> None:
        """Make ``algorithms`` the candidates, allocate a workspace that fits every one of them (on
        the planning stream), select the first and build the launch arguments."""
        stream = self.stream
        if stream is None:
            raise InvalidStateError("prepare() needs the planning stream; the workspace was released")
        self.algorithms = list(algorithms)
        self._args = self.plan.launch_arguments(self._a, self._b, self._c, self._d, self._algo, self._workspace_ptr,
                                                self._workspace_size, self._stream_ptr)
        self._launch = lt.matmul_function()
        self.stream = None
        self.use_stream(stream)
        self.select(self.algorithms[0])

    def select(self, algorithm: MatmulAlgorithm) -> None:
        """Make ``algorithm`` the one that runs (its workspace must fit what was allocated)."""
        if algorithm.workspace_size > self.workspace.nbytes:
            raise OperandError("algorithm", f"needs {algorithm.workspace_size} bytes of workspace, more than planned "
                               f"({self.workspace.nbytes}); pass one of the algorithms plan() returned")
        ctypes.memmove(self._algo, algorithm.algo, lt.ALGO_SIZE)
        self.algorithm = algorithm

    def use_stream(self, stream: StreamHolder) -> None:
        """Run on ``stream`` from now on, ordered after the workspace's last use (allocated again
        after :meth:`release_workspace`)."""
        # Every call gets the whole workspace, whichever algorithm runs (as torch and nvmath-python
        # do), not just the bytes the heuristic reported for that algorithm.
        needed = workspace_bytes_for(self.algorithms, self.plan.problem.epilog is not None)
        self._workspace_ptr.value = self.workspace.ensure(needed, stream)
        self._workspace_size.value = self.workspace.nbytes if self._workspace_ptr.value else 0
        self._stream_ptr.value = stream.handle
        self.stream = stream

    def release_workspace(self) -> None:
        """Give the workspace back now; the next run allocates it again."""
        self.workspace.release()
        self._workspace_ptr.value = None
        self._workspace_size.value = 0
        self.stream = None  # the next run binds its stream, and with it a workspace

    @property
    def workspace_bytes(self) -> int:
        return self.workspace.nbytes

    # -- running -------------------------------------------------------------------------------

    def run(self, stream: StreamHolder, a: int | None = None, b: int = 0, c: int | None = None):
        """Run the selected algorithm on ``stream`` and return the result (with a dict of auxiliary
        outputs where the epilog makes some), in the caller's library.

        ``a``, ``b``, ``c``: the operands' addresses for this call (of the layouts the plan was made
        for; the function form's cache hits), else those bound.
        """
        if a is not None:
            self._a.value = b  # cuBLASLt's A is the user's b
            self._b.value = a
            if c is not None:  # (a plan made without c keeps its C pointer null)
                self._c.value = c
        if stream is not self.stream:
            self.use_stream(stream)
        if self.scale_copies:
            self._copy_scales(stream)
        if self._simple:
            result, ptr = self._allocate(stream)
            self._d.value = ptr
            status = self._launch(*self._args)
            if status:
                self.plan.raise_status(status)
            return result
        return self._run_with_outputs(stream)

    def set_launch_offsets(self, offsets, copies=None) -> None:
        """Launch the plan once per entry of ``offsets``, byte offsets in :data:`LAUNCH_OPERANDS`
        order (``(a, b, c, d)``, then optionally bias, aux and bias gradient) added to the bound
        addresses (for products one cuBLASLt batch cannot describe); empty (the default) launches
        it once at the bound addresses. ``copies`` (a :class:`~._calls.BatchCopies`), if given,
        copies inputs to the full batch before every run's launches; the launches then read the
        copies."""
        self.launch_offsets = tuple(tuple(int(offset) for offset in entry) for entry in offsets)
        if any(not 4 <= len(entry) <= len(LAUNCH_OPERANDS) for entry in self.launch_offsets):
            raise ValueError("launch offsets are (a, b, c, d[, bias, aux, bgrad]) byte offsets")
        if copies is not None and not self.launch_offsets:
            raise ValueError("copies need launch offsets")
        if self.copies is not None:
            self.copies.free(self.stream)
        self.copies = copies
        self._simple = not self.outputs and not self.blocking and not self.launch_offsets

    def launch(self) -> None:
        """cublasLtMatmul with the arguments as they are (autotuning points them at scratch), once per
        launch offset when there are some."""
        if self.launch_offsets:
            self._launch_at_offsets()
            return
        status = self._launch(*self._args)
        if status:
            self.plan.raise_status(status)

    def _launch_at_offsets(self) -> None:
        slots = (self._b, self._a, self._c, self._d)  # the user's a, b, c, d (cuBLASLt's B is the user's a)
        attributes = _OFFSET_ATTRIBUTES[:len(self.launch_offsets[0]) - 4]
        sources = [slot.value or 0 for slot in slots] + [self.pointers.get(attribute, 0) for attribute in attributes]
        bases = self.copies.copy(sources, self.stream) if self.copies is not None else sources
        set_pointer = self.plan.set_pointer
        try:
            for offsets in self.launch_offsets:
                for slot, base, offset in zip(slots, bases, offsets):
                    slot.value = base + offset if base else None
                for attribute, base, offset in zip(attributes, bases[4:], offsets[4:]):
                    if base:
                        set_pointer(attribute, base + offset)
                status = self._launch(*self._args)
                if status:
                    self.plan.raise_status(status)
        finally:  # back at the sources: the next run reads (and copies) them again
            for slot, base in zip(slots, sources):
                slot.value = base or None
            for attribute, base in zip(attributes, sources[4:]):
                if base:
                    set_pointer(attribute, base)

    def _allocate_outputs(self, stream) -> dict:
        """New auxiliary output arrays, with the descriptor pointed at them."""
        arrays = {}
        for name, allocate_output, attribute, _ in self.outputs:
            array, ptr = allocate_output(stream)
            self._set_pointer(attribute, ptr)
            arrays[name] = array
        return arrays

    def _run_with_outputs(self, stream):
        outputs = self._allocate_outputs(stream) if self.outputs else None
        result, self._d.value = self._allocate(stream)
        self.launch()
        host_like = self.host_like
        if host_like is not None:
            result = self._to_host(result, stream, host_like)
            if outputs is not None:  # no outputs stays None: the caller gets the bare result
                outputs = {name: self._to_host(array, stream, host_like) for name, array in outputs.items()}
        elif self.blocking:
            cuda_driver.stream_synchronize(stream.handle)
        if outputs is None:
            return result
        for name, _, _, keep in self.outputs:
            if keep is not None:
                outputs[name] = first_columns(outputs[name], keep)
        return result, outputs

    def _to_host(self, array: Any, stream: StreamHolder, host_like: Operand) -> Any:
        device = wrap_operand(array, "result") if not isinstance(array, Operand) else array
        return copy_to_host(device, host_like, stream)

    def scratch(self, stream) -> tuple:
        """Point the result and outputs at fresh buffers to autotune into, never the caller's
        arrays; returns them (to be kept while they are written)."""
        outputs = self._allocate_outputs(stream) if self.outputs else {}
        result, self._d.value = self._allocate(stream)
        return result, outputs

    def free(self) -> None:
        """Release the float8 scales, the workspace and the plan's descriptors. Safe to call twice."""
        try:
            if self.copies is not None:
                self.copies.free(self.stream)
                self.copies = None
            if self.scale_buffer is not None:
                self.scale_buffer.close(self.stream.core if self.stream is not None else None)
                self.scale_buffer = None
            self.workspace.release()
        finally:
            self.kept = {}
            self._args = None
            self.plan.free()


def scale_operand(value, argument: str, device_id: int) -> tuple:
    """(the Operand of a float8 scale held on ``device_id``, None) or (None, its value as a float)
    for a number or a host array; OperandError for another dtype, size or device."""
    if not hasattr(value, "shape"):
        return None, float(value)
    operand = wrap_operand(value, argument)
    if operand.dtype != np.float32 or operand.size != 1:
        raise OperandError(argument, f"expected one float32 element (got {operand.dtype}, shape {operand.shape})")
    if operand.device_id == device_id:
        return operand, None
    if operand.device_id >= 0:
        raise OperandError(argument, f"lives on GPU {operand.device_id}, not {device_id}")
    return None, float(np.asarray(value, dtype=np.float32).reshape(-1)[0])


def first_columns(array, count: int):
    """``array[..., :count]`` for any array library, DeviceArray included."""
    if isinstance(array, DeviceArray):
        return DeviceArray(array.buffer, array.ptr, array.shape[:-1] + (count,), array.strides, array.dtype,
                           array.device_id, array.stream)
    return array[..., :count]
