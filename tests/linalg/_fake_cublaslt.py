"""A host stand-in for cuBLASLt and the device, so the GPU code path of nvmathx.linalg runs on a
machine without a GPU.

Device pointers are addresses of numpy buffers. ``FakeCublasLt`` keeps the descriptors and layouts
that nvmathx creates and, on ``cublasLtMatmul``, computes the product from them with numpy as
cuBLASLt documents it (column-major matrices, ``op(A) op(B)``, epilogue with bias per row of D,
column-major auxiliary buffers, ReLU bitmask with its leading dimension in bits). It is an
independent model of the C library: the row-major swap, leading dimensions, batch strides and
epilog wiring of nvmathx are checked against it, and the real library by the ``gpu`` tests. The
kernels of problems with an extent of 0 run as host C++ (see ``_host_kernels.py``).
"""

import ctypes

import numpy as np

from helpers.fake_memory import FakeBuffer, FakeMemoryResource  # noqa: F401  (re-exported)
from nvmathx._bindings import cublaslt as lt
from nvmathx._core.device_array import DeviceArray
from nvmathx._core.dtypes import numpy_dtype
from nvmathx.linalg._cpu import FLOAT8_MAX

from ._host_kernels import host_launch

__all__ = ["FakeCublasLt", "install", "to_device", "to_host", "FakeMemoryResource"]

def view_at(pointer, shape, strides, dtype):
    """A numpy view of memory at ``pointer`` (strides in elements, never negative here)."""
    dtype = np.dtype(dtype)
    if 0 in tuple(shape):
        return np.empty(shape, dtype)
    span = sum((extent - 1) * stride for extent, stride in zip(shape, strides)) + 1
    # Strided as raw bytes, then viewed: the array interface cannot name every ml_dtypes type.
    raw = np.dtype(f"V{dtype.itemsize}")
    flat = np.frombuffer((ctypes.c_char * (span * dtype.itemsize)).from_address(pointer), dtype=raw)
    return np.lib.stride_tricks.as_strided(flat, tuple(shape), tuple(s * dtype.itemsize for s in strides)).view(dtype)




