"""The float8 forward and backward passes of the layers on CUDA: casts (:mod:`.kernels`) and float8
GEMMs (:func:`nvmathx.linalg.matmul` with dequantisation scales), in the user's row-major frame.

Hopper's float8 GEMMs take both operands K-major, so every product below is ``a @ b`` with ``a``
row-major and ``b`` the transpose of a row-major matrix (a transpose flag, no copy); each tensor
is cast once, to the layout (or the two layouts) its GEMMs read:

==============  ==========================  ===========================  =========================
pass            product                     ``a``                        ``b``
==============  ==========================  ===========================  =========================
forward         ``x @ W.T`` (+ bias)        x8                           W8.T
input grad      ``g @ W``                   g8                           (W8t).T, W8t = W8 transposed
weight grad     ``g.T @ x``                 g8t = g8 transposed          (x8t).T
==============  ==========================  ===========================  =========================

The block's hidden activation ``h = act(z)`` is cast from the pre-activation ``z`` (written by
the first GEMM with its bias) in the same kernel that applies the activation; the gradient
through the activation, ``dz = (g @ W2) * act'(z)``, is applied in the kernel that casts ``dz``
and sums its bias gradient. Saved for the backward pass: x8t, z and h8t (float8 copies and one
tensor of the layer's dtype, less than the unquantised layers keep).
"""

from __future__ import annotations

import weakref

import numpy as np
import torch

from ..._core.streams import resolve_stream
from ...linalg import MatmulOptions
from .._column_sums import current_stream_handle as torch_stream_handle
from .._column_sums import dtype_name, sum_partials, vector_aligned_at
from .._fused import preferences_for
from .._gemm_calls import gemm
from .._reference import activate
from . import kernels
from .state import SCALE_STRIDE, Float8State, is_padded, slot_mask

__all__ = ["Cast", "Pass", "linear_backward", "linear_forward", "mlp_backward", "mlp_forward"]

_OPTIONS: dict = {}


def _options(dtype: torch.dtype, fast: bool) -> MatmulOptions:
    key = (dtype, fast)
    options = _OPTIONS.get(key)
    if options is None:
        options = _OPTIONS[key] = MatmulOptions(result_type=dtype_name(dtype), fast_accumulation=fast)
    return options


# The three facts a pass asks torch.cuda (module functions, so host tests can answer them).
def device_id(device: torch.device) -> int:
    return device.index if device.index is not None else torch.cuda.current_device()


def current_stream_handle(device: torch.device) -> int:
    return torch_stream_handle(device_id(device))


def capturing() -> bool:
    return torch.cuda.is_current_stream_capturing()


# The kernels' 32-bit arguments that take few values (op codes, flags, booleans), made once:
# making a numpy scalar costs more than looking one up. (64-bit ones are Python ints, see kernels.launch.)
_INT32 = tuple(np.int32(value) for value in range(1 << 6))
_CAST_NAMES: dict = {}


def _cast_name(in_dtype: torch.dtype, out_dtype: torch.dtype) -> str:
    """The cast kernel's name for these dtypes (made once per pair)."""
    name = _CAST_NAMES.get((in_dtype, out_dtype))
    if name is None:
        name = _CAST_NAMES[in_dtype, out_dtype] = kernels.cast_transpose_name(dtype_name(in_dtype),
                                                                               dtype_name(out_dtype))
    return name


_MARGIN_FACTORS: dict = {}


def _margin_factor(margin: int) -> np.float32:
    """``2**-margin`` as the kernels' float argument (made once per margin)."""
    factor = _MARGIN_FACTORS.get(margin)
    if factor is None:
        factor = _MARGIN_FACTORS[margin] = np.float32(2.0 ** -margin)
    return factor


