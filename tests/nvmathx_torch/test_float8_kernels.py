"""The float8 training kernels (nvmathx.torch._float8.kernels) run on the host as the GPU runs them,
against numpy and ml_dtypes: casts, transposes, amax, bias-gradient sums and the scaling update."""

import numpy as np
import pytest

pytest.importorskip("torch")
ml_dtypes = pytest.importorskip("ml_dtypes")

from helpers.host_kernels import HostKernels  # noqa: E402
from nvmathx._codegen.float_formats import FORMAT_CODES  # noqa: E402
from nvmathx.torch._float8 import kernels  # noqa: E402

HOST = HostKernels(kernels.KERNEL_SOURCE, kernels.KERNEL_NAMES, "float8")
LARGEST = {"float8_e4m3fn": 448.0, "float8_e5m2": 57344.0}
NUMPY_INPUT = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float32": np.float32}


def _gelu(z):
    return 0.5 * z * (1 + np.tanh(0.7978845608028654 * (z + 0.044715 * z ** 3)))


def _gelu_derivative(z):
    t = np.tanh(0.7978845608028654 * (z + 0.044715 * z ** 3))
    return 0.5 * (1 + t) + 0.5 * z * (1 - t * t) * 0.7978845608028654 * (1 + 3 * 0.044715 * z * z)


def _apply(op, v, aux):
    return {"none": lambda: v, "relu": lambda: np.maximum(v, 0), "gelu": lambda: _gelu(v),
            "drelu": lambda: np.where(aux > 0, v, 0), "dgelu": lambda: v * _gelu_derivative(aux)}[op]()


def _quantise(values, scale, out_dtype):
    """Bytes of ``values * scale`` in float8, saturated (ml_dtypes overflows to NaN instead)."""
    scaled = np.clip(values.astype(np.float32) * np.float32(scale), -LARGEST[out_dtype], LARGEST[out_dtype])
    return scaled.astype(getattr(ml_dtypes, out_dtype)).view(np.uint8)


def _ordinal(codes):
    """float8 bytes as integers in the order of their values (-0 and +0 both 0), so that neighbours differ by 1."""
    magnitude = (codes & 0x7F).astype(int)
    return np.where(codes & 0x80, -magnitude, magnitude)


def _float_bits(value) -> np.uint32:
    return np.array([value], np.float32).view(np.uint32)[0]


