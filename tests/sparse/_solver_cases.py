"""Systems for the direct solver's tests, built with numpy from the seeded generator: the dense
matrix is the reference (numpy.linalg.solve), independent of scipy.sparse and SuperLU."""

import numpy as np
import scipy.sparse

from sparse._matrices import random_dense

TYPES_OF_DTYPE = {
    "float32": ("general", "symmetric", "spd"),
    "float64": ("general", "symmetric", "spd"),
    "complex64": ("general", "symmetric", "hermitian", "hpd"),
    "complex128": ("general", "symmetric", "hermitian", "hpd"),
}
TOLERANCE = {"float32": 2e-3, "float64": 1e-10, "complex64": 2e-3, "complex128": 1e-10}


def system_matrix(rng, n, dtype, matrix_type, density=0.2):
    """A dense, well-conditioned matrix of ``matrix_type`` (sparse: about ``density`` filled)."""
    m = random_dense(rng, (n, n), dtype, density=density)
    if matrix_type == "general":
        return m + np.diag(np.full(n, 4.0 + np.abs(m).sum(axis=1).max(initial=0))).astype(dtype)
    if matrix_type == "symmetric":
        s = m + m.T
        return s + np.diag(rng.choice([-1.0, 1.0], n) * (4.0 + np.abs(s).sum(axis=1))).astype(dtype)
    if matrix_type == "hermitian":
        h = m + m.conj().T
        return h + np.diag(rng.choice([-1.0, 1.0], n) * (4.0 + np.abs(h).sum(axis=1))).astype(dtype)
    h = m + m.conj().T  # spd / hpd: diagonally dominant with a positive diagonal
    return (h + np.diag(4.0 + np.abs(h).sum(axis=1))).astype(dtype)


def stored(dense, triangle, index_dtype=np.int32):
    """The CSR matrix holding ``triangle`` of ``dense`` (all of it for "full")."""
    part = {"full": dense, "lower": np.tril(dense), "upper": np.triu(dense)}[triangle]
    csr = scipy.sparse.csr_array(part)
    csr.indptr, csr.indices = csr.indptr.astype(index_dtype), csr.indices.astype(index_dtype)
    return csr


def right_hand_side(rng, n, dtype, columns=None, order="C"):
    shape = (n,) if columns is None else (n, columns)
    b = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        b = b + 1j * rng.standard_normal(shape)
    return np.asarray(b, dtype=dtype, order=order)


def backward_error(a, x, b):
    """``||b - A x|| / (||A|| ||x|| + ||b||)`` in float64/complex128, column by column (max)."""
    a, x, b = (np.asarray(v, dtype=np.complex128) for v in (a, x, b))
    x2, b2 = x.reshape(len(x), -1), b.reshape(len(b), -1)
    residual = np.linalg.norm(b2 - a @ x2, axis=0)
    scale = np.linalg.norm(a, 2) * np.linalg.norm(x2, axis=0) + np.linalg.norm(b2, axis=0)
    return float(np.max(residual / np.where(scale == 0, 1, scale), initial=0.0))
