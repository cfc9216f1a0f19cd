"""Sparse suite: sparse @ dense on cuSPARSE, and the sparse direct solver.

Matrices are generated here (no downloads): the 5-point Laplacian on a 1000 x 1000 grid
(``poisson2d``, 10^6 rows, 5 entries a row) and the 7-point Laplacian on a 100^3 grid
(``poisson3d``, 10^6 rows, 7 entries a row), CSR with int32 indices.

- ``spmm_poisson2d_1e6x64_f32`` / ``spmm_poisson3d_1e6x16_f64``: ``A @ B`` with a row-major dense
  ``B`` of 64 (16) columns; ``spmv_poisson3d_1e6_f64`` / ``spmv_poisson2d_1e6_f32``: ``A @ x``.
  Columns: ``nvmathx`` (a planned :class:`nvmathx.sparse.Matmul`, SpMM preprocessed, ``execute()``),
  ``nvmathx.function`` (``nvmathx.sparse.matmul``, a plan-cache hit), torch (``a @ b`` on a
  ``sparse_csr`` tensor) and CuPy (``a @ b`` on a ``cupyx.scipy.sparse.csr_matrix``): the same
  cuSPARSE underneath, so parity is the floor. Every column allocates its result each call. TB/s
  counts the matrix (values, column indices, row offsets) and ``B`` read and the result written
  once.
- ``overhead_spmv_stateful_1e4_f32``: host microseconds per call of ``Matmul.execute()`` for the
  Poisson matrix of a 100 x 100 grid (10^4 rows) times a vector, beside torch's and CuPy's
  ``a @ x`` and the function form.
- The direct solver's cases (``spsolve_*``, ``refactorize_*``) come from
  ``benchmarks/suites/_sparse_solver_cases.py``.
"""

from __future__ import annotations

import numpy as np

from benchmarks import Case, bandwidth, import_or_skip

from ._sparse_solver_cases import poisson2d, poisson3d, solver_cases

__all__ = ["cases", "matmul_cases"]

# name -> (matrix builder, grid size, quick grid size, columns of B (None: a vector), dtype)
_PRODUCTS = {
    "spmm_poisson2d_1e6x64_f32": (poisson2d, 1000, 100, 64, "float32"),
    "spmm_poisson3d_1e6x16_f64": (poisson3d, 100, 20, 16, "float64"),
    "spmv_poisson3d_1e6_f64": (poisson3d, 100, 20, None, "float64"),
    "spmv_poisson2d_1e6_f32": (poisson2d, 1000, 100, None, "float32"),
}


def _matrix(build, size: int, dtype: str):
    matrix = build(size)
    return matrix.astype(dtype)


def _torch_operands(ctx, matrix, columns, dtype, seed):
    torch = import_or_skip("torch")
    device = f"cuda:{ctx.device_id}"
    a = torch.sparse_csr_tensor(torch.from_numpy(matrix.indptr), torch.from_numpy(matrix.indices),
                                torch.from_numpy(matrix.data), matrix.shape).to(device)
    shape = (matrix.shape[1],) if columns is None else (matrix.shape[1], columns)
    generator = torch.Generator(device=device).manual_seed(seed)
    b = torch.randn(shape, dtype=getattr(torch, dtype), device=device, generator=generator)
    return a, b


def _cupy_operands(ctx, matrix, columns, dtype, seed):
    cupy = import_or_skip("cupy")
    sparse = import_or_skip("cupyx.scipy.sparse")
    with cupy.cuda.Device(ctx.device_id):
        a = sparse.csr_matrix((cupy.asarray(matrix.data), cupy.asarray(matrix.indices), cupy.asarray(matrix.indptr)),
                              shape=matrix.shape)
        shape = (matrix.shape[1],) if columns is None else (matrix.shape[1], columns)
        b = cupy.random.default_rng(seed).standard_normal(shape, dtype=dtype)
    return a, b


