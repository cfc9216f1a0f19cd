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
