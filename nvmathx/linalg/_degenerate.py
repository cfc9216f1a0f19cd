"""Problems with an extent of 0 (M, N, K or the batch) on the GPU, as numpy.matmul defines them,
without cuBLASLt: there is nothing to multiply, and cuBLASLt does not take empty matrices.

An empty result (M, N or the batch 0) is only allocated; with K = 0 the product is exactly 0, so
the result is ``beta * c`` (or zeros, or the bias) through the epilog. :func:`degenerate_launches`
plans the kernel launches of :mod:`._kernels` that write it and every auxiliary output (pure);
:class:`DegenerateRunner` runs them on the caller's stream: stream-ordered device work and no
synchronisation, so it is captured in CUDA graphs as a cuBLASLt plan is.
"""

from __future__ import annotations

import itertools
from typing import Any, NamedTuple

import numpy as np

from .._bindings import cuda_driver
from .._core.dtypes import numpy_dtype
from .._core.streams import StreamHolder
from .._core.tensor import copy_to_host, wrap_operand
from .._matmulcore.epilogs import GELU_AUX_NAME, RELU_AUX_NAME, gelu_aux_ld, relu_aux_width
from . import _kernels as K
from ._batching import _merge, aligned_strides
from ._cublaslt_plan import MatmulAlgorithm
from ._problem import MatmulProblem, OperandInfo, cpu_compute_dtype, full_matrix
from ._runner import first_columns, scale_operand

__all__ = ["Slot", "Launch", "degenerate_launches", "DegenerateRunner"]

class Slot(NamedTuple):
    """A kernel argument known only when running: the value named ``name`` (a pointer, or beta),
    plus ``offset`` bytes for a pointer that is not null."""

    name: str
    offset: int = 0


class Launch(NamedTuple):
    kernel: str
    elements: int  # the work items (threads) of the launch
    args: tuple  # the kernel's arguments; Slots are filled in by each run


def _matrix_view(info: OperandInfo, batch) -> tuple:
    """(batch strides aligned to ``batch``, row stride, column stride) of a result-shaped input:
    ``c``, a bias (one row, or a matrix added through C) or an aux input."""
    shape, strides = tuple(info.shape), tuple(info.strides)
    if len(shape) == 1:  # a bias of shape (N,)
        return (0,) * len(batch), 0, strides[0]
    return aligned_strides(batch, shape[:-2], strides[:-2]), strides[-2] if shape[-2] != 1 else 0, strides[-1]


def _c_view(info: OperandInfo, problem: MatmulProblem, batch) -> tuple:
    shape, strides = full_matrix(info.shape, info.strides, problem.a_ndim, problem.b_ndim)
    return _matrix_view(OperandInfo(shape, strides, info.dtype), batch)


def _split_batch(batch, inputs: dict) -> list:
    """[(launch index, extents, {input: strides}, {input: element offset})], a launch's batch: the
    batch with unit dimensions dropped and chaining neighbours merged, its last
    :data:`~._kernels.MAX_BATCH_DIMS` dimensions in each launch and the others looped over by
    launches (the index counts them, in C order)."""
    names = list(inputs)
    merged = _merge(batch, [inputs[name] for name in names])
    inner, outer = merged[-K.MAX_BATCH_DIMS:], merged[:-K.MAX_BATCH_DIMS]
    inner_extents = tuple(extent for extent, _ in inner)
    inner_strides = {name: tuple(strides[i] for _, strides in inner) for i, name in enumerate(names)}
    pieces = []
    for index, position in enumerate(itertools.product(*(range(extent) for extent, _ in outer))):
        offsets = {name: sum(p * strides[i] for p, (_, strides) in zip(position, outer))
                   for i, name in enumerate(names)}
        pieces.append((index, inner_extents, inner_strides, offsets))
    return pieces


def _extent_args(extents) -> list:
    """The kernels' ``batch_ndim, e0, e1, e2, e3``."""
    padded = list(extents) + [1] * (K.MAX_BATCH_DIMS - len(extents))
    return [np.int32(len(extents))] + [np.int64(extent) for extent in padded]


