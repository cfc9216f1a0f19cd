"""The fused FFT kernel's own code run on the host (see ``_fused_host``): loads, stores, offsets,
scales and callbacks of every transform kind against numpy in float64, through the row strides
the engine plans for contiguous, strided-axis and in-place operands. No GPU."""

import numpy as np
import pytest

from helpers.requirements import needs_mathdx
from nvmathx._codegen import fused_fft
from nvmathx._fftcore.engine import fused_rows
from nvmathx._fftcore.layout import C2C, C2R, R2C, plan_layout

from ._fused_host import HostFusedKernel

pytestmark = needs_mathdx

_COMPLEX = {np.float32: np.complex64, np.float64: np.complex128}
_TOLERANCE = {np.float32: 1e-5, np.float64: 1e-12}


def _descriptor(size, precision, fft_type="c2c", direction=None, **knobs):
    from nvmathx.device_api import FFT

    return FFT(size, precision, fft_type=fft_type, direction=direction, sm=(9, 0), **knobs)


def _error(got, expected):
    return np.linalg.norm(got - expected) / np.linalg.norm(expected)


def _strides(array):
    return tuple(s // array.itemsize for s in array.strides)


def _rows(fft_type, axis, shape, in_strides, out_strides, precision, inplace=False):
    """The kernel's (rows, row and element strides) as the engine plans them for the operand."""
    n = shape[axis] if fft_type != C2R else 2 * (shape[axis] - 1)
    kind = {"c2c": C2C, "r2c": R2C, "c2r": C2R}[fft_type]
    layout = plan_layout(kind, (axis,), (n,), shape, in_strides, out_strides, inplace=inplace,
                         overwrite_input=fft_type == "c2r")
    rows = fused_rows(layout, np.dtype(precision).name)
    assert not isinstance(rows, str), rows
    return rows.rows, (rows.in_row_stride, rows.in_element_stride), (rows.out_row_stride, rows.out_element_stride)


def _complex_signal(rng, shape, precision):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(_COMPLEX[precision])


@pytest.mark.parametrize("precision", [np.float32, np.float64])
@pytest.mark.parametrize("size, knobs", [(64, {}), (256, {"elements_per_thread": 8, "ffts_per_block": 2}),
                                         (120, {}), (17, {}), (1024, {"elements_per_thread": 16, "ffts_per_block": 1})])
@pytest.mark.parametrize("direction", ["forward", "inverse"])
def test_c2c_rows_with_a_ragged_last_block(rng, precision, size, knobs, direction):
    fft = _descriptor(size, precision, direction=direction, **knobs)
    batch = 2 * fft.ffts_per_block + 1  # the last block has rows past the batch
    x = _complex_signal(rng, (batch, size), precision)
    sentinel = _complex_signal(rng, (batch + 1, size), precision)  # one row past the batch must stay
    y = sentinel.copy()
    rows, in_strides, out_strides = _rows("c2c", 1, x.shape, _strides(x), _strides(x), precision)
    HostFusedKernel(fft).run(x, y, rows, in_strides, out_strides, scale=0.5)
    transform = np.fft.fft if direction == "forward" else lambda a, axis: np.fft.ifft(a, axis=axis) * size
    expected = 0.5 * transform(x.astype(np.complex128), axis=1)
    assert _error(y[:batch], expected) < _TOLERANCE[precision]
    assert np.array_equal(y[batch:], sentinel[batch:])


@pytest.mark.parametrize("precision", [np.float32, np.float64])
def test_c2c_along_a_strided_axis_of_a_sliced_view(rng, precision):
    size, columns = 128, 7
    fft = _descriptor(size, precision, direction="forward")
    base = _complex_signal(rng, (size, columns + 3), precision)
    view = base[:, 2:2 + columns]  # rows are columns: element stride columns + 3, row stride 1
    y = np.zeros((size, columns), _COMPLEX[precision])
    rows, in_strides, out_strides = _rows("c2c", 0, view.shape, _strides(view), _strides(y), precision)
    assert in_strides == (1, columns + 3) and out_strides == (1, columns)
    HostFusedKernel(fft).run(base, y, rows, in_strides, out_strides, source_offset=2)
    assert _error(y, np.fft.fft(view.astype(np.complex128), axis=0)) < _TOLERANCE[precision]


@pytest.mark.parametrize("precision", [np.float32, np.float64])
@pytest.mark.parametrize("size, real_mode", [(64, "normal"), (128, "normal"), (1024, "normal"), (30, "normal"),
                                             (17, "normal"), (64, "folded"), (1024, "folded"), (4096, "folded"),
                                             (32, "folded"), (2048, "folded"), (4, "folded")])
def test_r2c_and_c2r_rows(rng, precision, size, real_mode):
    batch = 5
    x = rng.standard_normal((batch, size)).astype(precision)
    half = np.zeros((batch, size // 2 + 1), _COMPLEX[precision])
    r2c = _descriptor(size, precision, fft_type="r2c", real_mode=real_mode)
    rows, in_strides, out_strides = _rows("r2c", 1, x.shape, _strides(x), _strides(half), precision)
    HostFusedKernel(r2c).run(x, half, rows, in_strides, out_strides)
    spectrum = np.fft.rfft(x.astype(np.float64), axis=1)
    assert _error(half, spectrum) < _TOLERANCE[precision]

    c2r = _descriptor(size, precision, fft_type="c2r", real_mode=real_mode)
    back = np.zeros((batch, size), precision)
    operand = spectrum.astype(_COMPLEX[precision])
    rows, in_strides, out_strides = _rows("c2r", 1, operand.shape, _strides(operand), _strides(back), precision)
    HostFusedKernel(c2r).run(operand, back, rows, in_strides, out_strides, scale=1.0 / size)
    assert _error(back, np.fft.irfft(operand.astype(np.complex128), n=size, axis=1)) < _TOLERANCE[precision]


@pytest.mark.parametrize("real_mode", ["normal", "folded"])
def test_r2c_and_c2r_along_a_strided_axis(rng, real_mode):
    size, columns = 64, 6
    x = rng.standard_normal((size, columns)).astype(np.float32)
    y = np.zeros((size // 2 + 1, columns), np.complex64)
    rows, in_strides, out_strides = _rows("r2c", 0, x.shape, _strides(x), _strides(y), np.float32)
    assert in_strides == (1, columns) and out_strides == (1, columns)
    r2c = _descriptor(size, np.float32, fft_type="r2c", real_mode=real_mode)
    HostFusedKernel(r2c).run(x, y, rows, in_strides, out_strides)
    assert _error(y, np.fft.rfft(x.astype(np.float64), axis=0)) < 1e-5
    back = np.zeros_like(x)
    rows, in_strides, out_strides = _rows("c2r", 0, y.shape, _strides(y), _strides(back), np.float32)
    c2r = _descriptor(size, np.float32, fft_type="c2r", real_mode=real_mode)
    HostFusedKernel(c2r).run(y, back, rows, in_strides, out_strides, scale=1.0 / size)
    assert _error(back, x) < 1e-5


@pytest.mark.parametrize("start", [0, 1])
def test_folded_rows_of_any_alignment(rng, start):
    # a row stride of size + 1 reals puts every other row, and with start 1 every row's first pair
    # off the complex type's alignment: those rows take one load (store) per real
    size, batch = 64, 6
    buffer = rng.standard_normal(start + batch * (size + 1)).astype(np.float32)
    x = buffer[start:].reshape(batch, size + 1)[:, :size]
    half = np.zeros((batch, size // 2 + 1), np.complex64)
    r2c = _descriptor(size, np.float32, fft_type="r2c", real_mode="folded")
    HostFusedKernel(r2c).run(buffer, half, batch, (size + 1, 1), (size // 2 + 1, 1), source_offset=start)
    assert _error(half, np.fft.rfft(x.astype(np.float64), axis=1)) < 1e-5
    sentinel = rng.standard_normal(buffer.size).astype(np.float32)
    back = sentinel.copy()
    c2r = _descriptor(size, np.float32, fft_type="c2r", real_mode="folded")
    HostFusedKernel(c2r).run(half, back, batch, (size // 2 + 1, 1), (size + 1, 1), scale=1.0 / size,
                             target_offset=start)
    rows = back[start:].reshape(batch, size + 1)
    assert _error(rows[:, :size], x) < 1e-5
    assert np.array_equal(rows[:, size], sentinel[start:].reshape(batch, size + 1)[:, size])  # padding kept
    assert back[:start].tolist() == sentinel[:start].tolist()


def test_c2c_in_place(rng):
    size, batch = 256, 3
    x = _complex_signal(rng, (batch, size), np.float64)
    expected = np.fft.fft(x, axis=1)
    rows, in_strides, out_strides = _rows("c2c", 1, x.shape, _strides(x), _strides(x), np.float64, inplace=True)
    HostFusedKernel(_descriptor(size, np.float64, direction="forward")).run(x, x, rows, in_strides, out_strides)
    assert _error(x, expected) < 1e-12


_CALLBACKS = r"""
// cuFFT's callback signatures; the user data is a float64 array indexed by the element offset
extern "C" {load_type} load(void* data, unsigned long long offset, void* info, void* shared) {{
    const double gain = static_cast<const double*>(info)[offset];
    const {load_type} value = static_cast<const {load_type}*>(data)[offset];
    return shared ? {load_type}{{}} : {load_scaled};
}}
extern "C" void store(void* data, unsigned long long offset, {store_type} value, void* info, void* shared) {{
    const double gain = static_cast<const double*>(info)[offset];
    static_cast<{store_type}*>(data)[offset] = shared ? {store_type}{{}} : {store_scaled};
}}
"""


def _callbacks(load_type, store_type):
    def scaled(kind):
        return f"{kind}{{value.x * ({kind[:-1]})gain, value.y * ({kind[:-1]})gain}}" if kind.endswith("2") \
            else f"({kind})(value * gain)"

    return _CALLBACKS.format(load_type=load_type, store_type=store_type, load_scaled=scaled(load_type),
                             store_scaled=scaled(store_type))


@pytest.mark.parametrize("fft_type, precision, real_mode", [
    ("c2c", np.float32, "normal"), ("r2c", np.float32, "normal"), ("c2r", np.float64, "normal"),
    ("c2c", np.float64, "normal"), ("r2c", np.float64, "folded"), ("c2r", np.float32, "folded")])
def test_callbacks_see_cuffts_offsets_and_the_store_gets_the_scaled_value(rng, fft_type, precision, real_mode):
    size, columns = 32, 5
    complex_ = _COMPLEX[precision]
    in_length = size // 2 + 1 if fft_type == "c2r" else size
    out_length = size // 2 + 1 if fft_type == "r2c" else size
    # rows along axis 0 of a (length, columns) operand with two leading padding elements
    in_dtype = precision if fft_type == "r2c" else complex_
    out_dtype = precision if fft_type == "c2r" else complex_
    source = rng.standard_normal(2 + in_length * columns)
    if in_dtype == complex_:
        source = source + 1j * rng.standard_normal(source.shape)
    source = source.astype(in_dtype)
    if fft_type == "c2r":  # a Hermitian operand: real first (and Nyquist) elements
        source[2::columns].imag[[0, -1]] = 0
    target = np.zeros(out_length * columns, out_dtype)
    load_gain = rng.uniform(0.5, 2.0, source.size - 2)  # offsets count from the pointer the kernel gets
    store_gain = rng.uniform(0.5, 2.0, target.size)
    element = {"float32": "float", "float64": "double"}
    c_in = element[np.dtype(in_dtype).name] if in_dtype != complex_ else element[np.dtype(precision).name] + "2"
    c_out = element[np.dtype(out_dtype).name] if out_dtype != complex_ else element[np.dtype(precision).name] + "2"
    fft = _descriptor(size, precision, fft_type=fft_type, direction="forward" if fft_type == "c2c" else None,
                      real_mode=real_mode)
    kernel = HostFusedKernel(fft, load="load", store="store", callbacks=_callbacks(c_in, c_out))
    kernel.run(source, target, columns, (1, columns), (1, columns), scale=0.25, load_info=load_gain,
               store_info=store_gain, source_offset=2)
    loaded = (source[2:] * load_gain).reshape(in_length, columns).astype(np.complex128)
    if fft_type == "c2c":
        transformed = np.fft.fft(loaded, axis=0)
    elif fft_type == "r2c":
        transformed = np.fft.rfft(loaded.real, axis=0)
    else:
        transformed = np.fft.irfft(loaded, n=size, axis=0) * size
    expected = 0.25 * transformed * store_gain.reshape(out_length, columns)
    assert _error(target.reshape(out_length, columns), expected) < _TOLERANCE[precision]


@pytest.mark.parametrize("precision", [np.float32, np.float64])
@pytest.mark.parametrize("size, knobs", [(4, {}), (64, {"elements_per_thread": 8, "ffts_per_block": 2}),
                                         (4096, {"elements_per_thread": 16, "ffts_per_block": 1})])
def test_staged_loads_read_folded_rows(rng, precision, size, knobs):
    # consecutive reals through shared memory, then pairs into the registers: a ragged last block,
    # and rows along a strided axis
    r2c = _descriptor(size, precision, fft_type="r2c", real_mode="folded", **knobs)
    batch = 2 * r2c.ffts_per_block + 1
    x = rng.standard_normal((batch, size)).astype(precision)
    sentinel = rng.standard_normal((batch + 1, size // 2 + 1)).astype(_COMPLEX[precision])
    half = sentinel.copy()
    rows, in_strides, out_strides = _rows("r2c", 1, x.shape, _strides(x), _strides(half), precision)
    HostFusedKernel(r2c, staged_loads=True).run(x, half, rows, in_strides, out_strides, scale=0.5)
    assert _error(half[:batch], 0.5 * np.fft.rfft(x.astype(np.float64), axis=1)) < _TOLERANCE[precision]
    assert np.array_equal(half[batch:], sentinel[batch:])
    columns = x.T.copy()  # (size, batch): rows along axis 0
    y = np.zeros((size // 2 + 1, batch), _COMPLEX[precision])
    rows, in_strides, out_strides = _rows("r2c", 0, columns.shape, _strides(columns), _strides(y), precision)
    HostFusedKernel(r2c, staged_loads=True).run(columns, y, rows, in_strides, out_strides)
    assert _error(y, np.fft.rfft(columns.astype(np.float64), axis=0)) < _TOLERANCE[precision]


def test_staged_loads_call_the_load_callback_with_cuffts_offsets(rng):
    size, batch = 64, 3
    source = rng.standard_normal(2 + size * batch).astype(np.float32)
    gain = rng.uniform(0.5, 2.0, source.size - 2)
    store_gain = np.ones(batch * (size // 2 + 1))
    half = np.zeros(batch * (size // 2 + 1), np.complex64)
    r2c = _descriptor(size, np.float32, fft_type="r2c", real_mode="folded")
    kernel = HostFusedKernel(r2c, load="load", store="store", callbacks=_callbacks("float", "float2"),
                             staged_loads=True)
    kernel.run(source, half, batch, (size, 1), (size // 2 + 1, 1), load_info=gain, store_info=store_gain,
               source_offset=2)
    loaded = (source[2:] * gain).reshape(batch, size)
    assert _error(half.reshape(batch, -1), np.fft.rfft(loaded, axis=1)) < 1e-5


def test_staged_loads_are_for_a_folded_real_input():
    with pytest.raises(ValueError, match="folded real input"):
        fused_fft.kernel_source("k", "f", element="complex64", input="complex64", output="complex64",
                                input_length=64, output_length=64, stride=8, input_count=8, output_count=8, storage=8,
                                ffts_per_block=1, threads=8, staged_loads=True)
    fft = _descriptor(4096, np.float32, fft_type="r2c", real_mode="folded")
    assert fused_fft.shared_memory_bytes(fft, staged_loads=True) == max(fft.shared_memory_size,
                                                                         4096 * 4 * fft.ffts_per_block)
    assert fused_fft.shared_memory_bytes(fft) == fft.shared_memory_size


def test_a_register_the_layout_leaves_undefined_is_never_stored(rng):
    # the model fills unused registers with NaN: a store of one would show here
    for size, fft_type, real_mode in ((100, "r2c", "normal"), (100, "c2r", "normal"), (33, "c2c", "normal"),
                                      (128, "r2c", "folded"), (128, "c2r", "folded")):
        fft = _descriptor(size, np.float64, fft_type=fft_type, direction="forward" if fft_type == "c2c" else None,
                          real_mode=real_mode)
        in_length = size // 2 + 1 if fft_type == "c2r" else size
        out_length = size // 2 + 1 if fft_type == "r2c" else size
        source = rng.standard_normal((3, in_length))
        if fft_type != "r2c":
            source = source + 1j * rng.standard_normal((3, in_length))
        target = np.zeros((3, out_length), np.float64 if fft_type == "c2r" else np.complex128)
        kernel = HostFusedKernel(fft)
        kernel.run(np.ascontiguousarray(source), target, 3, (in_length, 1), (out_length, 1))
        assert np.isfinite(target).all()


@pytest.mark.parametrize("fft_type, real_mode", [("c2c", "normal"), ("r2c", "folded"), ("r2c", "normal"),
                                                 ("c2r", "folded")])
def test_a_dense_row_stride_compiled_in_gives_the_row_stride_arguments_results(rng, fft_type, real_mode):
    """Contiguous rows: the kernel with the row stride compiled in (what a plan builds for them) and
    the one reading it from its argument store the same values, callbacks (offsets) included."""
    size, batch = 64, 3
    in_length = size // 2 + 1 if fft_type == "c2r" else size
    out_length = size // 2 + 1 if fft_type == "r2c" else size
    in_real, out_real = fft_type == "r2c", fft_type == "c2r"
    source = rng.standard_normal(batch * in_length)
    if not in_real:
        source = source + 1j * rng.standard_normal(source.shape)
    source = source.astype(np.float32 if in_real else np.complex64)
    if fft_type == "c2r":
        source.reshape(batch, in_length).imag[:, [0, -1]] = 0
    gain = rng.uniform(0.5, 2.0, source.size)
    store_gain = rng.uniform(0.5, 2.0, batch * out_length)
    fft = _descriptor(size, np.float32, fft_type=fft_type, real_mode=real_mode,
                      **({"direction": "forward"} if fft_type == "c2c" else {}))
    kernel = HostFusedKernel(fft, load="load", store="store",
                             callbacks=_callbacks("float" if in_real else "float2", "float" if out_real else "float2"))
    results = []
    for dense in ((True, True), (False, False)):
        kernel.dense_rows = dense
        target = np.zeros(batch * out_length, np.float32 if out_real else np.complex64)
        kernel.run(source, target, batch, (in_length, 1), (out_length, 1), scale=0.5, load_info=gain,
                   store_info=store_gain)
        results.append(target)
    np.testing.assert_array_equal(results[0], results[1])
    loaded = (source.astype(np.complex128 if not in_real else np.float64) * gain).reshape(batch, in_length)
    transformed = {"c2c": lambda a: np.fft.fft(a, axis=1), "r2c": lambda a: np.fft.rfft(a, axis=1),
                   "c2r": lambda a: np.fft.irfft(a, n=size, axis=1) * size}[fft_type](loaded)
    expected = 0.5 * transformed.reshape(-1) * store_gain  # the store callback gets the scaled value
    assert _error(results[0], expected) < 1e-5
