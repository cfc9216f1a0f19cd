"""Execute a LayoutPlan with numpy: each cuFFT pass becomes numpy FFTs over strided views."""

import numpy as np
from numpy.lib.stride_tricks import as_strided

from nvmathx._fftcore.layout import CopyStep, FFTPass


def element_offset(view, flat):
    """Offset, in elements, of ``view``'s element 0 inside the flat buffer ``flat``."""
    delta = view.__array_interface__["data"][0] - flat.__array_interface__["data"][0]
    return delta // view.itemsize


def _span(shape, strides):
    return sum((e - 1) * abs(s) for e, s in zip(shape, strides)) + 1


def _view(flat, base, shape, strides):
    item = flat.itemsize
    start = flat[base:] if base >= 0 else None
    assert start is not None
    return as_strided(start, shape=shape, strides=[s * item for s in strides])


def _embedded_strides(nembed, stride):
    strides = []
    for k in range(len(nembed)):
        strides.append(stride * int(np.prod(nembed[k + 1:], dtype=np.int64)))
    return strides


def _pass_extents(step):
    n = list(step.n)
    src, tgt = list(n), list(n)
    if step.fft_type == "R2C":
        tgt[-1] = n[-1] // 2 + 1
    if step.fft_type == "C2R":
        src[-1] = n[-1] // 2 + 1
    return src, tgt


def _transform(step, data, direction):
    axes = tuple(range(1, data.ndim))
    if step.fft_type == "R2C":
        return np.fft.rfftn(data, axes=axes)
    if step.fft_type == "C2R":
        return np.fft.irfftn(data, s=step.n, axes=axes, norm="forward")
    direction = step.direction if step.direction is not None else direction
    if direction < 0:
        return np.fft.fftn(data, axes=axes)
    return np.fft.ifftn(data, axes=axes, norm="forward")


def run_plan(plan, flat_input, input_base, direction, real_dtype=np.float64, inplace=False):
    """Run ``plan`` on the operand stored in ``flat_input`` at element ``input_base``; returns the
    result viewed through the plan's output strides."""
    complex_dtype = np.result_type(real_dtype, np.complex64)
    out_dtype = real_dtype if plan.fft_type == "C2R" else complex_dtype
    out_span = _span(plan.output_shape, plan.output_strides)
    buffers = {"input": (flat_input, input_base), "output": (np.full(out_span, np.nan, out_dtype), 0)}
    if plan.scratch_shape is not None:
        dtype = complex_dtype if plan.scratch_is_complex else real_dtype
        buffers["scratch"] = (np.full(_span(plan.scratch_shape, plan.scratch_strides), np.nan, dtype), 0)
        if plan.scratch_is_complex:
            buffers["scratch_real"] = (buffers["scratch"][0].view(real_dtype), 0)
    for step in plan.steps:
        if isinstance(step, CopyStep):
            target, tbase = buffers[step.target]
            source, sbase = buffers[step.source]
            if step.zero_fill:
                target[:] = 0
            value = _view(source, sbase, step.shape, step.source_strides)
            if target.dtype.kind != "c":
                value = value.real
            _view(target, tbase, step.shape, step.target_strides)[...] = value
            continue
        assert isinstance(step, FFTPass)
        source, sbase = buffers[step.source]
        target, tbase = buffers[step.target]
        src_ext, tgt_ext = _pass_extents(step)
        src_strides = [step.idist] + _embedded_strides(step.inembed, step.istride)
        tgt_strides = [step.odist] + _embedded_strides(step.onembed, step.ostride)
        for source_offset, target_offset in step.loop_offsets():
            src = _view(source, sbase + source_offset, [step.batch] + src_ext, src_strides)
            result = _transform(step, np.array(src), direction)
            _view(target, tbase + target_offset, [step.batch] + tgt_ext, tgt_strides)[...] = result
    if inplace:
        return _view(flat_input, input_base, plan.output_shape, plan.output_strides)
    return _view(buffers["output"][0], 0, plan.output_shape, plan.output_strides)