def to_device(array):
    """A DeviceArray on "GPU 0" holding a copy of ``array`` with the same strides."""
    array = np.asarray(array)
    itemsize = array.dtype.itemsize
    strides = tuple(s // itemsize for s in array.strides)
    buffer = FakeBuffer(max(sum((e - 1) * s for e, s in zip(array.shape, strides)) + 1, 1) * itemsize)
    view_at(buffer.handle, array.shape, strides, array.dtype)[...] = array
    return DeviceArray(buffer, buffer.handle, array.shape, strides, array.dtype, 0, None)


def to_host(device_array):
    return np.array(view_at(device_array.ptr, device_array.shape, device_array.strides, device_array.dtype))


_D = lt.MatmulDescAttribute
_L = lt.MatrixLayoutAttribute
_DTYPES = {0: "float32", 1: "float64", 2: "float16", 4: "complex64", 5: "complex128", 14: "bfloat16",
           28: "float8_e4m3fn", 29: "float8_e5m2"}
_RELU, _GELU, _BIAS, _AUX, _DRELU, _DGELU, _BGRAD = 2, 32, 4, 128, 8, 64, 16


def _op(matrix, op):
    """cublasOperation_t: N as stored, T transposed, C conjugate-transposed."""
    return {0: matrix, 1: matrix.T, 2: matrix.conj().T}[int(op)]


def _invalid(what):
    raise lt.CublasLtError(7, "CUBLAS_STATUS_INVALID_VALUE", "fake cuBLASLt", what)


class FakeCublasLt:
    def __init__(self):
        self.objects = {}
        self.next = 0x100
        self.launches = 0
        self.last_launch = None  # (algorithm id, workspace pointer, workspace bytes) of the last cublasLtMatmul

    def _new(self, value):
        self.next += 0x10
        self.objects[self.next] = value
        return self.next

    # -- descriptors ---------------------------------------------------------------------------
    def create(self):
        return self._new("handle")

    def destroy(self, handle):
        del self.objects[handle]

    def matmul_desc_create(self, compute_type, scale_type):
        return self._new({"compute": int(compute_type), "scale": int(scale_type), _D.TRANSA: 0, _D.TRANSB: 0,
                          _D.EPILOGUE: 1})

    def matmul_desc_set(self, desc, attribute, value):
        self.objects[desc][lt.MatmulDescAttribute(attribute)] = value

    def matrix_layout_create(self, data_type, rows, cols, ld):
        if ld < max(rows, 1):
            _invalid(f"ld {ld} < rows {rows}")
        return self._new({"type": int(data_type), "rows": rows, "cols": cols, "ld": ld, _L.BATCH_COUNT: 1,
                          _L.STRIDED_BATCH_OFFSET: 0})

    def matrix_layout_set(self, layout, attribute, value):
        self.objects[layout][lt.MatrixLayoutAttribute(attribute)] = value

    def preference_create(self):
        return self._new({})

    def preference_set(self, preference, attribute, value):
        self.objects[preference][attribute] = value

    matmul_desc_destroy = matrix_layout_destroy = preference_destroy = destroy

    # -- algorithms ----------------------------------------------------------------------------
    def algo_get_heuristic(self, handle, desc, a, b, c, d, preference, requested):
        self._validate(desc, a, b, c, d)
        results = []
        for index in range(min(requested, 3)):
            result = lt.HeuristicResult()
            result.algo[0] = index + 1
            result.algo[1] = self._scaling_mask(desc)
            result.workspaceSize = 1024 * index
            result.wavesCount = 1.0
            results.append(result)
        return results

    # Custom options (word 2 of the fake algo): algorithm 1 takes 0-3 but not 2 on any problem,
    # algorithm 2 none but 0, algorithm 3 takes 0-1.
    CUSTOM_OPTION_MAX = {1: 3, 2: 0, 3: 1}
    UNSUPPORTED_OPTIONS = {(1, 2)}

    def algo_custom_option_max(self, algo):
        return self.CUSTOM_OPTION_MAX[int(np.frombuffer(bytes(algo), np.uint64)[0])]

    def algo_config(self, algo):
        """(id, custom option): words 0 and 2 of the fake algo; the other words are no part of it."""
        words = np.frombuffer(bytes(algo), np.uint64)
        return int(words[0]), int(words[2])

    def algo_with_custom_option(self, algo, option):
        words = np.frombuffer(bytes(algo), np.uint64).copy()
        words[2] = option
        return words.tobytes()

    def algo_check(self, handle, desc, a, b, c, d, algo):
        self._validate(desc, a, b, c, d)
        words = np.frombuffer(bytes(algo), np.uint64)
        if not 1 <= words[0] <= 3:
            _invalid("unknown algorithm")
        option = int(words[2])
        if option > self.CUSTOM_OPTION_MAX[int(words[0])] or (int(words[0]), option) in self.UNSUPPORTED_OPTIONS:
            raise lt.CublasLtError(15, "CUBLAS_STATUS_NOT_SUPPORTED", "fake cuBLASLt", f"custom option {option}")
        self._check_scaling(desc, words)
        result = lt.HeuristicResult()
        result.algo[0], result.algo[1] = int(words[0]), int(words[1])
        result.workspaceSize = 1024 * (int(words[0]) - 1)
        result.wavesCount = 1.0
        return result

    def _scaling_mask(self, desc):
        """Which float8 scale / amax pointers are set: the real library picks float8 kernels for
        them, and an algorithm found without them fails once they are set (and vice versa)."""
        info = self.objects[desc]
        pointers = (_D.A_SCALE_POINTER, _D.B_SCALE_POINTER, _D.D_SCALE_POINTER, _D.AMAX_D_POINTER)
        return sum(1 << bit for bit, attribute in enumerate(pointers) if info.get(attribute))

    def _check_scaling(self, desc, algo):
        if algo[1] != self._scaling_mask(desc):
            raise lt.CublasLtError(15, "CUBLAS_STATUS_NOT_SUPPORTED", "fake cuBLASLt",
                                   "scale pointers differ from the heuristic's")

    def _validate(self, desc, a, b, c, d):
        desc, a, b, c, d = (self.objects[x] for x in (desc, a, b, c, d))
        op_a = (a["cols"], a["rows"]) if desc[_D.TRANSA] else (a["rows"], a["cols"])
        op_b = (b["cols"], b["rows"]) if desc[_D.TRANSB] else (b["rows"], b["cols"])
        if (op_a[0] != d["rows"] or op_b[1] != d["cols"] or op_a[1] != op_b[0]
                or (c["rows"], c["cols"]) != (d["rows"], d["cols"])):
            _invalid(f"dimensions op(A) {op_a}, op(B) {op_b}, C {c['rows']}x{c['cols']}, D {d['rows']}x{d['cols']}")
        if len({x[_L.BATCH_COUNT] for x in (a, b, c, d)}) != 1:
            _invalid("batch counts differ")
        if _DTYPES[a["type"]].startswith("float8") and (desc[_D.TRANSA] != 1 or desc[_D.TRANSB] != 0):
            _invalid("float8 needs TN")
        epilogue = int(desc[_D.EPILOGUE])
        if epilogue == 512 and desc[_D.TRANSB] != 1:
            _invalid("BGRADB needs op(B) = T")
        if epilogue & _AUX:
            ld, multiple = desc.get(_D.EPILOGUE_AUX_LD, 0), 128 if epilogue & (_RELU | _DRELU) else 8
            if ld % multiple or ld < d["rows"] or not desc.get(_D.EPILOGUE_AUX_POINTER):
                _invalid(f"aux ld {ld} / pointer")
        if epilogue & (_BIAS | _BGRAD) or epilogue in (256, 512):
            if not desc.get(_D.BIAS_POINTER):
                _invalid("bias pointer")

    # -- the product ---------------------------------------------------------------------------
    def matmul_function(self):
        return self._launch

    def _launch(self, *args):
        assert len(args) == 16 and all(isinstance(x, (ctypes.c_void_p, ctypes.c_size_t)) for x in args)
        (handle, desc, alpha, a, a_layout, b, b_layout, beta, c, c_layout, d, d_layout, algo, workspace, size,
         stream) = (x.value or 0 for x in args)
        assert handle in self.objects and algo
        self._validate(desc, a_layout, b_layout, c_layout, d_layout)
        algo_words = (ctypes.c_uint64 * 8).from_address(algo)
        if algo_words[1] != self._scaling_mask(desc):
            return 15  # CUBLAS_STATUS_NOT_SUPPORTED, as the real library answers
        scales = (_D.A_SCALE_POINTER, _D.B_SCALE_POINTER, _D.D_SCALE_POINTER)
        if any(self.objects[desc].get(attribute, 0) % 16 for attribute in scales):
            return 15  # and so it answers a scale not 16-byte aligned (H200: logs/2026-12-05/run7-*/probe.txt)
        if size:
            assert workspace, "workspace size without a workspace"
            view_at(workspace, (size,), (1,), np.uint8)[...] = 0xCD  # prove it is writable
        desc_info = self.objects[desc]
        scale = numpy_dtype(_DTYPES[desc_info["scale"]])
        alpha_value, beta_value = (view_at(p, (1,), (1,), scale)[0] for p in (alpha, beta))
        layouts = {name: self.objects[x]
                   for name, x in (("a", a_layout), ("b", b_layout), ("c", c_layout), ("d", d_layout))}
        for batch in range(layouts["d"][_L.BATCH_COUNT]):
            self._one(desc_info, batch, layouts, a, b, c, d, alpha_value, beta_value)
        self.launches += 1
        self.last_launch = (int(algo_words[0]), workspace, size)
        return 0

    @staticmethod
    def _matrix(pointer, layout, batch):
        dtype = numpy_dtype(_DTYPES[layout["type"]])
        offset = batch * layout[_L.STRIDED_BATCH_OFFSET] * dtype.itemsize
        return view_at(pointer + offset, (layout["rows"], layout["cols"]), (1, layout["ld"]), dtype)

    def _scale(self, desc, attribute):
        pointer = desc.get(attribute)
        return float(view_at(pointer, (1,), (1,), np.float32)[0]) if pointer else 1.0

    def _one(self, desc, batch, layouts, a, b, c, d, alpha, beta):
        wide = np.complex128 if _DTYPES[layouts["d"]["type"]].startswith("complex") else np.float64
        op_a = _op(self._matrix(a, layouts["a"], batch).astype(wide), desc[_D.TRANSA])
        op_b = _op(self._matrix(b, layouts["b"], batch).astype(wide), desc[_D.TRANSB])
        value = alpha * self._scale(desc, _D.A_SCALE_POINTER) * self._scale(desc, _D.B_SCALE_POINTER) * (op_a @ op_b)
        if c and beta != 0:
            value = value + beta * self._matrix(c, layouts["c"], batch).astype(wide)
        epilogue = int(desc[_D.EPILOGUE])
        d_dtype = numpy_dtype(_DTYPES[layouts["d"]["type"]])
        rows, cols = value.shape
        bias_at = desc.get(_D.BIAS_POINTER, 0) + batch * desc.get(_D.BIAS_BATCH_STRIDE, 0) * d_dtype.itemsize
        aux_ld = desc.get(_D.EPILOGUE_AUX_LD, 0)
        aux_at = desc.get(_D.EPILOGUE_AUX_POINTER, 0)
        aux_batch = batch * desc.get(_D.EPILOGUE_AUX_BATCH_STRIDE, 0)
        if epilogue & _BIAS and not epilogue & _BGRAD:
            value = value + view_at(bias_at, (rows, 1), (1, 0), d_dtype).astype(wide)
        if epilogue & _AUX and epilogue & (_RELU | _GELU):  # forward with an auxiliary output
            if epilogue & _RELU:
                bits = np.zeros(aux_ld * cols, bool)
                bits.reshape(cols, aux_ld)[:, :rows] = (value > 0).T
                packed = np.packbits(bits, bitorder="little")
                view_at(aux_at + aux_batch // 8, packed.shape, (1,), np.uint8)[...] = packed
            else:
                aux = view_at(aux_at + aux_batch * d_dtype.itemsize, (rows, cols), (1, aux_ld), d_dtype)
                aux[...] = value.astype(d_dtype)
        if epilogue & _RELU:
            value = np.maximum(value, 0)
        elif epilogue & _GELU:
            value = 0.5 * value * (1 + np.tanh(np.sqrt(2 / np.pi) * (value + 0.044715 * value**3)))
        elif epilogue & _DRELU:
            raw = view_at(aux_at + aux_batch // 8, (aux_ld * cols // 8,), (1,), np.uint8)
            mask = np.unpackbits(raw, bitorder="little").reshape(cols, aux_ld)[:, :rows].T
            value = value * mask
        elif epilogue & _DGELU:
            z = view_at(aux_at + aux_batch * d_dtype.itemsize, (rows, cols), (1, aux_ld), d_dtype).astype(np.float64)
            t = np.tanh(np.sqrt(2 / np.pi) * (z + 0.044715 * z**3))
            value = value * (0.5 * (1 + t) + 0.5 * z * (1 - t * t) * np.sqrt(2 / np.pi) * (1 + 3 * 0.044715 * z * z))
        if epilogue & _BGRAD:
            view_at(bias_at, (rows,), (1,), d_dtype)[...] = value.sum(axis=1).astype(d_dtype)
        elif epilogue == 256:  # BGRADA: op(A) summed over k, one per row of D
            view_at(bias_at, (rows,), (1,), d_dtype)[...] = op_a.sum(axis=1).astype(d_dtype)
        elif epilogue == 512:  # BGRADB: op(B) summed over k, one per column of D
            view_at(bias_at, (cols,), (1,), d_dtype)[...] = op_b.sum(axis=0).astype(d_dtype)
        if desc.get(_D.AMAX_D_POINTER):
            view_at(desc[_D.AMAX_D_POINTER], (1,), (1,), np.float32)[0] = np.abs(value).max()
        value = value * self._scale(desc, _D.D_SCALE_POINTER)
        if d_dtype.name in FLOAT8_MAX:  # saturate (a table: np.finfo rejects ml_dtypes types on numpy 2.3)
            limit = FLOAT8_MAX[d_dtype.name]
            value = np.clip(value, -limit, limit)
        self._matrix(d, layouts["d"], batch)[...] = value.astype(d_dtype)


class _FakeEvent:
    clock = 0.0

    def __init__(self):
        _FakeEvent.clock += 0.25
        self.time = _FakeEvent.clock

    def sync(self):
        pass

    def __sub__(self, other):
        return self.time - other.time


class _FakeCoreStream:
    def record(self, event=None, options=None):
        return _FakeEvent()

    def sync(self):
        pass


def install(monkeypatch):
    """Swap cuBLASLt and the device for host fakes; returns (fake cuBLASLt, default memory resource)."""
    from nvmathx._bindings import cuda_driver
    from nvmathx._core import device, execution, memory, streams
    from nvmathx.linalg import _autotune, _cublaslt_plan, _kernels, plan_cache

    fake = FakeCublasLt()
    for name in ("create", "destroy", "matmul_desc_create", "matmul_desc_destroy", "matmul_desc_set",
                 "matrix_layout_create", "matrix_layout_destroy", "matrix_layout_set", "preference_create",
                 "preference_destroy", "preference_set", "algo_get_heuristic", "algo_check", "algo_custom_option_max",
                 "algo_with_custom_option", "algo_config", "matmul_function"):
        monkeypatch.setattr(lt, name, getattr(fake, name))
    monkeypatch.setattr(cuda_driver, "memcpy_async", lambda dst, src, n, stream: ctypes.memmove(dst, src, n))
    monkeypatch.setattr(cuda_driver, "memset_async", lambda dst, value, n, stream: ctypes.memset(dst, value, n))
    monkeypatch.setattr(_kernels, "launch", host_launch)  # the kernels of problems with an extent of 0
    monkeypatch.setattr(cuda_driver, "stream_synchronize", lambda stream: None)
    monkeypatch.setattr(cuda_driver, "stream_is_capturing", lambda stream: False)
    monkeypatch.setattr(cuda_driver, "stream_wait_stream", lambda waiting, producing: None)
    monkeypatch.setattr(device, "ensure_device", lambda device_id: None)
    monkeypatch.setattr(execution, "_device_count", lambda: (1, None))  # one fake GPU
    monkeypatch.setattr(_cublaslt_plan, "ensure_device", lambda device_id: None)
    monkeypatch.setattr(_cublaslt_plan, "_handles", {})
    monkeypatch.setattr(_autotune, "_flusher", lambda device_id, stream, resource: (lambda: None, FakeBuffer(1)))
    resource = FakeMemoryResource()
    monkeypatch.setattr(memory, "default_memory_resource", lambda device_id: resource)
    monkeypatch.setattr(streams, "default_stream_handle", lambda device_id: 7)
    monkeypatch.setattr(streams, "_holders", {(7, 0): streams.StreamHolder(7, 0, core=_FakeCoreStream())})
    plan_cache.clear()
    return fake, resource
