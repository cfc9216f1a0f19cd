"""Random systems of chosen condition numbers and the checks the solver tests share: a reference
solution from numpy.linalg.solve in float64/complex128 (independent of scipy, which the CPU space
uses), and the backward error of a solution."""

import numpy as np

DTYPES = ("float32", "float64", "complex64", "complex128")
EPS = {name: float(np.finfo(name).eps) for name in DTYPES}
STRUCTURES = ("general", "positive definite", "lower triangular", "upper triangular", "diagonal")
TRANSPOSES = (False, True, "conjugate")
# every (dtype, structure, transposed) a solver takes
SYSTEMS = [(d, s, t) for d in DTYPES for s in STRUCTURES for t in TRANSPOSES]


def assert_close(x, expected, tolerance):
    """``x`` (a host array) has ``expected``'s shape and lies within ``tolerance`` of it, relative to
    its largest magnitude (at least 1)."""
    expected = np.asarray(expected)
    assert x.shape == expected.shape, (x.shape, expected.shape)
    scale = max(float(np.max(np.abs(expected), initial=0)), 1.0)
    assert np.max(np.abs(x - expected), initial=0) <= tolerance * scale


def random_matrix(rng, shape, dtype, condition=10.0):
    """Matrices ``shape[:-2] + (n, n)`` with 2-norm condition number ``condition`` (U diag(s) Vᴴ)."""
    *batch, n, _ = shape
    complex_ = np.dtype(dtype).kind == "c"

    def draw(size):
        values = rng.standard_normal(size)
        return values + 1j * rng.standard_normal(size) if complex_ else values

    u, _ = np.linalg.qr(draw((*batch, n, n)))
    v, _ = np.linalg.qr(draw((*batch, n, n)))
    s = np.logspace(0, -np.log10(condition), n) if n else np.zeros(0)
    return ((u * s[..., None, :]) @ np.conj(np.swapaxes(v, -1, -2))).astype(dtype)


def structured(rng, shape, dtype, structure, condition=10.0):
    """A random ``a`` of ``structure`` (positive definite: Hermitian; triangular: the other triangle
    holds noise the solve must not read; diagonal: off-diagonal noise too)."""
    n = shape[-1]
    if structure == "general":
        return random_matrix(rng, shape, dtype, condition)
    if structure == "positive definite":
        m = random_matrix(rng, shape, np.complex128 if np.dtype(dtype).kind == "c" else np.float64, np.sqrt(condition))
        return (m @ np.conj(np.swapaxes(m, -1, -2))).astype(dtype)
    a = random_matrix(rng, shape, dtype, 4.0) + 3 * np.eye(n, dtype=dtype)  # well-conditioned triangles
    if structure == "diagonal":
        return a
    return a.astype(dtype)


def dense_reference(a, structure, lower=False):
    """The matrix the structure means (the triangle or diagonal read; the other triangle ignored)."""
    a = np.asarray(a, np.complex128 if np.iscomplexobj(a) else np.float64)
    if structure == "lower triangular":
        return np.tril(a)
    if structure == "upper triangular":
        return np.triu(a)
    if structure == "diagonal":
        return np.eye(a.shape[-1]) * np.diagonal(a, axis1=-2, axis2=-1)[..., None, :]
    if structure == "positive definite":  # Hermitian from the triangle read
        tri = np.tril(a) if lower else np.triu(a)
        diagonal = np.diagonal(a, axis1=-2, axis2=-1).real
        full = tri + np.conj(np.swapaxes(tri, -1, -2))
        idx = np.arange(a.shape[-1])
        full[..., idx, idx] = diagonal
        return full
    return a


def op(a, transposed):
    if transposed is True:
        return np.swapaxes(a, -1, -2)
    if transposed == "conjugate":
        return np.conj(np.swapaxes(a, -1, -2))
    return a


def reference_solve(a, b, structure="general", lower=False, transposed=False):
    """numpy.linalg.solve in 64-bit precision, with b's 1-D form broadcast as scipy 1.17 does."""
    m = op(dense_reference(a, structure, lower), transposed)
    b = np.asarray(b, m.dtype if np.iscomplexobj(m) else np.result_type(b, np.float64))
    if b.ndim == 1:
        return np.linalg.solve(m, np.broadcast_to(b, m.shape[:-1])[..., None])[..., 0]
    batch = np.broadcast_shapes(m.shape[:-2], b.shape[:-2])
    return np.linalg.solve(np.broadcast_to(m, batch + m.shape[-2:]), np.broadcast_to(b, batch + b.shape[-2:]))


def backward_error_ok(a, x, b, dtype, structure="general", lower=False, transposed=False, factor=20):
    """‖b − op(a) x‖₂ ≤ factor · n · eps · ‖op(a)‖₂ ‖x‖₂ for every right-hand side of every system."""
    m = op(dense_reference(a, structure, lower), transposed)
    x = np.asarray(x, np.complex128 if np.iscomplexobj(x) else np.float64)
    b = np.asarray(b, x.dtype)
    if x.ndim == m.ndim - 1 or b.ndim == 1:
        x = x[..., None]
        b = np.broadcast_to(b[..., None] if b.ndim == 1 else b, x.shape)
    n = m.shape[-1]
    residual = np.linalg.norm(b - m @ x, axis=-2)
    bound = factor * n * EPS[np.dtype(dtype).name] * np.linalg.norm(m, 2, axis=(-2, -1))[..., None] \
        * np.linalg.norm(x, axis=-2)
    return bool(np.all(residual <= bound)), float(np.max(residual / np.maximum(bound, 1e-300), initial=0))
