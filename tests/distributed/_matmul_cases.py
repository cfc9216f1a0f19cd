"""The distributed matmul cases every test world runs (CPU space, numpy operands): each rank makes the
same global matrices from the case's seed, multiplies its pieces, and compares its piece of the
result with numpy's float64 product of the whole matrices.

The pieces are cut here with the textbook block-cyclic rule (global index ``i`` belongs to process
``(i // block) % procs``), independently of nvmathx's own layout code.
"""

from __future__ import annotations

import itertools
import traceback
import zlib

import numpy as np

from nvmathx import UnsupportedLayoutError
from nvmathx.distributed import BlockCyclic, Replicated, Slab
from nvmathx.distributed import linalg as dlinalg

from ._space import on_gpu, to_host, to_space

SHAPES = [(7, 5, 6), (3, 8, 2), (9, 4, 10)]  # (M, K, N): uneven, and smaller than some worlds
TOLERANCE = {np.float32: 2e-5, np.float64: 1e-12, np.complex64: 2e-5, np.complex128: 1e-12}
EPILOGS = [None, "BIAS", "RELU_BIAS", "GELU_BIAS", "RELU", "GELU"]
SLABS = {"X": Slab.X, "Y": Slab.Y, "R": Replicated()}


def owned(n: int, block: int, coord: int, procs: int) -> list:
    """The global indices of ``n`` that process ``coord`` of ``procs`` holds in blocks of ``block``."""
    return [i for i in range(n) if (i // block) % procs == coord]


def piece(x: np.ndarray, distribution, rank: int, world_size: int) -> np.ndarray:
    """``rank``'s piece of the global matrix ``x``."""
    rows, cols = x.shape
    if isinstance(distribution, Replicated):
        return x.copy()
    if distribution is Slab.X:
        return x[owned(rows, max(1, -(-rows // world_size)), rank, world_size)].copy()
    if distribution is Slab.Y:
        return x[:, owned(cols, max(1, -(-cols // world_size)), rank, world_size)].copy()
    (pr, pc), (br, bc) = distribution.process_grid, distribution.block_shape
    i, j = divmod(rank, pc)
    return x[np.ix_(owned(rows, br, i, pr), owned(cols, bc, j, pc))].copy()


def _gelu(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))


def reference(a, b, c, alpha, beta, epilog, bias):
    """The global result in float64 (complex128)."""
    wide = np.complex128 if np.iscomplexobj(a) else np.float64
    d = alpha * (a.astype(wide) @ b.astype(wide))
    if c is not None:
        d = d + beta * c.astype(wide)
    if epilog and "BIAS" in epilog:
        d = d + bias.astype(wide)
    if epilog and epilog.startswith("RELU"):
        d = np.maximum(d, 0)
    if epilog and epilog.startswith("GELU"):
        d = _gelu(d)
    return d


def _random(rng, shape, dtype):
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def _context():
    from nvmathx.distributed._context import current

    return current()


def one_case(seed, shape, distributions, dtype, epilog, *, with_c=False, stateful=False, forced=False,
             expect_strategy=None):
    context = _context()
    rank, world_size = context.rank, context.world_size
    m, k, n = shape
    rng = np.random.default_rng(seed)
    a, b = _random(rng, (m, k), dtype), _random(rng, (k, n), dtype)
    c = _random(rng, (m, n), dtype) if with_c else None
    bias = _random(rng, (n,), dtype)
    alpha, beta = (1.5, -0.5) if with_c else (0.75, 0)
    da, db, dd = distributions
    mine = [to_space(piece(a, da, rank, world_size)), to_space(piece(b, db, rank, world_size))]
    c_piece = to_space(piece(c, dd, rank, world_size)) if with_c else None
    inputs = {"bias": to_space(bias)} if epilog and "BIAS" in epilog else None
    options = {"force_distributed": forced}
    if stateful:
        with dlinalg.Matmul(*mine, c_piece, alpha=alpha, beta=beta, distributions=distributions,
                            options=options) as mm:
            assert expect_strategy in (None, mm.strategy), mm.strategy
            assert mm.options == dlinalg.MatmulOptions(**options)  # read-only, as nvmathx.linalg.Matmul's
            try:
                mm.options = None
                raise AssertionError("Matmul.options is writable")
            except AttributeError:
                pass
            mm.plan(epilog=epilog, epilog_inputs=inputs)
            first = mm.execute()
            # new values, same pieces: a scaled by 2, c and the bias negated
            mm.reset_operands(a=mine[0] * 2, c=None if c_piece is None else -c_piece, alpha=alpha,
                              epilog_inputs=None if inputs is None else {"bias": to_space(-bias)})
            result = mm.execute()
        _compare(first, piece(reference(a, b, c, alpha, beta, epilog, bias), dd, rank, world_size), dtype, epilog)
        expected = reference(a * 2, b, None if c is None else -c, alpha, beta, epilog, -bias)
    else:
        result = dlinalg.matmul(*mine, c_piece, alpha=alpha, beta=beta, distributions=distributions, epilog=epilog,
                                epilog_inputs=inputs, options=options)
        expected = reference(a, b, c, alpha, beta, epilog, bias)
    _compare(result, piece(expected, dd, rank, world_size), dtype, epilog)


def _compare(result, expected, dtype, epilog):
    result = to_host(result)
    assert result.dtype == np.dtype(dtype), result.dtype
    assert result.shape == expected.shape, (result.shape, expected.shape)
    scale = max(np.abs(expected).max(initial=0.0), 1.0)
    error = np.abs(result - expected).max(initial=0.0) / scale
    assert error < _tolerance(dtype, epilog), f"relative error {error:.2e}"


def _tolerance(dtype, epilog):
    """The dtype's tolerance; GELU computed by cuBLAS on a GPU (its tanh) differs from numpy's by more
    than a few ulps (7.8e-11 seen in float64), as in the single-GPU matmul tests."""
    tolerance = TOLERANCE[np.dtype(dtype).type]
    if on_gpu() and epilog is not None and "GELU" in epilog:
        return max(tolerance, 1e-4 if np.dtype(dtype).itemsize == 4 else 1e-9)
    return tolerance


def _grids(world_size):
    return [(pr, world_size // pr) for pr in range(1, world_size + 1) if world_size % pr == 0]


def slab_cases(world_size):
    """Every combination of Slab.X, Slab.Y and Replicated (27), across shapes, dtypes and epilogs."""
    cases = []
    dtypes = [np.float32, np.float64, np.complex64, np.complex128]
    for number, kinds in enumerate(itertools.product("XYR", repeat=3)):
        distributions = tuple(SLABS[kind] for kind in kinds)
        shape = SHAPES[number % len(SHAPES)]
        dtype = dtypes[number % len(dtypes)]
        epilog = EPILOGS[number % len(EPILOGS)]
        if np.dtype(dtype).kind == "c":
            epilog = None  # epilogs need real operands, as in nvmathx.linalg
        with_c = number % 3 == 1
        name = f"{''.join(kinds)}-{shape}-{np.dtype(dtype).name}-{epilog}" + ("-c" if with_c else "")
        arguments = (shape, distributions, dtype, epilog)
        cases.append((name, lambda seed, a=arguments, w=with_c: one_case(seed, *a, with_c=w)))
        if world_size > 1 or number % 4 == 0:  # the distributed path for the communication-free ones too
            cases.append((name + "-forced", lambda seed, a=arguments, w=with_c: one_case(seed, *a, with_c=w,
                                                                                       forced=True)))
    return cases


def tensor_parallel_cases(world_size):
    """The layers of tensor parallelism, stateful (with reset_operands) and as functions."""
    layers = {
        "column-parallel": ("RYY", "local"), "column-parallel-sequence": ("XYY", "distributed"),
        "row-parallel-replicated": ("YXR", "distributed"), "row-parallel-scattered": ("YXX", "distributed"),
        "data-parallel": ("XRX", "local"),
    }
    cases = []
    for name, (kinds, strategy) in layers.items():
        distributions = tuple(SLABS[kind] for kind in kinds)
        strategy = "local" if world_size == 1 else strategy
        for epilog, dtype in (("GELU_BIAS", np.float32), ("RELU_BIAS", np.float64)):
            arguments = ((9, 8, 10), distributions, dtype, epilog)
            cases.append((f"{name}-{epilog}-stateful", lambda seed, a=arguments, s=strategy: one_case(
                seed, *a, with_c=True, stateful=True, expect_strategy=s)))
    return cases


def block_cyclic_cases(world_size):
    """2-D (and 1-D) block-cyclic grids for all three matrices, and with replicated or slab operands.

    The blocks agree along the shared axes (a's columns are b's rows, and so on). A replicated
    operand needs a partner split in at most one block per rank on one of its axes (here b's rows,
    or a's columns, in ``ceil(K / procs)`` blocks)."""
    cases = []
    m, k, n = 7, 6, 9
    for (pr, pc) in _grids(world_size):
        grid = (pr, pc)
        for b0, b1 in ((2, 2), (1, 3)):
            a_dist, b_dist = BlockCyclic(grid, (b0, b1)), BlockCyclic(grid, (b1, b1))
            d_dist = BlockCyclic(grid, (b0, b1))
            combos = {
                "BBB": (a_dist, b_dist, d_dist),
                "RBB": (Replicated(), BlockCyclic(grid, (-(-k // pr), b1)), d_dist),
                "BRB": (BlockCyclic(grid, (b0, -(-k // pc))), Replicated(), d_dist),
                "XBB": (Slab.X, b_dist, BlockCyclic(grid, (-(-m // world_size), b1))),
            }
            tag = f"{pr}x{pc}-{b0}x{b1}"
            for number, (label, distributions) in enumerate(combos.items()):
                dtype = np.float64 if number % 2 else np.float32
                epilog = ("GELU_BIAS", "BIAS", None, "RELU")[number]
                arguments = ((m, k, n), distributions, dtype, epilog)
                cases.append((f"bc-{tag}-{label}", lambda seed, a=arguments: one_case(seed, *a, with_c=True)))
            if world_size > 1:
                cases.append((f"bc-{tag}-stateful", lambda seed, d=(a_dist, b_dist, d_dist): one_case(
                    seed, (m, k, n), d, np.complex128, None, stateful=True)))
    return cases


def _unsupported(seed, distributions):
    """A combination cuBLASMp cannot serve: every rank raises, naming ``distributions``."""
    try:
        one_case(seed, (6, 8, 6), distributions, np.float64, None)
    except UnsupportedLayoutError as error:
        assert str(error).startswith("distributions:"), error
    else:
        raise AssertionError("a combination cuBLASMp cannot serve ran")


def unsupported_cases(world_size):
    row, column = (1, world_size), (world_size, 1)
    cases = [("unsupported-k-blocks", lambda seed: _unsupported(seed, (  # a's columns in 1s, b's rows in 2s
        BlockCyclic(row, (1, 1)), BlockCyclic(column, (2, 1)), BlockCyclic(row, (1, 1)))))]
    if world_size == 4:  # a replicated a between cyclic partners on both axes
        cyclic = BlockCyclic((2, 2), (1, 1))
        cases.append(("unsupported-replicated", lambda seed: _unsupported(seed, (Replicated(), cyclic, cyclic))))
    return cases


def run(seed):
    """Run every case on this rank; {case id: None or the failure's text}."""
    world_size = _context().world_size
    cases = slab_cases(world_size) + tensor_parallel_cases(world_size) + block_cyclic_cases(world_size)
    if world_size > 1:
        cases += unsupported_cases(world_size)
    outcomes = {}
    for name, case in cases:
        try:
            case(seed + zlib.crc32(name.encode()) % 100000)
            outcomes[name] = None
        except Exception:  # noqa: BLE001  (reported per case by the test)
            outcomes[name] = traceback.format_exc(limit=8)
    return outcomes
