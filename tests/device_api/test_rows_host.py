"""``FFT.load`` / ``FFT.store``'s generated CUDA C++ run on the host (each thread of a block in turn:
the copy has no synchronisation), against the register layout read from the descriptor's traits:
element ``threadIdx.x + i * stride`` in register ``i``, reals one per position (normal) or two per
complex register (folded) on the real side. Rows shorter or longer than the transform, rows outside
the array. No GPU."""

import ctypes

import numpy as np
import pytest

from helpers.host_kernels import ASSUME, build_library
from helpers.requirements import needs_mathdx
from nvmathx.device_api import _rows

pytestmark = needs_mathdx

_PRELUDE = r"""
#define __device__
struct dims_ { unsigned int x, y, z; };
static dims_ threadIdx;
struct float2 { float x, y; };
struct double2 { double x, y; };
"""

_RUN = r"""
extern "C" void run(void* array, long long rows, long long length, long long row, unsigned char* registers,
                    unsigned threads, unsigned long long register_bytes) {{
    for (unsigned t = 0; t < threads; ++t) {{
        threadIdx = {{t, 0, 0}};
        {symbol}(static_cast<{array}*>(array), rows, length, row,
                 reinterpret_cast<{element}*>(registers + t * register_bytes));
    }}
}}
"""

_C_TYPES = {"complex64": "float2", "complex128": "double2", "float32": "float", "float64": "double"}


class HostRows:
    """``fft.load`` or ``fft.store`` built for the host; registers are a (threads, storage) array."""

    def __init__(self, fft, kind):
        parameters = _rows.row_parameters(fft, kind)
        source = _rows.source(kind, "copy", **parameters)
        run = _RUN.format(symbol="copy", array=_C_TYPES[parameters["array"]], element=_C_TYPES[parameters["element"]])
        self.library = build_library(_PRELUDE + ASSUME + source + run, f"rows-{kind}")
        self.library.run.argtypes = [ctypes.c_void_p] + [ctypes.c_longlong] * 3 + [ctypes.c_void_p, ctypes.c_uint,
                                                                                      ctypes.c_ulonglong]
        self.fft = fft

    def __call__(self, array, row, registers):
        rows, length = (array.shape if array.ndim == 2 else (1, array.shape[0]))
        self.library.run(array.ctypes.data, rows, length, row, registers.ctypes.data, registers.shape[0],
                         registers.strides[0])


def _descriptor(size, precision, fft_type, real_mode="normal"):
    from nvmathx.device_api import FFT

    return FFT(size, precision, fft_type=fft_type, direction="forward" if fft_type == "c2c" else None,
               real_mode=real_mode, sm=(9, 0))


def _layout(fft, kind):
    """(side, positions): how the side ``kind`` touches sits in the registers, from the traits alone."""
    real_side = (fft.fft_type, kind) in (("r2c", "load"), ("c2r", "store"))
    if not real_side:
        return "complex", fft.input_length if kind == "load" else fft.output_length
    return ("pairs", fft.size // 2) if fft.real_mode == "folded" else ("reals", fft.size)


def _slots(fft, side):
    """(thread, register, position) for every register the layout gives a position."""
    threads = fft.block_dim[0]
    capacity = 2 * fft.storage_size if side == "reals" else fft.storage_size
    return [(t, i, t + i * fft.stride) for t in range(threads) for i in range(capacity)]


CASES = [(1024, np.float32, "c2c", "normal"), (17, np.float64, "c2c", "normal"),
         (64, np.float32, "r2c", "normal"), (64, np.float32, "r2c", "folded"), (4096, np.float32, "r2c", "folded"),
         (30, np.float64, "c2r", "normal"), (32, np.float64, "c2r", "folded"), (1024, np.float32, "c2r", "folded")]


@pytest.mark.parametrize("size, precision, fft_type, real_mode", CASES)
@pytest.mark.parametrize("row_length", ["exact", "short", "long"])
def test_load_puts_each_element_in_its_register(rng, size, precision, fft_type, real_mode, row_length):
    fft = _descriptor(size, precision, fft_type, real_mode)
    side, positions = _layout(fft, "load")
    dtype = fft._row_dtype("load")
    elements = 2 * positions if side == "pairs" else positions
    length = {"exact": elements, "short": elements - 3, "long": elements + 5}[row_length]
    rows = rng.standard_normal((3, length))
    if dtype.kind == "c":
        rows = rows + 1j * rng.standard_normal((3, length))
    rows = rows.astype(dtype)
    registers = np.full((fft.block_dim[0], fft.storage_size), complex(np.nan, np.nan), fft.value_dtype)
    HostRows(fft, "load")(rows, 1, registers)
    row = np.concatenate([rows[1, :min(length, elements)], np.zeros(max(0, elements - length), dtype)])
    reals = registers.view(np.dtype(fft.precision))
    for thread, i, p in _slots(fft, side):
        if side == "complex" and p < positions:
            assert registers[thread, i] == row[p], (thread, i, p)
        elif side == "reals" and p < positions:
            assert reals[thread, i] == row[p], (thread, i, p)
        elif side == "pairs" and p < positions:
            assert registers[thread, i] == row[2 * p] + 1j * row[2 * p + 1], (thread, i, p)


@pytest.mark.parametrize("size, precision, fft_type, real_mode", CASES)
@pytest.mark.parametrize("row_length", ["exact", "short", "long"])
def test_store_writes_each_register_to_its_element_and_nothing_else(rng, size, precision, fft_type, real_mode,
                                                                    row_length):
    fft = _descriptor(size, precision, fft_type, real_mode)
    side, positions = _layout(fft, "store")
    dtype = fft._row_dtype("store")
    elements = 2 * positions if side == "pairs" else positions
    length = {"exact": elements, "short": elements - 3, "long": elements + 5}[row_length]
    registers = (rng.standard_normal((fft.block_dim[0], fft.storage_size))
                 + 1j * rng.standard_normal((fft.block_dim[0], fft.storage_size))).astype(fft.value_dtype)
    sentinel = np.full((3, length), 7, dtype)
    rows = sentinel.copy()
    HostRows(fft, "store")(rows, 1, registers)
    expected = np.zeros(elements, dtype)
    reals = registers.view(np.dtype(fft.precision))
    for thread, i, p in _slots(fft, side):
        if p >= positions:
            continue
        if side == "complex":
            expected[p] = registers[thread, i]
        elif side == "reals":
            expected[p] = reals[thread, i]
        else:
            expected[2 * p], expected[2 * p + 1] = registers[thread, i].real, registers[thread, i].imag
    written = min(length, elements)
    assert np.array_equal(rows[1, :written], expected[:written])
    assert np.array_equal(rows[1, written:], sentinel[1, written:])  # past the transform: untouched
    assert np.array_equal(rows[[0, 2]], sentinel[[0, 2]])  # other rows: untouched


def test_a_row_outside_the_array_is_neither_read_nor_written(rng):
    fft = _descriptor(64, np.float32, "r2c", "folded")
    registers = np.full((fft.block_dim[0], fft.storage_size), complex(np.nan, np.nan), fft.value_dtype)
    HostRows(fft, "load")(rng.standard_normal((2, 64)).astype(np.float32), 2, registers)
    assert np.isnan(registers.view(np.float32)).all()
    rows = np.full((2, 33), 7, np.complex64)
    HostRows(fft, "store")(rows, -1, registers)
    assert (rows == 7).all()
