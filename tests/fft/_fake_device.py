"""A host-memory stand-in for the GPU, so the GPU code path runs on a machine without one.

Device pointers are addresses of numpy buffers; cuFFT plans, kernel launches (interpreted from
their arguments), memcpy and memset are replaced by numpy code reading and writing those addresses. This checks the
Python logic of the GPU path (pointer offsets, steps, folding of scales, result allocation, caching) on CPU CI;
the real libraries are exercised by the tests marked ``gpu``.
"""

import ctypes
import types

import numpy as np
from numpy.lib.stride_tricks import as_strided

from helpers.fake_memory import FakeBuffer, FakeMemoryResource  # noqa: F401  (re-exported)
from nvmathx._core.device_array import DeviceArray
from nvmathx._fftcore.engine import check_callback_launches

from ._emulate import _embedded_strides, _pass_extents, _transform

FAKE_DEVICE_MEMORY = 80 * 2**30  # the fake GPU's memory, as an H100's

_CUFFT_DTYPES = {  # cufftType -> (kind, input dtype, output dtype)
    0x29: ("C2C", np.complex64, np.complex64), 0x69: ("C2C", np.complex128, np.complex128),
    0x2A: ("R2C", np.float32, np.complex64), 0x6A: ("R2C", np.float64, np.complex128),
    0x2C: ("C2R", np.complex64, np.float32), 0x6C: ("C2R", np.complex128, np.float64),
}


def view_at(pointer, shape, strides, dtype):
    """A numpy view of memory at ``pointer`` (strides in elements, any sign)."""
    dtype = np.dtype(dtype)
    if any(e == 0 for e in shape):
        return np.empty(shape, dtype)
    low = sum((e - 1) * s for e, s in zip(shape, strides) if s < 0)
    high = sum((e - 1) * s for e, s in zip(shape, strides) if s > 0)
    nbytes = (high - low + 1) * dtype.itemsize
    raw = (ctypes.c_char * nbytes).from_address(pointer + low * dtype.itemsize)
    flat = np.frombuffer(raw, dtype=dtype)
    return as_strided(flat[-low:], shape=tuple(shape), strides=[s * dtype.itemsize for s in strides])




