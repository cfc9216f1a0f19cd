"""The distributed FFT cases every test world runs (CPU space, numpy operands): each rank makes
the same global array from the case's seed, transforms its piece, and compares its piece of the
result with numpy.fft of the whole array in float64."""

from __future__ import annotations

import itertools
import traceback
import zlib

import numpy as np

import nvmathx.distributed as dist
from nvmathx.distributed import Box, Slab
from nvmathx.distributed import fft as dfft

from ._space import to_host, to_space

# global shape, transformed axes (None: all)
SHAPES = [((9, 10), None), ((7, 6, 5), None), ((3, 9, 10), (1, 2)), ((2, 6, 5, 4), (1, 2, 3))]
KINDS = ["fft", "ifft", "rfft", "irfft"]
NORMS = ["backward", "ortho", "forward"]
TOLERANCE = {np.complex64: 2e-5, np.float32: 2e-5, np.complex128: 1e-12, np.float64: 1e-12}


def expected_result_slab(kind, ndim_transformed, distribution, reshape):
    """Where the result of a slab input lands (the transpose algorithm's documented end)."""
    if reshape:
        return distribution
    other = Slab.Y if distribution is Slab.X else Slab.X
    real_on_split_axis = ndim_transformed == 2 and (
        (kind == "rfft" and distribution is Slab.Y) or (kind == "irfft" and distribution is Slab.X))
    return distribution if real_on_split_axis else other


def _global_input(rng, kind, shape, axes, precision):
    real = np.float32 if precision == "single" else np.float64
    complex_ = np.complex64 if precision == "single" else np.complex128
    if kind == "rfft":
        return rng.standard_normal(shape).astype(real)
    if kind == "irfft":  # a Hermitian-compatible spectrum: the rfftn of a real array
        transformed = axes or tuple(range(len(shape)))
        return np.fft.rfftn(rng.standard_normal(shape), axes=transformed).astype(complex_)
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(complex_)


def _reference(kind, x, axes, norm, real_length):
    wide = x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)
    transformed = axes or tuple(range(x.ndim))
    if kind == "irfft":
        s = [x.shape[a] for a in transformed[:-1]] + [real_length]
        return np.fft.irfftn(wide, s=s, axes=transformed, norm=norm)
    return getattr(np.fft, kind + "n")(wide, axes=transformed, norm=norm)


def _slices(box):
    return tuple(slice(a, b) for a, b in zip(box.lower, box.upper))


def _error(result, expected):
    return float(np.linalg.norm(result - expected) / max(np.linalg.norm(expected), 1e-300))


def _one_slab_case(seed, kind, shape, axes, distribution, reshape, norm, precision, stateful, options):
    rng = np.random.default_rng(seed)
    x = _global_input(rng, kind, shape, axes, precision)
    transformed = axes or tuple(range(len(shape)))
    piece = np.ascontiguousarray(x[_slices(dist.local_box(x.shape, distribution, axes=transformed))])
    real_length = 2 * (x.shape[transformed[-1]] - 1) if kind == "irfft" else None
    piece = to_space(piece)
    if stateful:
        fft_type = {"fft": "C2C", "ifft": "C2C", "rfft": "R2C", "irfft": "C2R"}[kind]
        with dfft.FFT(piece, distribution, axes=axes,
                      options=dict(options, fft_type=fft_type, reshape=reshape)) as plan:
            assert plan.options == dfft.FFTOptions(**dict(options, fft_type=fft_type, reshape=reshape))
            try:
                plan.options = None
                raise AssertionError("FFT.options is writable")
            except AttributeError:
                pass
            plan.plan()
            result = plan.execute("inverse" if kind in ("ifft", "irfft") else "forward")
            result_box = plan.result_box
        norm = "backward" if kind in ("fft", "rfft") else "forward"  # the stateful transform is unnormalised
    else:
        result = getattr(dfft, kind)(piece, distribution, axes=axes, norm=norm, reshape=reshape, options=options)
        slab = expected_result_slab(kind, len(transformed), distribution, reshape)
        out_shape = list(x.shape)
        if kind == "rfft":
            out_shape[transformed[-1]] = x.shape[transformed[-1]] // 2 + 1
        if kind == "irfft":
            out_shape[transformed[-1]] = real_length
        result_box = dist.local_box(out_shape, slab, axes=transformed)
    expected = _reference(kind, x, axes, norm, real_length)[_slices(result_box)]
    result = to_host(result)
    assert result.shape == expected.shape, (result.shape, expected.shape)
    wanted_dtype = {"rfft": x.dtype.char.upper(), "irfft": None}.get(kind)
    if kind == "irfft":
        assert result.dtype == (np.float32 if precision == "single" else np.float64), result.dtype
    elif wanted_dtype:
        assert result.dtype == (np.complex64 if precision == "single" else np.complex128), result.dtype
    else:
        assert result.dtype == x.dtype, result.dtype
    error = _error(result, expected)
    assert error < TOLERANCE[result.dtype.type], f"relative error {error:.2e}"