def _run_cast(in_array, aux_array, rows, cols, op, flags, out_dtype, scale, amax_in=None, margin=0, vector=0):
    """Launch cast_transpose on host arrays; returns (out, out_t, scale, scale_inv, amax, partials)."""
    out = np.full((rows, cols), 0xAB, np.uint8)
    out_t = np.full((cols, rows), 0xCD, np.uint8)
    scale_buffer = np.array([scale], np.float32)
    scale_inv = np.array([-1.0], np.float32)
    amax = np.zeros(1, np.uint32)
    amax_read = np.array([_float_bits(amax_in if amax_in is not None else 0.0)], np.uint32)
    parts = -(-rows // kernels.TILE_ROWS)
    partials = np.full((parts, cols), np.nan, np.float32)
    in_dtype = {np.dtype(v): k for k, v in NUMPY_INPUT.items()}[in_array.dtype]
    HOST.launch(None, 0, kernels.cast_transpose_name(in_dtype, out_dtype), 1,  # one host thread: every tile
                in_array.ctypes.data, np.int64(in_array.strides[0] // in_array.itemsize),
                aux_array.ctypes.data if aux_array is not None else 0,
                np.int64(aux_array.strides[0] // aux_array.itemsize if aux_array is not None else 0),
                np.int64(rows), np.int64(cols), np.int32(kernels.OPS[op]), np.int32(flags), out.ctypes.data,
                out_t.ctypes.data, scale_buffer.ctypes.data, scale_inv.ctypes.data, amax.ctypes.data,
                amax_read.ctypes.data, np.float32(2.0 ** -margin), partials.ctypes.data, np.int32(vector))
    return out, out_t, scale_buffer[0], scale_inv[0], amax.view(np.float32)[0], partials


def _matrix(rng, rows, cols, dtype, ld_extra=0, spread=3.0):
    base = (rng.standard_normal((rows, cols + ld_extra)) * spread).astype(NUMPY_INPUT[dtype])
    return base[:, :cols]


@pytest.mark.parametrize("in_dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("out_dtype", ["float8_e4m3fn", "float8_e5m2"])
@pytest.mark.parametrize("op", ["none", "relu", "drelu"])
@pytest.mark.parametrize("shape", ["one tile", "several tiles"])
def test_cast_transpose_is_exact_for_the_exact_ops(rng, in_dtype, out_dtype, op, shape):
    """Every byte of the cast and of its transpose equals ml_dtypes' saturated cast of ``op(x) * scale``
    (tiles of 64 x 128: partial ones at the bottom and right edges included)."""
    if shape == "one tile":
        rows, cols = 16 * int(rng.integers(1, 5)), 8 * int(rng.integers(1, 17))
    else:
        rows, cols = 16 * int(rng.integers(5, 14)), 8 * int(rng.integers(17, 40))
    ld_extra = int(rng.integers(0, 3)) * 8
    x = _matrix(rng, rows, cols, in_dtype, ld_extra)
    aux = _matrix(rng, rows, cols, in_dtype, 8) if op.startswith("d") else None
    scale = float(rng.uniform(0.5, 200.0))
    vector = int(in_dtype != "float32") * (1 | (2 if aux is not None else 0))
    flags = kernels.WRITE | kernels.WRITE_T | kernels.AMAX
    out, out_t, *_, amax, _ = _run_cast(x, aux, rows, cols, op, flags, out_dtype, scale, vector=vector)
    values = _apply(op, x.astype(np.float64), None if aux is None else aux.astype(np.float64)).astype(np.float32)
    expected = _quantise(values, scale, out_dtype)
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(out_t, expected.T)
    assert amax == np.abs(values).max()


@pytest.mark.parametrize("out_dtype", ["float8_e4m3fn", "float8_e5m2"])
@pytest.mark.parametrize("op", ["gelu", "dgelu"])
def test_cast_transpose_of_gelu_and_its_gradient(rng, out_dtype, op):
    """GELU and its gradient in float32: each byte the reference's or its neighbour, amax to float32 rounding."""
    rows, cols = 48, 40
    x = _matrix(rng, rows, cols, "bfloat16")
    aux = _matrix(rng, rows, cols, "bfloat16") if op == "dgelu" else None
    scale = 10.0
    out, out_t, *_, amax, _ = _run_cast(x, aux, rows, cols, op, kernels.WRITE | kernels.WRITE_T | kernels.AMAX,
                                        out_dtype, scale, vector=3)
    values = _apply(op, x.astype(np.float64), None if aux is None else aux.astype(np.float64))
    expected = _quantise(values, scale, out_dtype)
    steps = np.abs(_ordinal(out) - _ordinal(expected))
    assert steps.max() <= 1 and (steps == 0).mean() > 0.98
    np.testing.assert_array_equal(out_t, out.T)
    np.testing.assert_allclose(amax, np.abs(values).max(), rtol=1e-5)


@pytest.mark.parametrize("cols", [24, 136])
def test_cast_transpose_bias_gradient_partials_sum_to_the_column_sums(rng, cols):
    """DBIAS partial sums (one row per 64 input rows), then add_rows into bfloat16: the column sums
    of op(x)."""
    rows = 160  # two full tiles of 64 rows and a partial one; 136 columns: a full tile and a partial one
    grad, z = _matrix(rng, rows, cols, "bfloat16"), _matrix(rng, rows, cols, "bfloat16")
    *_, partials = _run_cast(grad, z, rows, cols, "dgelu", kernels.DBIAS, "float8_e5m2", 1.0, vector=3)
    values = _apply("dgelu", grad.astype(np.float64), z.astype(np.float64))
    height = kernels.TILE_ROWS
    parts = -(-rows // height)
    assert partials.shape == (parts, cols)
    for part in range(parts):
        block = values[part * height:(part + 1) * height]
        np.testing.assert_allclose(partials[part], block.sum(0), rtol=1e-4, atol=1e-4)
    result = np.zeros(cols, ml_dtypes.bfloat16)
    HOST.launch(None, 0, "add_rows", cols, partials.ctypes.data, np.int64(parts), np.int64(cols), result.ctypes.data,
                0, np.int64(0), 0, np.int32(1))
    np.testing.assert_allclose(result.astype(np.float64), values.sum(0), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("parts, cols", [(70, 12), (1, 40), (256, 1024), (9, 33)])
def test_add_rows_sums_every_column(rng, parts, cols):
    """Every column of any number of partial rows (fewer rows than warps, a ragged last group of 32
    columns) into the result's format; the same bits on a second launch."""
    partials = (rng.standard_normal((parts, cols)) + 0.5).astype(np.float32)
    results = []
    for _ in range(2):
        result = np.full(cols, np.nan, np.float16)
        HOST.launch(None, 0, "add_rows", cols, partials.ctypes.data, np.int64(parts), np.int64(cols),
                    result.ctypes.data, 0, np.int64(0), 0, np.int32(0))
        results.append(result)
    np.testing.assert_allclose(results[0], partials.astype(np.float64).sum(0), rtol=2e-3, atol=2e-3 * parts ** 0.5)
    assert results[0].tobytes() == results[1].tobytes()


@pytest.mark.parametrize("parts, cols, cols2", [(70, 12, 40), (256, 768, 3072), (9, 33, 1)])
def test_add_rows_sums_two_matrices_in_one_launch(rng, parts, cols, cols2):
    """A second matrix of partial sums (a block's two bias gradients): each column of each into
    its own result, the same bits as a launch of its own."""
    first = (rng.standard_normal((parts, cols)) + 0.5).astype(np.float32)
    second = (rng.standard_normal((parts, cols2)) - 0.25).astype(np.float32)
    result, result2 = np.full(cols, np.nan, np.float32), np.full(cols2 + 1, np.nan, np.float32)
    HOST.launch(None, 0, "add_rows", cols, first.ctypes.data, np.int64(parts), np.int64(cols), result.ctypes.data,
                second.ctypes.data, np.int64(cols2), result2.ctypes.data, np.int32(FORMAT_CODES["float32"]))
    np.testing.assert_allclose(result, first.astype(np.float64).sum(0), rtol=1e-5, atol=1e-5 * parts)
    np.testing.assert_allclose(result2[:cols2], second.astype(np.float64).sum(0), rtol=1e-5, atol=1e-5 * parts)
    assert np.isnan(result2[cols2])  # nothing written past the second result
    alone = np.full(cols2, np.nan, np.float32)
    HOST.launch(None, 0, "add_rows", cols2, second.ctypes.data, np.int64(parts), np.int64(cols2), alone.ctypes.data,
                0, np.int64(0), 0, np.int32(FORMAT_CODES["float32"]))
    assert alone.tobytes() == result2[:cols2].tobytes()


@pytest.mark.parametrize("out_dtype", ["float8_e4m3fn", "float8_e5m2"])
def test_dynamic_scaling_takes_the_scale_from_this_steps_amax(rng, out_dtype):
    """An AMAX pass, then a DYNAMIC cast: scale = fp8_max / amax / 2**margin, recorded with its inverse."""
    rows, cols = 32, 16
    x = _matrix(rng, rows, cols, "float32")
    *_, amax, _ = _run_cast(x, None, rows, cols, "none", kernels.AMAX, out_dtype, 1.0)
    assert amax == np.abs(x).max()
    out, out_t, scale, scale_inv, second_amax, _ = _run_cast(
        x, None, rows, cols, "none", kernels.WRITE | kernels.WRITE_T | kernels.DYNAMIC, out_dtype, 123.0,
        amax_in=amax, margin=1)
    expected_scale = np.float32(np.float32(LARGEST[out_dtype]) / np.float32(amax) * np.float32(0.5))
    assert scale == expected_scale and scale_inv == np.float32(1.0) / expected_scale
    assert second_amax == 0.0  # no AMAX flag: nothing accumulated
    np.testing.assert_array_equal(out, _quantise(x, expected_scale, out_dtype))
    np.testing.assert_array_equal(out_t, out.T)


@pytest.mark.parametrize("amax_in", [0.0, np.inf, np.nan])
def test_dynamic_scaling_of_a_zero_or_non_finite_amax_is_one(amax_in):
    """An all-zero (or empty) tensor's amax never gives an infinite or NaN scale: the scale is 1."""
    x = np.zeros((16, 8), np.float32)
    out, _, scale, scale_inv, _, _ = _run_cast(x, None, 16, 8, "none", kernels.WRITE | kernels.DYNAMIC,
                                               "float8_e4m3fn", 5.0, amax_in=amax_in)
    assert scale == 1.0 and scale_inv == 1.0
    assert (out == 0).all()


def test_nan_in_the_input_reaches_the_amax():
    """A NaN makes the amax NaN (its bits sort above every number's), so scaling keeps its previous scale."""
    x = np.ones((16, 8), np.float32)
    x[3, 5] = np.nan
    *_, amax, _ = _run_cast(x, None, 16, 8, "none", kernels.AMAX, "float8_e4m3fn", 1.0)
    assert np.isnan(amax)


def _reference_update(history, scale, mask, e5m2_mask, margin, most_recent, zero_only):
    history, scale = history.copy(), scale.copy()
    length, slots = history.shape
    scale_inv = np.full(slots, -7.0, np.float32)
    for slot in range(slots):
        if not (mask >> slot) & 1:
            continue
        if not zero_only:
            column = history[:, slot]
            amax = column[0] if most_recent else (np.nan if np.isnan(column).any() else column.max())
            largest = np.float32(57344.0 if (e5m2_mask >> slot) & 1 else 448.0)
            if amax > 0 and np.isfinite(amax):
                with np.errstate(over="ignore"):
                    candidate = np.float32(largest / np.float32(amax) * np.float32(2.0 ** -margin))
                scale[slot] = min(candidate, np.finfo(np.float32).max)
            scale_inv[slot] = np.float32(1.0) / scale[slot]
            history[1:, slot] = history[:-1, slot].copy()
        history[0, slot] = 0.0
    return history, scale, scale_inv


@pytest.mark.parametrize("most_recent", [0, 1])
@pytest.mark.parametrize("zero_only", [0, 1])
@pytest.mark.parametrize("stride", [1, 4])
@pytest.mark.parametrize("length", [5, 1, 8, 9, 17, 1024])
def test_update_scaling_follows_delayed_scaling(rng, most_recent, zero_only, stride, length):
    """Largest amax of the history (or the latest), scale = fp8_max / amax / 2**margin, kept when the
    amax is 0 or not finite, the largest float on overflow; the history shifts and row 0 is zeroed.
    The scales may lie ``stride`` floats apart (a state's: 16 bytes, cuBLASLt's alignment), the
    floats between them untouched. Lengths around the roll's chunk of eight rows, and the default
    1024 (on the host one lane takes every row: the GPU tests cross the lanes)."""
    slots = 9
    history = rng.uniform(0.01, 50.0, (length, slots)).astype(np.float32)
    history[:, 1] = 0.0  # never seen: the scale stays
    history[(length - 1) * 2 // 4, 2] = np.inf
    history[length // 4, 3] = np.nan
    history[:, 4] = 1e-42  # subnormal: the quotient overflows
    scale = rng.uniform(0.5, 2.0, slots).astype(np.float32)
    mask, e5m2_mask, margin = 0b111011111, 0b100100100, 2
    expected_history, expected_scale, expected_inv = _reference_update(history, scale, mask, e5m2_mask, margin,
                                                                       most_recent, zero_only)
    scale_storage = np.full((slots, stride), -3.0, np.float32)
    scale_storage[:, 0] = scale
    inv_storage = np.full((slots, stride), -7.0, np.float32)
    HOST.launch(None, 0, "update_scaling", slots, history.ctypes.data, np.int64(length), np.int64(slots),
                np.uint64(mask), np.uint64(e5m2_mask), scale_storage.ctypes.data, np.int64(stride),
                inv_storage.ctypes.data, np.int64(stride), np.float32(2.0 ** -margin), np.int32(most_recent),
                np.int32(zero_only))
    np.testing.assert_array_equal(history, expected_history)
    np.testing.assert_array_equal(scale_storage[:, 0], expected_scale)
    np.testing.assert_array_equal(inv_storage[:, 0], expected_inv)
    assert (scale_storage[:, 1:] == -3.0).all() and (inv_storage[:, 1:] == -7.0).all()
    if not zero_only:
        assert scale_storage[4, 0] == np.finfo(np.float32).max


def test_the_kernels_compile_for_hopper_without_local_memory():
    """NVRTC compiles every instance for sm_90 (the float8 conversions through PTX; no GPU needed),
    and ptxas keeps every kernel in registers: no stack frame, no spills (a tile's bytes by column
    are indexed with constants only after unrolling)."""
    import io

    try:
        from cuda.core import Program, ProgramOptions

        program = Program(kernels.KERNEL_SOURCE, "c++",
                          ProgramOptions(arch="sm_90", std="c++17", ptxas_options=["-v"]))
        log = io.StringIO()
        code = program.compile("cubin", name_expressions=kernels.KERNEL_NAMES, logs=log)
    except (ImportError, RuntimeError) as error:
        if "nvrtc" not in str(error).lower() and not isinstance(error, ImportError):
            raise
        pytest.skip(f"NVRTC is not available: {error}")
    assert code.code_type == "cubin"
    report = log.getvalue()
    frames = [line for line in report.splitlines() if "stack frame" in line]
    assert len(frames) == len(kernels.KERNEL_NAMES), report
    assert all("0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in line for line in frames), report
