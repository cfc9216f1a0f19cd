"""Sparse linear algebra: sparse @ dense on cuSPARSE (:class:`Matmul`, :func:`matmul`) and the sparse
direct solver on cuDSS.

Sparse operands are CSR matrices from scipy.sparse (``csr_matrix`` / ``csr_array``),
cupyx.scipy.sparse (``csr_matrix``) and torch (``layout=torch.sparse_csr``), with int32 or int64
indices. CSC and COO matrices of the three libraries are converted to CSR with one copy. Column
indices that are unsorted within a row, or repeated, are handled as scipy handles them: duplicates
are summed (a copy in scipy's canonical format is made, once per operand). Results come back as the
dense kind of the sparse operand's library (numpy for scipy, cupy for cupyx, torch for torch), and
every dense operand must be of that kind. Host operands run on the CPU (scipy) unless
``execution="cuda"``.
"""

__all__: list[str] = [
    # sparse @ dense (cuSPARSE)
    # the sparse direct solver (cuDSS)
]