class FakeCufft:
    def __init__(self):
        self.plans = {}
        self.next = 1
        self.executions = 0
        self.streams = {}
        self.work_areas = {}
        self.callbacks = {}  # handle -> [(LTO-IR, callback type, caller_info pointers)]
        self.emulators = {}  # LTO-IR -> (python function, user-data view): how a test's callback is run

    def jit_callback_function(self, version=None):
        return "cufftXtSetJITCallback"

    def xt_set_jit_callback(self, handle, ltoir, callback_type, caller_info=None):
        # As cuFFT requires: after cufftCreate, before the plan is made.
        assert self.plans[handle] is None and isinstance(ltoir, bytes) and ltoir and 0 <= int(callback_type) <= 7
        pointers = list(caller_info or [0])
        assert all(isinstance(p, int) for p in pointers)
        self.callbacks.setdefault(handle, []).append((ltoir, int(callback_type), pointers))
        return (ltoir, pointers)

    def create(self):
        handle, self.next = self.next, self.next + 1
        self.plans[handle] = None
        return handle

    def destroy(self, handle):
        del self.plans[handle]
        self.callbacks.pop(handle, None)

    def set_auto_allocation(self, handle, enabled):
        assert not enabled

    def make_plan_many64(self, handle, n, inembed, istride, idist, onembed, ostride, odist, fft_type, batch):
        assert 1 <= len(n) <= 3 and min(istride, ostride, idist, odist, batch) > 0
        self.plans[handle] = (tuple(n), tuple(inembed), istride, idist, tuple(onembed), ostride, odist,
                              int(fft_type), batch)
        return 1024 * len(n)

    def set_work_area(self, handle, pointer):
        assert pointer != 0
        self.work_areas[handle] = pointer

    def set_stream(self, handle, stream):
        self.streams[handle] = stream

    def exec_function(self, fft_type):
        kind = _CUFFT_DTYPES[int(fft_type)][0]

        def run(handle, source, target, direction=None):
            # cuFFT's real transforms need the real side aligned to the complex element.
            real_pointer = {"R2C": source, "C2R": target}.get(kind)
            real_dtype = np.dtype(_CUFFT_DTYPES[int(fft_type)][2 if kind == "R2C" else 1])
            if real_pointer is not None and real_pointer % real_dtype.itemsize:
                return 4  # CUFFT_INVALID_VALUE
            self._run(handle, source, target, direction)
            return 0

        return run, kind == "C2C", f"fake {kind}"

    def raw_exec_function(self, fft_type):
        run, takes_direction, name = self.exec_function(fft_type)

        def raw(handle, source, target, direction=None):
            # The hot path passes prepared ctypes objects, as a function without argtypes needs.
            assert isinstance(handle, ctypes.c_int) and isinstance(source, ctypes.c_void_p)
            assert isinstance(target, ctypes.c_void_p) and (direction is None or isinstance(direction, ctypes.c_int))
            return run(handle.value, source.value, target.value, None if direction is None else direction.value)

        return raw, takes_direction, name

    def _run(self, handle, source, target, direction):
        assert handle in self.streams and handle in self.work_areas, "stream and work area are set first"
        n, inembed, istride, idist, onembed, ostride, odist, fft_type, batch = self.plans[handle]
        kind, in_dtype, out_dtype = _CUFFT_DTYPES[fft_type]
        step = types.SimpleNamespace(fft_type=kind, n=n, direction=direction)
        src_ext, tgt_ext = _pass_extents(step)
        src_strides = [idist] + _embedded_strides(inembed, istride)
        tgt_strides = [odist] + _embedded_strides(onembed, ostride)
        src = np.array(view_at(source, [batch] + src_ext, src_strides, in_dtype))
        loads = [c for c in self.callbacks.get(handle, []) if c[1] < 4]
        stores = [c for c in self.callbacks.get(handle, []) if c[1] >= 4]
        for code, _, pointers in loads:
            src = self._emulate(code, source, src.shape, src_strides, in_dtype, pointers[0], None)
        result = _transform(step, src, direction)
        target_view = view_at(target, [batch] + tgt_ext, tgt_strides, out_dtype)
        for code, _, pointers in stores:
            if code in _scale_codes():  # the built-in scale: the factor at caller_info
                result = result * view_at(pointers[0], (1,), (1,), _real_dtype(out_dtype))[0]
            else:
                self._emulate(code, target, result.shape, tgt_strides, out_dtype, pointers[0], result)
                result = None
        if result is not None:
            target_view[...] = result
        self.executions += 1

    def _emulate(self, code, pointer, shape, strides, dtype, user_pointer, values):
        """Call a test's Python callback per element, as cuFFT would: offsets in elements from the
        execution's pointer, following the layout. Loads return the loaded array; stores write."""
        function, info = self.emulators[code]
        offsets = np.zeros(shape, np.int64)
        for axis, (extent, stride) in enumerate(zip(shape, strides)):
            offsets += (np.arange(extent) * stride).reshape([-1 if a == axis else 1 for a in range(len(shape))])
        low, high = int(offsets.min()), int(offsets.max())
        data = view_at(pointer + low * np.dtype(dtype).itemsize, (high - low + 1,), (1,), dtype)
        assert info is None or user_pointer == info.ctypes.data
        loaded = np.empty(shape, dtype)
        for index in np.ndindex(*shape):
            offset = int(offsets[index]) - low
            if values is None:
                loaded[index] = function(data, offset, info, None)
            else:
                function(data, offset, values[index], info, None)
        return loaded


def _real_dtype(dtype):
    return np.dtype(dtype).type(0).real.dtype


def _c_dtype(name):
    if name == "bf16_t":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    from nvmathx._codegen.elementwise import INTEGER_C_TYPES

    integers = {c_type: np.dtype(numpy_name) for numpy_name, c_type in INTEGER_C_TYPES.items()}
    return np.dtype({"half_t": np.float16, "float": np.float32, "double": np.float64, "float2": np.complex64,
                     "double2": np.complex128, **integers}[name])


