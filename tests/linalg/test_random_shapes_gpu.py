"""Hypothesis: random shapes (1, odd, large, batched), transposes, padded leading dimensions."""

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from helpers.torch_random import randn  # noqa: E402
from nvmathx.linalg import matmul  # noqa: E402

pytestmark = pytest.mark.gpu

EXTENTS = st.sampled_from([1, 2, 7, 64, 129, 384])


def _matrix(rng, batch, rows, cols, transposed, padded):
    extra = 3 if padded else 0
    if transposed:
        return randn(rng, *batch, cols, rows + extra, device="cuda")[..., :rows].transpose(-1, -2)
    return randn(rng, *batch, rows, cols + extra, device="cuda")[..., :cols]


@settings(max_examples=60, deadline=None)
@given(m=EXTENTS, n=EXTENTS, k=EXTENTS, batch=st.sampled_from([(), (3,), (2, 2)]),
       broadcast=st.sampled_from(["none", "a", "b"]), a_t=st.booleans(), b_t=st.booleans(),
       a_pad=st.booleans(), b_pad=st.booleans(), vector=st.sampled_from(["none", "a", "b"]),
       data_seed=st.integers(0, 2**32 - 1))
def test_random_problems_match_numpy(m, n, k, batch, broadcast, a_t, b_t, a_pad, b_pad, vector, data_seed):
    pytest.importorskip("torch")
    rng = np.random.default_rng(data_seed)  # hypothesis draws (and replays) the data's seed too
    a = _matrix(rng, () if broadcast == "a" else batch, m, k, a_t, a_pad)
    b = _matrix(rng, () if broadcast == "b" else batch, k, n, b_t, b_pad)
    if vector == "a":
        a = a[..., 0, :] if a.dim() == 2 else a
    elif vector == "b":
        b = b[..., :, 0] if b.dim() == 2 else b
    result = matmul(a, b)
    expected = np.matmul(a.double().cpu().numpy(), b.double().cpu().numpy())
    assert tuple(result.shape) == expected.shape
    scale = np.linalg.norm(expected) or 1.0
    assert np.linalg.norm(result.double().cpu().numpy() - expected) / scale < 1e-5