class Pass:
    """One forward or backward pass over a layer's scaling state (``history``, ``scale``,
    ``scale_inv``: the state's buffers, or what ``torch.compile`` passes for them): the scale
    update before it (all-reducing row 0 of the amax history over the recipe's process group
    first), then the casts of :meth:`cast` and :meth:`weight`.

    A pass scales dynamically (each tensor by this step's amax) under dynamic scaling, and under
    delayed scaling while one of its slots has no amax recorded yet (the first step).

    ``weights`` are the ``(tensor, slot)`` pairs the pass takes through :meth:`weight`: looked up in
    the weight cache at the start, so that the scale updates of those to recast join the pass's
    update launch."""

    def __init__(self, state: Float8State, tensors, device: torch.device, slots, use_cache: bool = True,
                 weights=()):
        self.state = state
        history, scale, scale_inv = self.history, self.scale, self.scale_inv = tensors
        # the buffers' addresses, read once: a state's scales are strided views (slot i at i * stride)
        self.history_ptr = history.data_ptr()
        self.scale_ptr, self.scale_stride = scale.data_ptr(), scale.stride(0)
        self.scale_inv_ptr, self.scale_inv_stride = scale_inv.data_ptr(), scale_inv.stride(0)
        self.device_id = device_id(device)
        self.stream = resolve_stream(current_stream_handle(device), self.device_id)
        self.group = state.recipe.process_group
        self.margin_factor = _margin_factor(state.recipe.margin)
        self.use_cache = use_cache and not capturing()  # a graph replay must recast
        self.deferred: list = []  # (slot, partial sums, dtype) of casts whose bias gradient waits (bias_grads)
        self.dynamic = self._dynamic(slots)
        # The pass's weights ((tensor, slot) pairs), looked up in the cache now: the scales of those
        # to recast (after an optimizer step) that scale as the pass does join its one update launch.
        self.weights: dict = {}
        self.folded: list = []
        for w, slot in weights:
            found = self.weights[slot] = w, self._cached(w, slot)
            if found[1][1] is None and self._dynamic((slot,)) == self.dynamic:
                self.folded.append(slot)
        self.update((*slots, *self.folded) if self.folded else slots, self.dynamic)

    def _dynamic(self, slots) -> bool:
        return self.state.recipe.scaling == "dynamic" or any(slot not in self.state.measured for slot in slots)

    def update(self, slots, zero_only: bool) -> None:
        """Fold row 0 into the scales of ``slots`` and clear it (only clear it when ``zero_only``)."""
        state, history = self.state, self.history
        if self.group is not None and not zero_only:
            self._reduce_amaxes(history[0])
        rows, columns = history.shape
        kernels.launch(self.stream, self.device_id, "update_scaling", len(state.slots) * kernels.WARP,
                       self.history_ptr, rows, columns, slot_mask(slots), state.e5m2_mask, self.scale_ptr,
                       self.scale_stride, self.scale_inv_ptr, self.scale_inv_stride, self.margin_factor,
                       _INT32[state.recipe.amax_compute_algo == "most_recent"], _INT32[zero_only])

    def _reduce_amaxes(self, amaxes: torch.Tensor) -> None:
        """Max-reduce ``amaxes`` (a view of the history) over the recipe's process group, in place."""
        torch.distributed.all_reduce(amaxes, op=torch.distributed.ReduceOp.MAX, group=self.group)

    def _launch_cast(self, t, aux, slot, dtype, op, flags, out, out_t, partials, scale_ptr, scale_inv_ptr) -> None:
        name = _cast_name(t.dtype, dtype)
        amax = self.history_ptr + 4 * slot
        t_ptr, t_ld = t.data_ptr(), t.stride(0)
        aux_ptr, aux_ld = (aux.data_ptr(), aux.stride(0)) if aux is not None else (0, 0)
        vector = vector_aligned_at(t_ptr, t_ld, t.element_size()) | (
            aux is not None and vector_aligned_at(aux_ptr, aux_ld, aux.element_size())) << 1
        rows, cols = t.shape
        threads = kernels.tile_count(rows, cols) * kernels.TILE_THREADS
        kernels.launch(self.stream, self.device_id, name, max(threads, 1), t_ptr, t_ld, aux_ptr, aux_ld,
                       rows, cols, _INT32[kernels.OPS[op]], _INT32[flags],
                       out.data_ptr() if out is not None else 0, out_t.data_ptr() if out_t is not None else 0,
                       scale_ptr, scale_inv_ptr, amax, amax, self.margin_factor,
                       partials.data_ptr() if partials is not None else 0, _INT32[vector])

    def cast(self, t: torch.Tensor, slot: int, *, op: str = "none", aux: torch.Tensor | None = None,
             rowmajor: bool = True, transposed: bool = True, bias_grad: bool = False, dynamic: bool | None = None,
             reduce_amax: bool = True, defer_bias: bool = False) -> Cast:
        """``op(t)`` in float8 for slot ``slot``: row-major and/or transposed, with its column sums
        (the bias gradient, in ``t``'s dtype) when ``bias_grad``; its amax recorded in row 0.
        ``defer_bias`` leaves the column sums to :meth:`bias_grads` (``Cast.bias_grad`` None), which
        adds up two casts' in one launch."""
        rows, cols = t.shape
        dtype = self.state.dtype_of(slot)
        out = t.new_empty((rows, cols), dtype=dtype) if rowmajor else None  # (no device object to make)
        out_t = t.new_empty((cols, rows), dtype=dtype) if transposed else None
        partials = None
        if bias_grad:
            parts = -(-rows // kernels.TILE_ROWS)
            partials = t.new_empty((parts, cols), dtype=torch.float32)
        flags = (kernels.WRITE if rowmajor else 0) | (kernels.WRITE_T if transposed else 0)
        flags |= kernels.DBIAS if bias_grad else 0
        scale_ptr = self.scale_ptr + 4 * self.scale_stride * slot  # (float32 elements)
        scale_inv_ptr = self.scale_inv_ptr + 4 * self.scale_inv_stride * slot
        if self.dynamic if dynamic is None else dynamic:
            self._launch_cast(t, aux, slot, dtype, op, kernels.AMAX, None, None, None, scale_ptr,
                              scale_inv_ptr)  # this step's amax first
            if self.group is not None and reduce_amax:
                self._reduce_amaxes(self.history[0, slot:slot + 1])
            flags |= kernels.DYNAMIC
        else:
            flags |= kernels.AMAX
        self._launch_cast(t, aux, slot, dtype, op, flags, out, out_t, partials, scale_ptr, scale_inv_ptr)
        self.state.measured.add(slot)
        bias = None
        if partials is not None:
            if defer_bias:
                self.deferred.append((slot, partials, t.dtype))
            else:
                bias = sum_partials(partials, t.dtype, self.stream, self.device_id)
        return Cast(out, out_t, bias, self.scale_inv, slot, scale_inv_ptr)

    def bias_grads(self) -> dict:
        """The bias gradients of the casts made with ``defer_bias``, by slot: two (a block's, with as
        many rows of partial sums) in one launch."""
        deferred, self.deferred = self.deferred, []
        if len(deferred) == 2:
            (slot, partials, dtype), (second_slot, second, second_dtype) = deferred
            if second.shape[0] == partials.shape[0] and second_dtype is dtype:
                grads = sum_partials(partials, dtype, self.stream, self.device_id, second)
                return {slot: grads[0], second_slot: grads[1]}
        return {slot: sum_partials(partials, dtype, self.stream, self.device_id) for slot, partials, dtype in deferred}

    def snapshot(self) -> torch.Tensor:
        """The inverse scales as this pass cast with them, for the backward pass (a later pass may
        change the state's): contiguous, slot ``i`` at element ``SCALE_STRIDE * i`` (16-byte aligned)."""
        scale_inv, state = self.scale_inv, self.state
        flat = state.flat_scale_inv
        if flat is not None and flat[0] is scale_inv:
            return flat[1].clone()
        length = len(state.slots) * SCALE_STRIDE
        if is_padded(scale_inv) and scale_inv.untyped_storage().nbytes() >= 4 * (scale_inv.storage_offset() + length):
            # the padded storage as it is: one copy (the view kept for the next pass: the same buffer)
            flat = state.flat_scale_inv = scale_inv, scale_inv.as_strided((length,), (1,))
            return flat[1].clone()
        copy = torch.empty(length, dtype=torch.float32, device=scale_inv.device)
        copy.view(-1, SCALE_STRIDE)[:, 0] = scale_inv
        return copy

    def weight(self, w: torch.Tensor, slot: int) -> Cast:
        """The weight in float8, both layouts; from the state's cache while the weight is unchanged
        (the same tensor object at the same version: no optimizer step, no load) and the pass may use it.
        The object matters: a new tensor (a copy made per call) may reuse a freed one's address at
        version 0, and torch's caching allocator makes that the rule."""
        announced = self.weights.get(slot)
        key, cast = announced[1] if announced is not None and announced[0] is w else self._cached(w, slot)
        if cast is not None:
            return cast
        dynamic = self._dynamic((slot,))
        if slot not in self.folded:
            self.update((slot,), dynamic)
        cast = self.cast(w, slot, dynamic=dynamic, reduce_amax=False)  # replicas hold equal weights
        if self.use_cache:
            self.state.weight_cache[slot] = (key, weakref.ref(w), cast)
        return cast

    def _cached(self, w: torch.Tensor, slot: int) -> tuple:
        """(the cache key of weight ``w``, its cached Cast or None)."""
        key = (w.data_ptr(), w._version, tuple(w.shape), w.dtype, self.scale_inv_ptr)
        cached = self.state.weight_cache.get(slot) if self.use_cache else None
        if cached is not None and cached[0] == key and cached[1]() is w:
            return key, cached[2]
        return key, None


class Cast:
    """A tensor cast to float8: ``data`` (row-major), ``transposed``, the bias gradient taken
    along the way, and the inverse scale the GEMMs dequantise with: element ``scale_index`` of the
    vector ``scales``, at address ``scale_ptr`` (:attr:`scale_inv` makes the one-element view)."""

    __slots__ = ("data", "transposed", "bias_grad", "scales", "scale_index", "scale_ptr")

    def __init__(self, data, transposed, bias_grad, scales, scale_index, scale_ptr):
        self.data, self.transposed, self.bias_grad = data, transposed, bias_grad
        self.scales, self.scale_index, self.scale_ptr = scales, scale_index, scale_ptr

    @property
    def scale_inv(self) -> torch.Tensor:
        return self.scales[self.scale_index:self.scale_index + 1]


def _gemm(work: Pass, a: Cast, a_matrix, b: Cast, b_matrix, dtype, fast: bool, preferences, bias=None):
    """``a_matrix @ b_matrix`` dequantised with a's and b's scales, in ``dtype``, plus ``bias``, on
    the pass's stream (its cached plan run by address: :mod:`.._gemm_calls`). The scales are 16-byte
    aligned where cuBLASLt reads them in place (a state's, see ``padded_scales``); the plan copies
    any other to an aligned slot first."""
    return gemm(a_matrix, b_matrix, epilog="BIAS" if bias is not None else None,
                epilog_inputs={"bias": bias} if bias is not None else None,
                scale_pointers={"scale:a": a.scale_ptr, "scale:b": b.scale_ptr},
                scales=lambda: {"a": a.scale_inv, "b": b.scale_inv}, options=_options(dtype, fast),
                preferences=preferences, stream=work.stream)


def _saved(transposed: torch.Tensor, scale_inv: torch.Tensor, slot: int) -> Cast:
    """A forward cast as the backward pass uses it: its transpose, dequantised with the scale
    the forward pass cast it with (``scale_inv``: :meth:`Pass.snapshot`'s, contiguous)."""
    index = SCALE_STRIDE * slot
    return Cast(None, transposed, None, scale_inv, index, scale_inv.data_ptr() + 4 * index)


def linear_forward(state: Float8State, tensors, x, weight, bias, activation: str, need_grad: bool,
                   use_cache: bool = True, autotune: bool | None = None):
    """``(y, saved)``: ``y = act(x @ weight.T + bias)`` with float8 operands; ``saved`` the tensors
    :func:`linear_backward` takes, ``(x8t, w8t, aux, scale_inv)`` (None without gradients)."""
    preferences = preferences_for(autotune)
    slot_x, slot_w = state.slot("input"), state.slot("weight")
    work = Pass(state, tensors, x.device, (slot_x,), use_cache, ((weight, slot_w),))
    x8 = work.cast(x, slot_x, transposed=need_grad)
    w8 = work.weight(weight, slot_w)
    z = _gemm(work, x8, x8.data, w8, w8.data.T, x.dtype, state.recipe.fast_accumulation, preferences, bias)
    y = activate(z, activation)
    if not need_grad:
        return y, None
    return y, (x8.transposed, w8.transposed, z if activation == "gelu" else y, work.snapshot())


def linear_backward(state: Float8State, tensors, grad, saved, activation: str, needs: tuple,
                    autotune: bool | None = None):
    """``(dx, dweight, dbias)`` for the gradient ``grad`` of :func:`linear_forward`'s output."""
    preferences = preferences_for(autotune)
    x8t, w8t, aux, scale_inv = saved
    need_x, need_weight, need_bias = needs
    slot_g = state.slot("grad_output")
    work = Pass(state, tensors, grad.device, (slot_g,))
    g8 = work.cast(grad, slot_g, op="none" if activation == "none" else "d" + activation,
                   aux=aux if activation != "none" else None, rowmajor=need_x, transposed=need_weight,
                   bias_grad=need_bias)
    w8, x8 = _saved(w8t, scale_inv, state.slot("weight")), _saved(x8t, scale_inv, state.slot("input"))
    dx = _gemm(work, g8, g8.data, w8, w8.transposed.T, grad.dtype, False, preferences) if need_x else None
    dweight = (_gemm(work, g8, g8.transposed, x8, x8.transposed.T, grad.dtype, False, preferences) if need_weight
               else None)
    return dx, dweight, g8.bias_grad


def mlp_forward(state: Float8State, tensors, x, w1, b1, w2, b2, activation: str, need_grad: bool,
                use_cache: bool = True, autotune: bool | None = None):
    """``(out, saved)``: ``out = act(x @ w1.T + b1) @ w2.T + b2`` with float8 operands; ``saved``
    ``(x8t, w1_8t, z, h8t, w2_8t, scale_inv)`` for :func:`mlp_backward` (None without gradients)."""
    preferences = preferences_for(autotune)
    slot_x, slot_h = state.slot("input"), state.slot("hidden")
    slot_w1, slot_w2 = state.slot("fc1.weight"), state.slot("fc2.weight")
    work = Pass(state, tensors, x.device, (slot_x, slot_h), use_cache, ((w1, slot_w1), (w2, slot_w2)))
    fast = state.recipe.fast_accumulation
    x8 = work.cast(x, slot_x, transposed=need_grad)
    w1_8 = work.weight(w1, slot_w1)
    z = _gemm(work, x8, x8.data, w1_8, w1_8.data.T, x.dtype, fast, preferences, b1)
    h8 = work.cast(z, slot_h, op=activation, transposed=need_grad)
    w2_8 = work.weight(w2, slot_w2)
    out = _gemm(work, h8, h8.data, w2_8, w2_8.data.T, x.dtype, fast, preferences, b2)
    if not need_grad:
        return out, None
    return out, (x8.transposed, w1_8.transposed, z, h8.transposed, w2_8.transposed, work.snapshot())


def mlp_backward(state: Float8State, tensors, grad, saved, activation: str, needs: tuple,
                 autotune: bool | None = None):
    """``(dx, dw1, db1, dw2, db2)`` for the gradient ``grad`` of :func:`mlp_forward`'s output."""
    preferences = preferences_for(autotune)
    x8t, w1_8t, z, h8t, w2_8t, scale_inv = saved
    need_x, need_w1, need_b1, need_w2, need_b2 = needs
    slot_g, slot_dz = state.slot("grad_output"), state.slot("grad_hidden")
    x8, h8 = _saved(x8t, scale_inv, state.slot("input")), _saved(h8t, scale_inv, state.slot("hidden"))
    w1_8, w2_8 = _saved(w1_8t, scale_inv, state.slot("fc1.weight")), _saved(w2_8t, scale_inv, state.slot("fc2.weight"))
    work = Pass(state, tensors, grad.device, (slot_g, slot_dz))
    need_dz = need_x or need_w1 or need_b1
    # both bias gradients are summed in one launch at the end (bias_grads)
    g8 = work.cast(grad, slot_g, rowmajor=need_dz, transposed=need_w2, bias_grad=need_b2, defer_bias=True)
    # Peak memory is reached in the hidden gradient's cast (dh, dz8 and dz8t beside the saved z and
    # h8t), with g8's row-major copy already freed: fc2's weight gradient is made before it when
    # that is smaller than g8's transposed copy, which it frees (hidden * itemsize vs tokens bytes
    # a column), else after it.
    dw2_first = need_dz and need_w2 and z.shape[1] * grad.element_size() < grad.shape[0]
    dw2 = dx = dw1 = dz8 = None
    if need_dz:
        dh = _gemm(work, g8, g8.data, w2_8, w2_8.transposed.T, grad.dtype, False, preferences)
        g8.data = None
        if dw2_first:
            dw2 = _gemm(work, g8, g8.transposed, h8, h8.transposed.T, grad.dtype, False, preferences)
            g8.transposed = None
        dz8 = work.cast(dh, slot_dz, op="d" + activation, aux=z, rowmajor=need_x, transposed=need_w1,
                        bias_grad=need_b1, defer_bias=True)
        del dh
    if need_w2 and not dw2_first:
        dw2 = _gemm(work, g8, g8.transposed, h8, h8.transposed.T, grad.dtype, False, preferences)
    del g8
    if dz8 is not None:
        dx = _gemm(work, dz8, dz8.data, w1_8, w1_8.transposed.T, grad.dtype, False, preferences) if need_x else None
        dz8.data = None
        dw1 = _gemm(work, dz8, dz8.transposed, x8, x8.transposed.T, grad.dtype, False, preferences) if need_w1 else None
    bias_grads = work.bias_grads()
    return dx, dw1, bias_grads.get(slot_dz), dw2, bias_grads.get(slot_g)