def fake_launch(stream, device_id, name, count, *args):
    """Run one of nvmathx.fft's kernels with numpy, from the very arguments a launch would get."""
    kernel, _, types_ = name.partition("<")
    c_types = [t.strip() for t in types_.rstrip(">").split(",")]
    real = {"float": np.float32, "double": np.float64}[c_types[-1]]
    if kernel == "scale":
        pointer, n, factor, conj = args
        assert isinstance(pointer, int) and type(n) is np.int64 and type(factor) is real and type(conj) is np.int32
        if c_types[0] == "float4":  # 16-byte vectors: four float32, conj flips every second one
            assert pointer % 16 == 0
            data = view_at(pointer, (4 * int(n),), (1,), np.float32)
            data *= factor
            if conj:
                data[1::2] *= -1
            return
        data = view_at(pointer, (int(n),), (1,), _c_dtype(c_types[0]))
        data *= factor
        if conj:
            np.conjugate(data, out=data)
        return
    if kernel == "transpose":
        source, target, batches, rows, cols, source_batch, source_row, target_batch, target_col, factor, conj = args
        assert all(type(v) is int for v in args[:9]) and type(factor) is real and type(conj) is np.int32
        assert count == batches * -(-rows // 32) * -(-cols // 32) * 256
        dtype = _c_dtype(c_types[0])
        value = view_at(source, (batches, rows, cols), (source_batch, source_row, 1), dtype)
        out = view_at(target, (batches, rows, cols), (target_batch, 1, target_col), dtype)
        out[...] = (np.conjugate(value) if conj else value) * factor
        return
    assert kernel == "copy_nd" and len(args) == 6 + 24
    source, target, n, factor, conj, ndim = args[:6]
    assert isinstance(source, int) and isinstance(target, int) and type(factor) is real and type(n) is int
    # long long parameters travel as Python ints (see nvmathx._codegen.launch.launch)
    assert all(type(a) is int for a in args[6:]) and type(ndim) is np.int32 and type(conj) is np.int32
    dims = int(ndim)
    extents = [int(a) for a in args[6:6 + dims]]
    assert int(np.prod(extents)) == int(n) == count
    src_dtype, dst_dtype = _c_dtype(c_types[0]), _c_dtype(c_types[1])
    value = view_at(source, extents, [int(a) for a in args[14:14 + dims]], src_dtype)
    if src_dtype.itemsize == 2:
        value = value.astype(np.float32)
    if dst_dtype.kind != "c":
        value = value.real
    value = value.astype(dst_dtype) * factor
    if conj:
        value = np.conj(value)
    view_at(target, extents, [int(a) for a in args[22:22 + dims]], dst_dtype)[...] = value


class FakeFusedPlan:
    """The fused engine's plan on the fake device: numpy over the rows' strides, the factor applied
    as the kernel's store does; callbacks are kept but not run (a run with them raises). ``made``
    lists ``(rows, callbacks attached)`` of every plan made."""

    made: list = []
    simple, workspace_bytes, scratch_bytes, memory_bytes = True, 0, 0, 0

    def __init__(self, rows, device_id, output_shape=(), output_strides=(), prolog=None, epilog=None):
        check_callback_launches(rows, prolog, epilog)  # the real plan's refusal
        self.rows, self.valid, self.callbacks = rows, True, prolog is not None or epilog is not None
        FakeFusedPlan.made.append((rows, self.callbacks))

    def run(self, source, target, direction, stream, factor=1.0, conj=False, fuse=False):
        assert not self.callbacks, "the fake fused plan runs no callbacks"
        rows = self.rows
        complex_ = np.complex64 if rows.precision == "float32" else np.complex128
        half = rows.size // 2 + 1
        in_dtype, in_length = (rows.precision, rows.size) if rows.fft_type == "R2C" else (complex_, rows.size)
        out_dtype, out_length = (rows.precision, rows.size) if rows.fft_type == "C2R" else (complex_, rows.size)
        if rows.fft_type == "C2R":
            in_length = half
        if rows.fft_type == "R2C":
            out_length = half
        in_size, out_size = np.dtype(in_dtype).itemsize, np.dtype(out_dtype).itemsize
        for in_offset, out_offset in rows.loop_offsets or ((0, 0),):  # one launch per outer index
            x = view_at(source + in_offset * in_size, (rows.rows, in_length),
                        (rows.in_row_stride, rows.in_element_stride), in_dtype)
            x = x.astype(np.complex128 if rows.fft_type != "R2C" else np.float64)
            if rows.fft_type == "R2C":
                y = np.fft.rfft(x, axis=1)
            elif rows.fft_type == "C2R":
                y = np.fft.irfft(x, n=rows.size, axis=1) * rows.size
            else:
                y = np.fft.fft(x, axis=1) if direction < 0 else np.fft.ifft(x, axis=1) * rows.size
            y = y * factor
            if conj:
                y = np.conj(y)
            view_at(target + out_offset * out_size, (rows.rows, out_length),
                    (rows.out_row_stride, rows.out_element_stride), out_dtype)[...] = y

    def free(self):
        self.valid = False


def install(monkeypatch, fused_kernels=None):
    """Swap the GPU-facing pieces for host fakes; returns (fake cuFFT, default memory resource).

    ``fused_kernels``: what the fused engine finds on the fake device (``"cached"``, ``"absent"``;
    by default it cannot run there, so ``"auto"`` keeps cuFFT); its plans are :class:`FakeFusedPlan`.
    """
    from nvmathx._bindings import cuda_driver, cufft
    from nvmathx._codegen import elementwise as _kernels
    from nvmathx._core import device, execution, memory, streams
    from nvmathx._fftcore import plan as _cufft_plan
    from nvmathx.fft import _gpu, _sizes

    fake = FakeCufft()
    for name in ("create", "destroy", "set_auto_allocation", "make_plan_many64", "set_work_area", "set_stream",
                 "exec_function", "raw_exec_function", "jit_callback_function", "xt_set_jit_callback"):
        monkeypatch.setattr(cufft, name, getattr(fake, name))
    monkeypatch.setattr(_kernels, "_launch", fake_launch)
    monkeypatch.setattr(cuda_driver, "memcpy_async", lambda dst, src, n, stream: ctypes.memmove(dst, src, n))
    monkeypatch.setattr(cuda_driver, "stream_synchronize", lambda stream: None)
    monkeypatch.setattr(_cufft_plan, "_memset_async", lambda pointer, n, stream: ctypes.memset(pointer, 0, n))
    monkeypatch.setattr(device, "ensure_device", lambda device_id: None)
    monkeypatch.setattr(_sizes, "_device_memory", {0: FAKE_DEVICE_MEMORY})
    monkeypatch.setattr(execution, "_device_count", lambda: (1, None))  # one fake GPU
    resource = FakeMemoryResource()
    monkeypatch.setattr(memory, "default_memory_resource", lambda device_id: resource)
    monkeypatch.setattr(streams, "default_stream_handle", lambda device_id: 7)
    monkeypatch.setattr(streams, "_holders", {(7, 0): streams.StreamHolder(7, 0, core=object())})
    state = fused_kernels or "the fake device runs no generated kernels"
    monkeypatch.setattr(_gpu, "kernel_state", lambda rows, device_id, prolog=None, epilog=None: state)
    monkeypatch.setattr(_gpu, "compute_capability", lambda device_id: (9, 0))  # an H100 / H200
    monkeypatch.setattr(_gpu, "FusedPlan", FakeFusedPlan)
    monkeypatch.setattr(FakeFusedPlan, "made", [])
    return fake, resource


def to_device(array, resource=None):
    """A DeviceArray on 'GPU 0' holding a copy of ``array`` with the same strides."""
    array = np.asarray(array)
    resource = resource or FakeMemoryResource()
    itemsize = array.dtype.itemsize
    strides = tuple(s // itemsize for s in array.strides)
    low = sum((e - 1) * s for e, s in zip(array.shape, strides) if s < 0)
    high = sum((e - 1) * s for e, s in zip(array.shape, strides) if s > 0)
    buffer = resource.allocate((high - low + 1) * itemsize)
    pointer = buffer.handle - low * itemsize
    view_at(pointer, array.shape, strides, array.dtype)[...] = array
    return DeviceArray(buffer, pointer, array.shape, strides, array.dtype, 0, None)


def to_host(device_array):
    return np.array(view_at(device_array.ptr, device_array.shape, device_array.strides, device_array.dtype))


def _scale_codes() -> set:
    """The LTO-IR of every built-in scale callback compiled in this process."""
    from nvmathx._fftcore import scale_callback as _scale_callback

    return {callback.ltoir for callback in _scale_callback._compiled.values()}