def _columns(ctx, build, size, columns, dtype, copies):
    """The setups of one product: each returns ``copies`` callables (inputs rotated past the L2)."""
    matrices = {}

    def matrix():
        if "a" not in matrices:
            matrices["a"] = _matrix(build, size, dtype)
        return matrices["a"]

    def stateful():
        from nvmathx.sparse import Matmul

        runs = []
        for seed in range(copies):
            mm = Matmul(*_torch_operands(ctx, matrix(), columns, dtype, seed))
            mm.plan()
            runs.append(mm.execute)
        return runs

    def function():
        from nvmathx.sparse import matmul

        operands = [_torch_operands(ctx, matrix(), columns, dtype, seed) for seed in range(copies)]
        return [lambda a=a, b=b: matmul(a, b) for a, b in operands]

    def torch_product():
        operands = [_torch_operands(ctx, matrix(), columns, dtype, seed) for seed in range(copies)]
        return [lambda a=a, b=b: a @ b for a, b in operands]

    def cupy_product():
        operands = [_cupy_operands(ctx, matrix(), columns, dtype, seed) for seed in range(copies)]
        return [lambda a=a, b=b: a @ b for a, b in operands]

    return {"nvmathx": stateful, "nvmathx.function": function, "torch": torch_product, "cupy": cupy_product}


def _product_case(ctx, name: str) -> Case:
    build, size, quick_size, columns, dtype = _PRODUCTS[name]
    size = quick_size if ctx.quick else size
    dims = 3 if build is poisson3d else 2
    rows = size**dims
    nnz = (2 * dims + 1) * rows - 2 * dims * size ** (dims - 1)  # a stencil less its neighbours past the faces
    itemsize = np.dtype(dtype).itemsize
    width = 1 if columns is None else columns
    nbytes = nnz * (itemsize + 4) + (rows + 1) * 4 + 2 * rows * width * itemsize
    copies = ctx.rotations(nbytes) if ctx.has_gpu else 1
    params = {"matrix": build.__name__, "grid": size, "rows": rows, "nnz": nnz, "columns": columns, "dtype": dtype,
              "index_dtype": "int32", "copies": copies}
    return Case(name=name, unit="ms", setups=_columns(ctx, build, size, columns, dtype, copies), params=params,
                derive=bandwidth(nbytes),
                note="nvmathx: Matmul.execute() (planned, SpMM preprocessed); nvmathx.function: sparse.matmul(); "
                     "torch / cupy: a @ b; each call allocates its result")


def _overhead_case(ctx) -> Case:
    size, dtype = 100, "float32"

    def stateful():
        from nvmathx.sparse import Matmul

        mm = Matmul(*_torch_operands(ctx, _matrix(poisson2d, size, dtype), None, dtype, 0))
        mm.plan()
        return mm.execute

    def function():
        from nvmathx.sparse import matmul

        a, x = _torch_operands(ctx, _matrix(poisson2d, size, dtype), None, dtype, 0)
        matmul(a, x)
        return lambda: matmul(a, x)

    def torch_product():
        a, x = _torch_operands(ctx, _matrix(poisson2d, size, dtype), None, dtype, 0)
        return lambda: a @ x

    def cupy_product():
        a, x = _cupy_operands(ctx, _matrix(poisson2d, size, dtype), None, dtype, 0)
        return lambda: a @ x

    params = {"matrix": "poisson2d", "grid": size, "rows": size * size, "dtype": dtype}
    return Case(name="overhead_spmv_stateful_1e4_f32", unit="us_per_call", params=params,
                setups={"nvmathx": stateful, "nvmathx.function": function, "torch": torch_product,
                        "cupy": cupy_product},
                note="host time per call: Matmul.execute(); nvmathx.function: sparse.matmul(); torch / cupy: a @ x")


def matmul_cases(ctx) -> list[Case]:
    """The sparse @ dense cases."""
    return [*(_product_case(ctx, name) for name in _PRODUCTS), _overhead_case(ctx)]


def cases(ctx) -> list[Case]:
    # sparse @ dense first, then the direct solver's cases (benchmarks/suites/_sparse_solver_cases.py)
    return matmul_cases(ctx) + solver_cases(ctx)
