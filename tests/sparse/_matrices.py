"""Random CSR matrices for the sparse tests, built from the seeded generator with numpy alone (the
reference is the dense array, independent of scipy.sparse's arithmetic)."""

import numpy as np


def random_dense(rng, shape, dtype, density=0.3, empty_rows=()):
    """A dense array with about ``density`` of its entries nonzero (``empty_rows`` all zero)."""
    dtype = np.dtype(dtype)
    values = rng.standard_normal(shape)
    if dtype.kind == "c":
        values = values + 1j * rng.standard_normal(shape)
    mask = rng.random(shape) < density
    values = np.where(mask, values, 0).astype(dtype)
    for row in empty_rows:
        values[row] = 0
    return values


def csr_parts(dense, index_dtype=np.int32):
    """``(indptr, indices, data)`` of a dense 2-D array, computed with numpy."""
    rows, cols = np.nonzero(dense)
    indptr = np.zeros(dense.shape[0] + 1, dtype=index_dtype)
    np.add.at(indptr, rows + 1, 1)
    return np.cumsum(indptr).astype(index_dtype), cols.astype(index_dtype), dense[rows, cols]


def scrambled_parts(rng, dense, index_dtype=np.int32):
    """CSR arrays of ``dense`` whose columns are shuffled within each row and whose entries are each
    split in two duplicates (halves), so that summing the duplicates gives ``dense`` back."""
    indptr, indices, data = csr_parts(dense, index_dtype)
    new_indptr, new_indices, new_data = [0], [], []
    for row in range(dense.shape[0]):
        start, stop = indptr[row], indptr[row + 1]
        cols = np.repeat(indices[start:stop], 2)
        vals = np.repeat(data[start:stop] / 2, 2)
        order = rng.permutation(len(cols))
        new_indices.extend(cols[order])
        new_data.extend(vals[order])
        new_indptr.append(new_indptr[-1] + len(cols))
    return (np.asarray(new_indptr, index_dtype), np.asarray(new_indices, index_dtype),
            np.asarray(new_data, dense.dtype))


def scipy_csr(parts, shape, kind="csr_matrix"):
    """A scipy CSR matrix holding exactly these arrays (scipy's constructor may narrow int64 indices)."""
    import scipy.sparse as sp

    indptr, indices, data = parts
    matrix = getattr(sp, kind)((data, indices, indptr), shape=shape)
    matrix.indptr, matrix.indices, matrix.data = indptr, indices, data
    return matrix


def dense_from_parts(indptr, indices, data, shape):
    """The dense array of CSR arrays (duplicates summed), computed with numpy."""
    dense = np.zeros(shape, dtype=data.dtype)
    rows = np.repeat(np.arange(shape[0]), np.diff(indptr))
    np.add.at(dense, (rows, indices), data)
    return dense


TOLERANCES = {"float16": 1e-2, "bfloat16": 3e-2, "float32": 2e-5, "complex64": 2e-5, "float64": 1e-12,
              "complex128": 1e-12}


def make_sparse(library, parts, shape, *, kind="csr_matrix", device="cpu"):
    """A CSR matrix of ``library`` ("scipy", "torch", "cupy") holding exactly these host arrays
    (values of a torch dtype name such as "bfloat16" for torch are rounded there)."""
    indptr, indices, data = parts
    if library == "scipy":
        return scipy_csr(parts, shape, kind)
    if library == "torch":
        import torch

        values = torch.from_numpy(np.ascontiguousarray(data))
        return torch.sparse_csr_tensor(torch.from_numpy(indptr), torch.from_numpy(indices), values, shape,
                                       device=device)
    import cupy
    import cupyx.scipy.sparse

    return cupyx.scipy.sparse.csr_matrix((cupy.asarray(data), cupy.asarray(indices), cupy.asarray(indptr)),
                                         shape=shape)


def make_dense(library, array, *, device="cpu"):
    """``array`` (numpy) as a dense array of ``library``'s dense kind."""
    if library == "scipy":
        return array
    if library == "torch":
        import torch

        return torch.from_numpy(np.ascontiguousarray(array) if array.ndim else array).to(device)
    import cupy

    return cupy.asarray(array)


def to_host(array):
    """A numpy copy of a numpy, torch or cupy array."""
    if isinstance(array, np.ndarray):
        return array
    if type(array).__module__.startswith("torch"):
        return array.detach().cpu().numpy()
    return array.get()


def reference(dense_a, b, c, alpha, beta, transpose):
    """``alpha * op(a) @ b + beta * c`` in float64 (complex128) with numpy, from dense arrays."""
    wide = np.complex128 if np.iscomplexobj(dense_a) or np.iscomplexobj(b) else np.float64
    a = np.asarray(dense_a, dtype=wide)
    result = alpha * ((a.T if transpose else a) @ np.asarray(b, dtype=wide))
    if c is not None and beta != 0:
        result = result + beta * np.asarray(c, dtype=wide)
    return result


def assert_close(result, expected, dtype_name):
    tolerance = TOLERANCES[dtype_name]
    scale = max(float(np.abs(expected).max(initial=0.0)), 1.0)
    np.testing.assert_allclose(np.asarray(result, dtype=expected.dtype), expected, rtol=tolerance,
                               atol=tolerance * scale)


def random_operands(rng, shape, n, dtype, *, vector=False, transpose=False, density=0.3, empty_rows=()):
    """``(dense a, b, c)`` for ``op(a) @ b + c``: ``a`` of ``shape`` (about ``density`` nonzero),
    ``b`` a vector or ``n`` columns, ``c`` of the result's shape."""
    dense = random_dense(rng, shape, dtype, density=density, empty_rows=empty_rows)
    m, k = (shape[1], shape[0]) if transpose else shape
    b = random_dense(rng, (k,) if vector else (k, n), dtype, density=1.0)
    c = random_dense(rng, (m,) if vector else (m, n), dtype, density=1.0)
    return dense, b, c