def _stride_args(strides) -> list:
    """An input's four batch strides (0 past the batch's dimensions)."""
    return [np.int64(stride) for stride in list(strides) + [0] * (K.MAX_BATCH_DIMS - len(strides))]


def _absent(with_code: bool = True) -> list:
    """The arguments of an input that is not there: a null pointer, (its dtype,) its strides."""
    return [0] + ([np.int32(0)] if with_code else []) + [np.int64(0)] * (K.MAX_BATCH_DIMS + 2)


def _product(values) -> int:
    result = 1
    for value in values:
        result *= value
    return result


def degenerate_launches(problem: MatmulProblem, infos: dict) -> list[Launch]:
    """The kernel launches that write the result and auxiliary outputs of ``problem`` (one with an
    extent of 0). ``infos`` maps ``"a"``, ``"b"``, ``"c"`` and the epilog inputs to the
    OperandInfo of the device operands (``"c"`` may be None).

    Pointer arguments are :class:`Slot` s named ``"result"``, ``"aux_out"``, ``"bgrad"``,
    ``"amax"``, ``"scale_d"``, ``"c"``, ``"bias"``, ``"aux_in"``, ``"a"`` and ``"b"``; ``beta``
    is ``Slot("beta")`` (complex: ``"beta_re"`` and ``"beta_im"``).
    """
    shape = problem.shape
    if shape.batch_count == 0:
        return []
    if problem.result_dtype.startswith("complex"):
        return _complex_launches(problem, infos)
    launches = _product_launches(problem, infos)
    epilog = problem.epilog
    if epilog is not None and epilog.bgrad_of in ("a", "b"):
        launches += _sum_over_k_launches(problem, infos, epilog.bgrad_of)
    return launches


def _flags(problem: MatmulProblem) -> int:
    epilog, flags = problem.epilog, K.WRITE_RESULT
    if problem.result_amax:
        flags |= K.AMAX
    if epilog is None:
        return flags
    flags |= {"relu": K.ACT_RELU, "gelu": K.ACT_GELU, None: 0}[epilog.activation]
    flags |= {RELU_AUX_NAME: K.AUX_OUT_RELU, GELU_AUX_NAME: K.AUX_OUT_GELU, None: 0}[epilog.aux_output]
    flags |= {RELU_AUX_NAME: K.AUX_IN_RELU, GELU_AUX_NAME: K.AUX_IN_GELU, None: 0}[epilog.aux_input]
    return flags | (K.BGRAD if epilog.bgrad_of == "result" else 0)


