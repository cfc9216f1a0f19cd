"""Random numpy.matmul broadcasting problems (batch shapes, operand layouts, c and bias), shared by
the CPU, fake-device and GPU tests, and their float64 numpy reference."""

from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from nvmathx.linalg import Matmul, matmul

from ._reference import random

__all__ = ["LAYOUTS", "POSITIVE_LAYOUTS", "BroadcastCase", "cases", "expected_result", "make_operand", "make_operands"]

# How an operand's memory is laid out: C order; matrices transposed; rows padded; every batch axis
# stepped by 2; batch axes reversed in memory; a stride-0 view (numpy.broadcast_to) over the batch;
# the first batch axis running backwards (a negative stride).
LAYOUTS = ("C", "T", "padded", "strided", "permuted", "broadcast_view", "reversed")
POSITIVE_LAYOUTS = LAYOUTS[:-1]  # torch has no negative strides


@dataclass(frozen=True)
class BroadcastCase:
    a_batch: tuple
    b_batch: tuple
    m: int
    k: int
    n: int
    a_layout: str
    b_layout: str
    a_vector: bool  # a is 1-D (K,)
    b_vector: bool  # b is 1-D (K,)
    c_batch: tuple | None  # c's batch shape (None: no c)
    bias_batch: tuple | None  # a bias (..., 1, N) with this batch, () for shape (N,); None: no bias
    epilog: str | None

    @property
    def batch(self) -> tuple:
        return np.broadcast_shapes(self.a_batch, self.b_batch)


def _sub_batch(draw, batch):
    """A batch shape that broadcasts to ``batch``: trailing axes kept, some of them 1."""
    kept = draw(st.integers(0, len(batch)))
    return tuple(extent if draw(st.booleans()) else 1 for extent in batch[len(batch) - kept:])


@st.composite
def cases(draw, layouts=LAYOUTS, max_batch_dims=4, extents=(1, 2, 5), epilogs=(None, "BIAS", "RELU_BIAS")):
    """Random broadcastable problems: up to ``max_batch_dims`` batch axes, size-1 and missing ones."""
    ndim = draw(st.sampled_from([0, 1] + [d for d in range(2, max_batch_dims + 1) for _ in range(2)]))  # mostly 2+
    full = tuple(draw(st.lists(st.sampled_from([1, 2, 3, 3]), min_size=ndim, max_size=ndim)))
    a_batch, b_batch = _sub_batch(draw, full), _sub_batch(draw, full)
    m, k, n = (draw(st.sampled_from(extents)) for _ in range(3))
    a_vector = not a_batch and draw(st.integers(0, 3)) == 0
    b_vector = not b_batch and draw(st.integers(0, 3)) == 0
    batch = np.broadcast_shapes(a_batch, b_batch)
    c_batch = _sub_batch(draw, batch) if draw(st.booleans()) else None
    epilog = None if a_vector or b_vector else draw(st.sampled_from(epilogs))
    bias_batch = _sub_batch(draw, batch) if epilog else None
    return BroadcastCase(a_batch, b_batch, m, k, n, draw(st.sampled_from(layouts)), draw(st.sampled_from(layouts)),
                         a_vector, b_vector, c_batch, bias_batch, epilog)


def make_operand(rng, batch, rows, cols, layout, dtype="float64"):
    """A ``batch + (rows, cols)`` array of fresh random values laid out as ``layout`` says."""
    batch = tuple(batch)
    if layout == "T":
        return random(rng, batch + (cols, rows), dtype).swapaxes(-1, -2)
    if layout == "padded":
        return random(rng, batch + (rows, cols + 3), dtype)[..., :cols]
    if layout == "strided":
        full = random(rng, tuple(2 * e for e in batch) + (rows, cols), dtype)
        return full[tuple(slice(None, None, 2) for _ in batch)]
    if layout == "permuted":
        axes = len(batch)
        full = random(rng, batch[::-1] + (rows, cols), dtype)
        return full.transpose(tuple(range(axes - 1, -1, -1)) + (axes, axes + 1))
    if layout == "broadcast_view":
        return np.broadcast_to(random(rng, (1,) * len(batch) + (rows, cols), dtype), batch + (rows, cols))
    if layout == "reversed" and batch:
        return random(rng, batch + (rows, cols), dtype)[::-1]
    return random(rng, batch + (rows, cols), dtype)


def make_operands(rng, case: BroadcastCase, dtype="float64"):
    """(a, b, c or None, epilog_inputs or None) of ``case``."""
    a = make_operand(rng, case.a_batch, case.m, case.k, case.a_layout, dtype)
    b = make_operand(rng, case.b_batch, case.k, case.n, case.b_layout, dtype)
    if case.a_vector:
        a = a[0]
    if case.b_vector:
        b = b[..., 0]
    c = None
    if case.c_batch is not None:
        matrix = np.matmul(a, b).shape[len(case.batch):]  # (M, N), or (M,) / (N,) / () for vectors
        c = random(rng, tuple(case.c_batch) + matrix, dtype)
    inputs = None
    if case.bias_batch is not None:
        shape = tuple(case.bias_batch) + (1, case.n) if case.bias_batch else (case.n,)
        inputs = {"bias": random(rng, shape, dtype)}
    return a, b, c, inputs


def rounding_error(result, expected, a, b, c=None, alpha=1.0, beta=0.0, inputs=None) -> float:
    """``|result - expected|`` relative to the product of the magnitudes (``|alpha| |a| @ |b| + |beta| |c|
    + |bias|``, norm-wise): what rounding in the compute type bounds, also where the result cancels
    (a relative error against the result itself is unbounded there, e.g. a dot product near 0)."""
    magnitude = expected_result(np.abs(a), np.abs(b), None if c is None else np.abs(c), abs(alpha), abs(beta),
                                "BIAS" if inputs else None,
                                {name: np.abs(value) for name, value in inputs.items()} if inputs else None)
    result = np.asarray(result).astype(np.asarray(expected).dtype)
    scale = np.linalg.norm(np.ravel(magnitude)) or 1.0
    return float(np.linalg.norm(np.ravel(result - expected)) / scale)


def expected_result(a, b, c=None, alpha=1.0, beta=0.0, epilog=None, inputs=None):
    """alpha * a @ b + beta * c, then a bias and ReLU, in float64 (complex128) with numpy broadcasting."""
    wide = np.complex128 if np.iscomplexobj(a) else np.float64
    d = alpha * np.matmul(np.asarray(a).astype(wide), np.asarray(b).astype(wide))
    if c is not None and beta != 0:
        d = d + beta * np.asarray(c).astype(wide)
    if epilog and "BIAS" in epilog:
        d = d + np.asarray(inputs["bias"]).astype(wide)
    if epilog and "RELU" in epilog:
        d = np.maximum(d, 0)
    return d


def run_product(a, b, c, alpha, beta, epilog, inputs, stateful: bool):
    """The product through ``Matmul`` (plan and execute) or the function form ``matmul``."""
    if not stateful:
        return matmul(a, b, c, alpha=alpha, beta=beta, epilog=epilog, epilog_inputs=inputs)
    with Matmul(a, b, c, alpha=alpha, beta=beta) as mm:
        mm.plan(epilog=epilog, epilog_inputs=inputs)
        return mm.execute()