def slab_cases(world_size):
    """(case id, function of the seed) for every slab case of this world size."""
    options = {"force_distributed": True} if world_size == 1 else {}
    cases = []
    for number, (kind, (shape, axes), distribution, reshape) in enumerate(
            itertools.product(KINDS, SHAPES, (Slab.X, Slab.Y), (True, False))):
        norm = NORMS[number % 3]
        precision = "double" if number % 2 else "single"
        stateful = number % 5 == 0
        suffix = "-stateful" if stateful else ""
        name = f"{kind}-{shape}-{distribution.name}-reshape{reshape}-{norm}-{precision}{suffix}"
        arguments = (kind, shape, axes, distribution, reshape, norm, precision, stateful)
        cases.append((name, lambda seed, a=arguments: _one_slab_case(seed, *a, options)))
    if world_size > 1:
        cases.append(("fft-loopback", lambda seed: _one_slab_case(seed, "fft", (9, 10), None, Slab.X, True, "ortho",
                                                                  "double", False, {"loopback": True})))
    return cases


def run(seed):
    """Run every case on this rank; {case id: None or the failure's text}."""
    from nvmathx.distributed._context import current

    world_size = current().world_size
    outcomes = {}
    for name, case in slab_cases(world_size) + box_cases(world_size):
        try:
            case(seed + zlib.crc32(name.encode()) % 100000)
            outcomes[name] = None
        except Exception:  # noqa: BLE001  (reported per case by the test)
            outcomes[name] = traceback.format_exc(limit=6)
    return outcomes


def _row_blocks(shape, world_size):
    """Each rank's box when a 2-D or batched array is split into uneven row blocks of its last axis
    (a decomposition that no slab gives)."""
    last = shape[-1]
    cuts = [round(last * r / world_size) for r in range(world_size + 1)]
    return [Box((0,) * (len(shape) - 1) + (cuts[r],), tuple(shape[:-1]) + (cuts[r + 1],)) for r in range(world_size)]


def _box_fft_case(seed, kind, shape):
    from nvmathx.distributed._context import current

    context = current()
    rng = np.random.default_rng(seed)
    x = _global_input(rng, kind, shape, None, "double")
    inputs = _row_blocks(x.shape, context.world_size)
    out_shape = list(x.shape)
    if kind == "rfft":
        out_shape[-1] = x.shape[-1] // 2 + 1
    outputs = list(reversed(_row_blocks(out_shape[::-1], context.world_size)))
    outputs = [Box(box.lower[::-1], box.upper[::-1]) for box in outputs]  # split along axis 0, reversed ranks
    mine_in, mine_out = inputs[context.rank], outputs[context.rank]
    piece = to_space(np.ascontiguousarray(x[_slices(mine_in)]))
    options = {"force_distributed": True} if context.world_size == 1 else {}
    result = to_host(getattr(dfft, kind)(piece, (mine_in, mine_out), norm="ortho", options=options))
    expected = _reference(kind, x, None, "ortho", None)[_slices(mine_out)]
    error = _error(result, expected)
    assert result.shape == expected.shape and error < 1e-12, (result.shape, expected.shape, error)


def _reshape_round_trip(seed, shape, dtype):
    from nvmathx.distributed._context import current

    context = current()
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(dtype)
    inputs = _row_blocks(shape, context.world_size)
    outputs = [dist.local_box(shape, Slab.X, rank=r, world_size=context.world_size) for r in range(context.world_size)]
    piece = np.ascontiguousarray(x[_slices(inputs[context.rank])])
    moved = dist.reshape(to_space(piece), inputs[context.rank], outputs[context.rank])
    assert np.array_equal(to_host(moved), x[_slices(outputs[context.rank])])
    back = to_host(dist.reshape(moved, outputs[context.rank], inputs[context.rank]))
    assert back.dtype == piece.dtype and np.array_equal(back, piece)  # bit-exact


def box_cases(world_size):
    return [
        ("box-fft-2d", lambda seed: _box_fft_case(seed, "fft", (8, 12))),
        ("box-rfft-2d", lambda seed: _box_fft_case(seed, "rfft", (8, 12))),
        ("box-fft-3d", lambda seed: _box_fft_case(seed, "fft", (5, 6, 8))),
        ("reshape-round-trip-f32", lambda seed: _reshape_round_trip(seed, (7, 9), np.float32)),
        ("reshape-round-trip-c128-3d", lambda seed: _reshape_round_trip(seed, (5, 4, 9), np.complex128)),
    ]