def _product_launches(problem: MatmulProblem, infos: dict) -> list[Launch]:
    """``v = beta * c + bias`` through the epilog, over every (M, N) matrix of the result."""
    shape, epilog = problem.shape, problem.epilog
    m, n, batch = shape.m, shape.n, shape.batch_shape
    flags = _flags(problem)
    c_view = _c_view(infos["c"], problem, batch) if infos.get("c") is not None else None
    views: dict[str, tuple] = {} if c_view is None else {"c": c_view}
    if problem.bias_mode is not None:
        views["bias"] = _matrix_view(infos["bias"], batch)
    if epilog is not None and epilog.aux_input:
        views["aux_in"] = _matrix_view(infos[epilog.aux_input], batch)
    relu_out = bool(flags & K.AUX_OUT_RELU)
    groups = relu_aux_width(n) if relu_out else -(-n // 8)
    aux_ld = relu_aux_width(n) if relu_out else gelu_aux_ld(n)
    row_block, row_blocks = (m, 1) if flags & K.BGRAD else (1, m)
    result_size = numpy_dtype(problem.result_dtype).itemsize
    aux_size = 1 if relu_out else result_size
    compute = "double" if cpu_compute_dtype(problem.a_dtype) == "float64" else "float"
    codes = {"c": K.DTYPE_CODES.get(problem.c_dtype or "", 0), "bias": K.DTYPE_CODES[problem.result_dtype]}
    launches = []
    for index, extents, strides, offsets in _split_batch(batch, {name: view[0] for name, view in views.items()}):
        per_launch = _product(extents)
        count = per_launch * row_blocks * groups
        if count == 0:
            continue
        first = index * per_launch  # the launch's first flat batch index, for the dense outputs
        inputs = []
        for name in ("c", "bias", "aux_in"):
            code = [np.int32(codes[name])] if name != "aux_in" else []
            if name not in views:
                inputs += _absent(with_code=bool(code))
                continue
            _, rs, cs = views[name]
            pointer = Slot(name, offsets[name] * _input_itemsize(problem, name))
            inputs += [pointer] + code + _stride_args(strides[name]) + [np.int64(rs), np.int64(cs)]
        args = ([Slot("result", first * m * n * result_size), np.int32(K.DTYPE_CODES[problem.result_dtype]),
                 np.int64(m), np.int64(n), np.int64(groups), np.int64(row_block), np.int64(row_blocks),
                 np.int64(count), np.int32(flags), Slot("beta"), Slot("scale_d_value"), Slot("scale_d"),
                 Slot("amax")] + _extent_args(extents) + inputs
                + [Slot("aux_out", first * m * aux_ld * aux_size), np.int64(aux_ld),
                   Slot("bgrad", first * n * result_size)])
        launches.append(Launch(f"degenerate<{compute}>", count, tuple(args)))
    return launches


def _input_itemsize(problem: MatmulProblem, name: str) -> int:
    if name == "c":
        return numpy_dtype(problem.c_dtype).itemsize
    if name == "aux_in" and problem.epilog is not None and problem.epilog.aux_input == RELU_AUX_NAME:
        return 1
    return numpy_dtype(problem.result_dtype).itemsize


def _sum_over_k_launches(problem: MatmulProblem, infos: dict, of: str) -> list[Launch]:
    """BGRADA / BGRADB: ``a`` summed over K (one value per row of the result) or ``b`` (one per
    column), by the product kernel with the operand as ``c`` and K as its rows."""
    shape = problem.shape
    k, batch = shape.k, shape.batch_shape
    info = infos[of]
    strides = info.strides
    if of == "a":  # (..., M, K): K along the last axis
        cols, rs, cs = shape.m, strides[-1], strides[-2]
    else:  # (..., K, N)
        cols, rs, cs = shape.n, strides[-2], strides[-1]
    groups = -(-cols // 8)
    itemsize, result_size = numpy_dtype(info.dtype).itemsize, numpy_dtype(problem.result_dtype).itemsize
    compute = "double" if cpu_compute_dtype(problem.a_dtype) == "float64" else "float"
    launches = []
    operand_strides = aligned_strides(batch, info.shape[:-2], strides[:-2])
    for index, extents, inner, offsets in _split_batch(batch, {of: operand_strides}):
        per_launch = _product(extents)
        count = per_launch * groups
        if count == 0:
            continue
        args = ([0, np.int32(K.DTYPE_CODES[problem.result_dtype]), np.int64(k), np.int64(cols), np.int64(groups),
                 np.int64(k), np.int64(1), np.int64(count), np.int32(K.BGRAD), _typed(1.0, compute), np.float32(1.0),
                 0, 0] + _extent_args(extents)
                + [Slot(of, offsets[of] * itemsize), np.int32(K.DTYPE_CODES[info.dtype])] + _stride_args(inner[of])
                + [np.int64(rs), np.int64(cs)] + _absent() + _absent(with_code=False)
                + [0, np.int64(0), Slot("bgrad", index * per_launch * cols * result_size)])
        launches.append(Launch(f"degenerate<{compute}>", count, tuple(args)))
    return launches


def _complex_launches(problem: MatmulProblem, infos: dict) -> list[Launch]:
    shape = problem.shape
    m, n, batch = shape.m, shape.n, shape.batch_shape
    real = "double" if problem.result_dtype == "complex128" else "float"
    itemsize = numpy_dtype(problem.result_dtype).itemsize
    view = _c_view(infos["c"], problem, batch) if infos.get("c") is not None else None
    batch_strides = {"c": view[0]} if view is not None else {}
    launches = []
    for index, extents, strides, offsets in _split_batch(batch, batch_strides):
        per_launch = _product(extents)
        count = per_launch * m * n
        if count == 0:
            continue
        if view is not None:
            c = [Slot("c", offsets["c"] * itemsize)] + _stride_args(strides["c"]) + [np.int64(view[1]),
                                                                                   np.int64(view[2])]
        else:
            c = _absent(with_code=False)
        args = ([Slot("result", index * per_launch * m * n * itemsize), np.int64(m), np.int64(n), np.int64(count),
                 Slot("beta_re"), Slot("beta_im")] + _extent_args(extents) + c)
        launches.append(Launch(f"degenerate_complex<{real}2, {real}>", count, tuple(args)))
    return launches


def _typed(value, compute: str):
    return np.float64(value) if compute == "double" else np.float32(value)


class DegenerateRunner:
    """Runs a problem with an extent of 0 on the GPU: allocates the result and auxiliary outputs
    on the stream and launches :func:`degenerate_launches` (nothing else: no cuBLASLt, no
    workspace, no synchronisation unless the results go back to host memory or ``blocking``).

    It answers what :class:`~._runner.GpuRunner` answers for ``Matmul`` and the function form's
    cache, with no algorithms to choose from.
    """

    def __init__(self, problem: MatmulProblem, infos: dict, like, stream, *, device_id: int, memory_resource=None,
                 host_like=None, blocking: bool = False):
        self.problem = problem
        self.device_id = device_id
        self.stream = stream
        self.host_like = host_like
        self.blocking = blocking or host_like is not None
        self.algorithms: list[MatmulAlgorithm] = []
        self.algorithm: MatmulAlgorithm | None = None
        self.workspace_bytes = 0
        shape, epilog = problem.shape, problem.epilog
        allocator = like.adapter.result_allocator
        dtype = problem.result_dtype
        self._allocate = allocator(shape.result_shape, dtype, device_id, memory_resource=memory_resource)
        self.outputs: list[tuple[str, Any, str, int | None]] = []  # (name, allocator, slot, columns to keep or None)
        if epilog is not None and epilog.aux_output == RELU_AUX_NAME:
            mask_shape = shape.batch_shape + (shape.m, relu_aux_width(shape.n))
            mask = allocator(mask_shape, "uint8", device_id, memory_resource=memory_resource)
            self.outputs.append((RELU_AUX_NAME, mask, "aux_out", None))
        elif epilog is not None and epilog.aux_output == GELU_AUX_NAME:
            padded = gelu_aux_ld(shape.n)
            self.outputs.append((GELU_AUX_NAME, allocator(shape.batch_shape + (shape.m, padded), dtype, device_id,
                                                       memory_resource=memory_resource), "aux_out",
                                 shape.n if padded != shape.n else None))
        if epilog is not None and epilog.bgrad:
            length = shape.m if epilog.bgrad_of == "a" else shape.n
            self.outputs.append((epilog.bgrad, allocator(shape.batch_shape + (length,), dtype, device_id,
                                                         memory_resource=memory_resource), "bgrad", None))
        if problem.result_amax:
            self.outputs.append(("result_amax", allocator((), "float32", device_id, memory_resource=memory_resource),
                                 "amax", None))
        self.launches = degenerate_launches(problem, infos)
        self.scale_keys = (("a", "b", "d") if dtype.startswith("float8") else ("a", "b")) if problem.is_fp8 else ()
        self._compute = "double" if cpu_compute_dtype(problem.a_dtype) in ("float64", "complex128") else "float"
        self._pointers = {"a": 0, "b": 0, "c": 0, "bias": 0, "aux_in": 0, "scale_d": 0}
        self._beta = 0
        self._scale_d = 1.0
        self.kept: dict[str, Any] = {}

    # -- what GpuRunner answers ------------------------------------------------------------------

    def bind(self, a, b, c, inputs: dict) -> None:
        self._pointers.update(a=a.ptr, b=b.ptr, c=c.ptr if c is not None else 0)
        self.set_input_pointers({name: operand.ptr for name, operand in inputs.items()})
        self.kept = {"a": a, "b": b, "c": c, **inputs}

    def set_input_pointers(self, pointers: dict) -> None:
        epilog = self.problem.epilog
        if "bias" in pointers:
            self._pointers["bias"] = pointers["bias"]
        if epilog is not None and epilog.aux_input:
            self._pointers["aux_in"] = pointers[epilog.aux_input]

    def unbind(self) -> None:
        self.kept = {}

    def set_scalars(self, alpha, beta) -> None:
        self._beta = beta  # alpha multiplies a product of 0 (K = 0) or nothing at all

    def set_scales(self, scales: dict, complete: bool = False, stream: StreamHolder | None = None) -> None:
        """Only ``d`` matters (``a`` and ``b`` scale a product of 0); device arrays are checked as
        GpuRunner checks them."""
        for key in self.scale_keys:
            if key not in scales and not complete:
                continue
            value = scales.get(key, 1.0)
            operand, number = scale_operand(value, f"quantization_scales[{key!r}]", self.device_id)
            if key != "d":
                continue
            if operand is not None:
                self._pointers["scale_d"], self.kept["scale_d"] = operand.ptr, operand
            else:
                self._pointers["scale_d"], self._scale_d = 0, number

    def use_stream(self, stream) -> None:
        self.stream = stream

    def select(self, algorithm) -> None:
        """No algorithm runs here; only ``None`` (the plan's own) is one of them."""

    def release_workspace(self) -> None:
        """There is none."""

    def free(self) -> None:
        self.kept = {}

    # -- running ---------------------------------------------------------------------------------

    def run(self, stream, a: int | None = None, b: int = 0, c: int | None = None):
        """The result (with a dict of auxiliary outputs where the epilog makes some) on ``stream``;
        ``a``, ``b``, ``c`` are this call's addresses where they changed (see GpuRunner.run)."""
        if a is not None:
            self._pointers.update(a=a, b=b)
            if c is not None:
                self._pointers["c"] = c
        self.stream = stream
        values = self._values()
        result, values["result"] = self._allocate(stream)
        outputs = {}
        for name, allocate_output, slot, _ in self.outputs:
            outputs[name], values[slot] = allocate_output(stream)
        if self.problem.result_amax:  # the kernels take the largest |value| atomically
            cuda_driver.memset_async(values["amax"], 0, 4, stream.handle)
        for launch in self.launches:
            K.launch(stream, self.device_id, launch.kernel, launch.elements, *_filled(launch.args, values))
        return self._finish(result, outputs, stream)

    def _values(self) -> dict:
        """What this run's Slots hold besides the outputs: pointers (c only with a nonzero beta,
        as BLAS reads it) and the scalars in the kernel's types."""
        values = dict(self._pointers, aux_out=0, bgrad=0, amax=0)
        beta = self._beta
        if beta == 0:
            values["c"] = 0
        real = np.float64 if self._compute == "double" else np.float32
        if self.problem.result_dtype.startswith("complex"):
            values["beta_re"], values["beta_im"] = real(np.real(beta)), real(np.imag(beta))
        else:
            values["beta"] = real(beta)
        values["scale_d_value"] = np.float32(self._scale_d)
        return values

    def _finish(self, result, outputs: dict, stream):
        if self.host_like is not None:
            result = copy_to_host(wrap_operand(result, "result"), self.host_like, stream)
            outputs = {name: copy_to_host(wrap_operand(array, name), self.host_like, stream)
                       for name, array in outputs.items()}
        elif self.blocking:
            cuda_driver.stream_synchronize(stream.handle)
        if not self.outputs:
            return result
        for name, _, _, keep in self.outputs:
            if keep is not None:
                outputs[name] = first_columns(outputs[name], keep)
        return result, outputs


def _filled(args: tuple, values: dict) -> list:
    """A launch's arguments with its Slots filled in from ``values`` (a null pointer stays null)."""
    filled = []
    for arg in args:
        if type(arg) is Slot:
            value = values[arg.name]
            arg = value + arg.offset if value and arg.offset else value
        filled.append(arg)
    return filled
