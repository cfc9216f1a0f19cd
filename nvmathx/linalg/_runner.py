"""A cuBLASLt plan bound to operands: pointers, scalars, float8 scales, outputs and host copies."""

from __future__ import annotations

import numpy as np

from .._bindings import cublaslt as lt
from .._core.device_array import DeviceArray
from .._core.errors import OperandError
from .._core.memory import allocate
from .._core.tensor import Operand, copy_to_host, wrap_operand
from ._calls import BatchCalls
from ._cublaslt_plan import LtPlan
from ._operands import make_allocator
from ._options import FP8_DTYPES

__all__ = ["GpuRunner"]

_D = lt.MatmulDescAttribute
# Under D^T = B^T A^T, cuBLASLt's A is the user's b and its B the user's a.
_SCALE_ATTRIBUTES = {"a": _D.B_SCALE_POINTER, "b": _D.A_SCALE_POINTER, "d": _D.D_SCALE_POINTER}
_SCALE_SLOTS = {"a": 0, "b": 1, "d": 2}
_SCALE_SLOT_BYTES = 16  # each scale on its own 16-byte boundary


class GpuRunner:
    """Runs one LtPlan on bound device operands and returns results of the caller's library.

    ``host_like`` is the caller's host operand when the operands were staged from host memory
    (results are then copied back), else None.
    """

    def __init__(self, plan: LtPlan, like: Operand, stream, host_like: Operand | None, blocking: bool):
        self.plan = plan
        self.like = like
        self.stream = stream
        self.host_like = host_like
        self.blocking = blocking or host_like is not None
        problem, traits = plan.problem, plan.traits
        mr = plan.options.memory_resource
        self.alloc_result = make_allocator(like, problem.shape.result_shape, problem.result_dtype, plan.device_id, mr)
        self.outputs = []  # (name, allocator, descriptor attribute, columns to keep or None)
        epilog = problem.epilog
        if epilog is not None and epilog.aux_output:
            dtype = "uint8" if epilog.aux_output == "relu_aux" else problem.result_dtype
            keep = problem.shape.n if epilog.aux_output == "gelu_aux" and traits.aux_shape[-1] != problem.shape.n else None
            self.outputs.append((epilog.aux_output, make_allocator(like, traits.aux_shape, dtype, plan.device_id, mr),
                                 _D.EPILOGUE_AUX_POINTER, keep))
        if epilog is not None and epilog.bgrad:
            self.outputs.append((epilog.bgrad, make_allocator(like, traits.bgrad_shape, problem.result_dtype, plan.device_id, mr),
                                 _D.BIAS_POINTER, None))
        if problem.result_amax:
            self.outputs.append(("result_amax", make_allocator(like, (), "float32", plan.device_id, mr), _D.AMAX_D_POINTER, None))
        self.kept = {}  # operands whose pointers the plan holds
        self.output_pointers = {}  # name -> address of the latest auxiliary outputs
        # A batch that one cuBLASLt call cannot cover runs as several (None: one call, the fast path).
        self.calls = None if traits.batches is None or traits.batches.single else BatchCalls(plan, stream, mr)
        self.scale_buffer = None
        self.scale_keys = ()
        self.scale_values = np.ones(_SCALE_SLOT_BYTES // 4 * len(_SCALE_SLOTS), np.float32)
        if problem.is_fp8:
            self._point_scales_at_buffer()

    # -- binding -------------------------------------------------------------------------------

    def bind(self, a: Operand, b: Operand, c: Operand | None, inputs: dict) -> None:
        plan = self.plan
        plan.a_ptr.value = b.ptr or None  # cuBLASLt's A is the user's b
        plan.b_ptr.value = a.ptr or None
        if c is not None:
            plan.c_ptr.value = c.ptr or None
        elif plan.problem.bias_mode == "fold":
            plan.c_ptr.value = inputs["bias"].ptr or None
        else:
            plan.c_ptr.value = None
        if plan.problem.bias_mode == "fused":
            plan.set_pointer(_D.BIAS_POINTER, inputs["bias"].ptr)
        epilog = plan.problem.epilog
        if epilog is not None and epilog.aux_input:
            plan.set_pointer(_D.EPILOGUE_AUX_POINTER, inputs[epilog.aux_input].ptr)
        self.kept = {"a": a, "b": b, "c": c, **inputs}

    def set_scalars(self, alpha, beta) -> None:
        plan = self.plan
        plan.alpha[0] = alpha
        plan.beta[0] = 1 if plan.problem.bias_mode == "fold" else beta

    def _point_scales_at_buffer(self) -> None:
        """Point every float8 scale (and the amax output) somewhere before the heuristic runs.

        cuBLASLt picks float8 kernels for the descriptor as it is when asked: an algorithm found
        with no scale pointers fails with CUBLAS_STATUS_NOT_SUPPORTED once they are set. So the
        scales start as 1.0 in our buffer and :meth:`set_scales` only moves pointers or values.
        """
        plan = self.plan
        problem = plan.problem
        self.scale_keys = ("a", "b", "d") if problem.result_dtype in FP8_DTYPES else ("a", "b")
        self.scale_buffer = allocate(_SCALE_SLOT_BYTES * len(_SCALE_SLOTS), self.stream, plan.device_id,
                                     plan.options.memory_resource)
        for key in self.scale_keys:
            plan.set_pointer(_SCALE_ATTRIBUTES[key], self._slot_address(key))
        self._upload_scales()

    def _slot_address(self, key: str) -> int:
        return int(self.scale_buffer.handle) + _SCALE_SLOT_BYTES * _SCALE_SLOTS[key]

    def _upload_scales(self) -> None:
        from .._bindings.cuda_driver import memcpy_async, stream_synchronize

        memcpy_async(int(self.scale_buffer.handle), self.scale_values.ctypes.data, self.scale_values.nbytes, self.stream.handle)
        stream_synchronize(self.stream.handle)

    def set_scales(self, scales: dict, complete: bool = False) -> None:
        """Point cuBLASLt at the float8 scales: device arrays as they are, numbers through our buffer.

        ``complete``: ``scales`` is the whole set (a scale not given is 1.0), else an update.
        """
        if self.scale_buffer is None:
            return
        plan = self.plan
        changed = False
        for key in self.scale_keys:
            if key not in scales and not complete:
                continue
            value = scales.get(key, 1.0)
            if hasattr(value, "shape"):
                operand = wrap_operand(value, f"quantization_scales[{key!r}]")
                if operand.dtype != np.float32 or operand.size != 1:
                    raise OperandError(f"quantization_scales[{key!r}]", f"expected one float32 element (got {operand.dtype}, shape {operand.shape})")
                if operand.device_id == plan.device_id:
                    plan.set_pointer(_SCALE_ATTRIBUTES[key], operand.ptr)
                    self.kept[f"scale_{key}"] = operand
                    continue
                if operand.device_id >= 0:
                    raise OperandError(f"quantization_scales[{key!r}]", f"lives on GPU {operand.device_id}, not {plan.device_id}")
                value = float(np.asarray(value, dtype=np.float32).reshape(-1)[0])
            index = _SCALE_SLOT_BYTES // 4 * _SCALE_SLOTS[key]
            changed = changed or self.scale_values[index] != np.float32(value)
            self.scale_values[index] = value
            plan.set_pointer(_SCALE_ATTRIBUTES[key], self._slot_address(key))
        if changed:
            self._upload_scales()

    # -- running -------------------------------------------------------------------------------

    def allocate_outputs(self, stream) -> dict:
        """New auxiliary output arrays, with the descriptor pointed at them."""
        arrays = {}
        for name, alloc, attribute, _ in self.outputs:
            array, ptr = alloc(stream)
            self.plan.set_pointer(attribute, ptr)
            arrays[name] = array
            self.output_pointers[name] = ptr
        return arrays

    def run(self, stream):
        """Allocate the result (and outputs), run, and return them in the caller's library."""
        plan = self.plan
        outputs = self.allocate_outputs(stream) if self.outputs else None
        result, ptr = self.alloc_result(stream)
        plan.d_ptr.value = ptr
        if self.calls is None:
            plan.run()
        else:
            self.calls.run(plan, self, stream)
        if self.host_like is not None:
            result = self._to_host(result, stream)
            if outputs is not None:  # no outputs stays None: the caller gets the bare result
                outputs = {name: self._to_host(array, stream) for name, array in outputs.items()}
        elif self.blocking:
            from .._bindings.cuda_driver import stream_synchronize

            stream_synchronize(stream.handle)
        if outputs is None:
            return result
        for name, _, _, keep in self.outputs:
            if keep is not None:
                outputs[name] = _first_columns(outputs[name], keep)
        return result, outputs

    def _to_host(self, array, stream):
        device = wrap_operand(array, "result") if not isinstance(array, Operand) else array
        return copy_to_host(device, self.host_like, stream)

    def scratch(self, stream):
        """(result, pointer, outputs) to autotune into: fresh buffers, never the caller's arrays."""
        outputs = self.allocate_outputs(stream) if self.outputs else {}
        result, ptr = self.alloc_result(stream)
        if self.calls is not None:  # autotune times the first call: on the copies, where planned
            self.calls.prepare_single(self.plan, self, stream)
        return result, ptr, outputs

    def free(self) -> None:
        if self.calls is not None:
            self.calls.free(self.stream)
            self.calls = None
        if self.scale_buffer is not None:
            self.scale_buffer.close(self.stream.core)
            self.scale_buffer = None
        self.kept = {}


def _first_columns(array, count: int):
    """``array[..., :count]`` for any array library, DeviceArray included."""
    if isinstance(array, DeviceArray):
        return DeviceArray(array.buffer, array.ptr, array.shape[:-1] + (count,), array.strides, array.dtype,
                           array.device_id, array.stream)
    return array[..., :count]
