"""What the ranks' agreement lets through, run on every rank of a test world: equal NaN scalars
agree and give NaN as single-process matmul does; norm=None and norm="backward" are the same
normalisation; results are right (against numpy in float64) whatever the spelling."""

from __future__ import annotations

import traceback

import numpy as np

import nvmathx.distributed as dist
from nvmathx.distributed import Replicated, Slab
from nvmathx.distributed import fft as dfft
from nvmathx.distributed import linalg as dlinalg


def _context():
    from nvmathx.distributed._context import current

    return current()


def _nan_alpha(rng, force):
    a, b = rng.standard_normal((6, 4)), rng.standard_normal((4, 5))
    rows = dlinalg.local_shape((6, 4), Slab.X)[0]
    start = sum(dlinalg.local_shape((6, 4), Slab.X, rank=r)[0] for r in range(_context().rank))
    piece = a[start:start + rows].copy()
    result = dlinalg.matmul(piece, b, alpha=float("nan"), distributions=(Slab.X, Replicated(), Slab.X),
                            options={"force_distributed": force})
    expected = float("nan") * (piece @ b)
    assert result.shape == expected.shape and np.isnan(result).all(), result


def _complex_nan_beta(rng):
    a, b, c = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape) for shape in ((4, 3), (3, 2), (4, 2)))
    result = dlinalg.matmul(a, b, c, beta=complex(float("nan"), 0), distributions=(Replicated(),) * 3,
                            options={"force_distributed": True})
    assert np.isnan(result).all(), result


def _norm_spellings(rng):
    context = _context()
    shape = (8, 6)
    x = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    local = dist.local_shape(shape, Slab.X)
    start = sum(dist.local_shape(shape, Slab.X, rank=r, world_size=context.world_size)[0] for r in range(context.rank))
    norm = None if context.rank % 2 == 0 else "backward"
    result = dfft.ifft(x[start:start + local[0]].copy(), norm=norm, options={"force_distributed": True})
    expected = np.fft.ifft2(x)[start:start + local[0]]
    np.testing.assert_allclose(result, expected, rtol=1e-12, atol=1e-13)


CASES = {
    "NaN alpha, each rank's own product": lambda rng: _nan_alpha(rng, False),
    "NaN alpha, the gathered product": lambda rng: _nan_alpha(rng, True),
    "complex NaN beta": _complex_nan_beta,
    "norm None and 'backward' on different ranks": _norm_spellings,
}


def run(seed):
    outcomes = {}
    for name, case in CASES.items():
        try:
            case(np.random.default_rng(seed))  # the same data on every rank
            outcomes[name] = None
        except Exception:  # noqa: BLE001
            outcomes[name] = traceback.format_exc(limit=6)
    return outcomes
