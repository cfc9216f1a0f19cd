"""``Matmul``: a cuBLASDx block GEMM, ``C = alpha * A @ B + beta * C`` on shared-memory tiles."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np

from .._bindings import mathdx
from .._codegen import descriptors
from .._codegen.target import Target, max_shared_memory_per_block, resolve_target
from .._core.errors import OptionsError
from . import _compilers
from ._fft import normalize_precision

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

    from .._codegen.cache import CodeEntry

__all__ = ["Matmul", "tile_sizes"]

_ARRANGEMENTS = {"row_major": mathdx.BlasArrangement.ROW_MAJOR, "col_major": mathdx.BlasArrangement.COL_MAJOR}
_DATA_TYPES = {"real": mathdx.BlasType.REAL, "complex": mathdx.BlasType.COMPLEX}
_T = mathdx.BlasTrait


def _arrangement(value) -> tuple[str, str, str]:
    values = (value,) * 3 if isinstance(value, str) else tuple(value) if isinstance(value, (tuple, list)) else None
    if values is None or len(values) != 3 or any(v not in _ARRANGEMENTS for v in values):
        raise OptionsError(
            "arrangement", f"expected 'row_major', 'col_major' or a 3-tuple of them for (A, B, C) (got {value!r})"
        )
    return values


def _dims(value, argument: str, count: int = 3) -> tuple[int, ...]:
    if not isinstance(value, (tuple, list)) or len(value) != count:
        raise OptionsError(argument, f"expected {count} positive ints (got {value!r})")
    if any(not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1 for v in value):
        raise OptionsError(argument, f"expected {count} positive ints (got {value!r})")
    return tuple(int(v) for v in value)


def tile_sizes(m: int, n: int, k: int, arrangement, leading_dimension) -> tuple[int, int, int]:
    """Elements each of A (m x k), B (k x n) and C (m x n) occupies at the given leading dimensions."""
    shapes = ((m, k), (k, n), (m, n))
    # Column-major: ld >= rows and the tile spans ld * cols elements; row-major the other way round.
    return tuple(
        ld * (cols if order == "col_major" else rows)
        for (rows, cols), order, ld in zip(shapes, arrangement, leading_dimension, strict=True)
    )


@_compilers.descriptor
class Matmul:
    """A cuBLASDx block GEMM, ``c = alpha * a @ b + beta * c``, for ``numba.cuda.jit`` kernels.

    Parameters
    ----------
    size : tuple of 3 ints
        ``(m, n, k)``: A is m x k, B is k x n, C is m x n.
    precision : numpy dtype or name
        ``np.float32`` or ``np.float64`` (of the real and imaginary parts for complex data).
    data_type : {"real", "complex"}
    arrangement : str or 3-tuple of str
        ``"row_major"`` or ``"col_major"`` for A, B and C (one string applies to all three). The
        default, row-major, matches C-contiguous numpy tiles.
    leading_dimension : None, "suggested" or 3-tuple of int
        Leading dimensions of the tiles in shared memory; ``None`` packs them tightly,
        ``"suggested"`` takes cuBLASDx's padded choice (fewer bank conflicts).
    block_dim : "suggested" or tuple of up to 3 ints
        The block the GEMM runs on; kernels must be launched with exactly ``block_dim``.
    sm : tuple, int, str or None
        Target architecture; ``None`` means the current device.

    Raises
    ------
    OptionsError
        When an argument is malformed, the GEMM has no cuBLASDx implementation, or its tiles do
        not fit the architecture's shared memory.

    Notes
    -----
    Inside a kernel, ``gemm.execute(alpha, a, b, beta, c)`` takes scalars of ``value_type`` and
    arrays of ``value_type`` in shared memory holding ``a_size``, ``b_size`` and ``c_size``
    elements at leading dimensions ``lda``, ``ldb``, ``ldc``. Carve them from one dynamic
    shared array of ``shared_memory_size`` bytes: ``a = smem[:gemm.a_size]``, ``b =
    smem[gemm.a_size:gemm.a_size + gemm.b_size]``, ``c`` after. All threads of the block must
    call it; synchronise (``cuda.syncthreads()``) before reading ``c``.

    Examples
    --------
    >>> import numpy as np
    >>> from nvmathx.device_api import Matmul
    >>> gemm = Matmul((32, 32, 32), np.float32, block_dim=(128, 1, 1), sm=(9, 0))
    >>> gemm.lda, gemm.a_size, gemm.shared_memory_size, gemm.block_dim
    (32, 1024, 12288, (128, 1, 1))
    """

    # the traits that kernels read, as compile-time constants (both compilers' registrations)
    _kernel_attributes = (
        "size", "m", "n", "k", "value_type", "block_dim", "block_size", "lda", "ldb", "ldc",
        "a_size", "b_size", "c_size", "shared_memory_size",
    )  # fmt: skip

    def __init__(self, size: Sequence[int], precision: DTypeLike, data_type: str = "real",
                 arrangement: str | Sequence[str] = "row_major",
                 leading_dimension: Sequence[int] | str | None = None, block_dim: Sequence[int] | str = "suggested",
                 sm: str | int | tuple[int, int] | None = None) -> None:
        _compilers.register_imported()  # typed by the registry of each compiler imported by now
        self.size = _dims(size, "size")
        self.precision = normalize_precision(precision)
        if data_type not in _DATA_TYPES:
            raise OptionsError("data_type", f"expected 'real' or 'complex' (got {data_type!r})")
        self.data_type = data_type
        self.arrangement = _arrangement(arrangement)
        self.target: Target = resolve_target(sm)
        # Malformed arguments are refused before libmathdx is asked anything.
        block_dims = _block_dims(block_dim)
        leading_dims = _leading_dims(leading_dimension)
        base = self._base_operators()
        self._check(
            base,
            "size",
            f"no cuBLASDx implementation of a {self.size} {data_type} GEMM in {self.precision.name} "
            f"on {self.target.name}",
        )
        operators = base + self._block_dim_operator(block_dims) + self._leading_dimension_operator(base, leading_dims)
        self._operators = operators
        self._read_traits()
        self._check_shared_memory()
        self._code: CodeEntry | None = None

    def _base_operators(self) -> tuple:
        precision = int(_normalized_precision_enum(self.precision))
        return (
            ("FUNCTION", int(mathdx.BlasFunction.MM)),
            ("EXECUTION", int(mathdx.Execution.BLOCK)),
            ("API", int(mathdx.BlasApi.SMEM)),
            ("SIZE", self.size),
            ("TYPE", int(_DATA_TYPES[self.data_type])),
            ("PRECISION", (precision,) * 3),
            ("ARRANGEMENT", tuple(int(_ARRANGEMENTS[a]) for a in self.arrangement)),
            ("SM", self.target.sm),
        )

    def _query(self, operators: tuple) -> dict:
        return descriptors.cached_query(("cublasdx", operators), self.target, _blas_traits)

    def _check(self, operators: tuple, argument: str, message: str) -> dict:
        traits = self._query(operators)
        if "error" in traits:
            raise OptionsError(argument, f"{message} ({traits['error']})")
        return traits

    def _block_dim_operator(self, dims) -> tuple:
        if dims is None:
            return ()
        operator = (("BLOCK_DIM", dims),)
        self._check(self._base_operators() + operator, "block_dim", f"block_dim={dims} is not legal for this GEMM")
        return operator

    def _leading_dimension_operator(self, base: tuple, dims) -> tuple:
        if dims is None:
            return ()
        if dims == "suggested":
            dims = tuple(self._query(base)["suggested_leading_dimension"])
        operator = (("LEADING_DIMENSION", dims),)
        self._check(base + operator, "leading_dimension", f"leading_dimension={dims} is not legal for this GEMM")
        return operator

    def _read_traits(self) -> None:
        traits = self._check(self._operators, "size", "no cuBLASDx implementation")
        self.block_dim = tuple(traits["block_dim"])
        self.lda, self.ldb, self.ldc = traits["leading_dimension"]
        m, n, k = self.size
        self.a_size, self.b_size, self.c_size = tile_sizes(m, n, k, self.arrangement, (self.lda, self.ldb, self.ldc))
        self.block_size = int(np.prod(self.block_dim))

    def _check_shared_memory(self) -> None:
        limit = max_shared_memory_per_block(self.target)
        if self.shared_memory_size > limit:
            raise OptionsError(
                "size",
                f"the A, B and C tiles of a {self.size} GEMM need {self.shared_memory_size} bytes of shared memory; "
                f"{self.target.name} allows {limit} per block",
            )

    @property
    def m(self) -> int:
        return self.size[0]

    @property
    def n(self) -> int:
        return self.size[1]

    @property
    def k(self) -> int:
        return self.size[2]

    @property
    def value_dtype(self) -> np.dtype:
        """numpy dtype of the elements (float32/float64, or complex64/complex128)."""
        return self.precision if self.data_type == "real" else np.result_type(self.precision, np.complex64)

    @property
    def value_type(self) -> type[np.number]:
        """The numpy scalar type of the elements and of alpha and beta; inside a kernel, the
        compiler's number class of it."""
        return self.value_dtype.type

    @property
    def shared_memory_size(self) -> int:
        """Bytes of shared memory for A, B and C packed one after another."""
        return (self.a_size + self.b_size + self.c_size) * self.value_dtype.itemsize

    def descriptor(self) -> descriptors.Descriptor:
        return ("cublasdx", self._operators)

    def code(self) -> CodeEntry:
        """The generated code (symbol and LTO-IR), generating it if needed."""
        if self._code is None:
            self._code = descriptors.get_code(self.descriptor(), self.target)
        return self._code

    def execute(self, *args: Any) -> NoReturn:
        """Run the GEMM: only inside a ``numba.cuda.jit`` kernel (see the class Notes)."""
        raise RuntimeError("Matmul.execute can only be called inside a numba.cuda.jit kernel")

    def _prefetch(self) -> None:
        """Start generating the code in another process (see ``descriptors.prefetch``)."""
        if self._code is None and not self.__dict__.get("_prefetched"):
            self._prefetched = True  # typing reads the object many times: look at the disk once
            descriptors.prefetch(self.descriptor(), self.target)

    @property
    def _numba_type_(self):
        # Read by a compiler's generic typeof only while its own registry lacks this class.
        return _compilers.unregistered_type(self)

    def __repr__(self) -> str:
        return (
            f"Matmul(size={self.size}, precision={self.precision.name}, data_type={self.data_type!r}, "
            f"arrangement={self.arrangement}, leading_dimension={(self.lda, self.ldb, self.ldc)}, "
            f"block_dim={self.block_dim}, sm={self.target.name!r})"
        )


def _block_dims(block_dim):
    """None for "suggested", else three positive ints of at most 1024 threads in all."""
    if isinstance(block_dim, str) and block_dim == "suggested":
        return None
    if isinstance(block_dim, (tuple, list)) and 1 <= len(block_dim) <= 3:
        block_dim = tuple(block_dim) + (1,) * (3 - len(block_dim))
    dims = _dims(block_dim, "block_dim")
    if int(np.prod(dims)) > 1024:
        raise OptionsError("block_dim", f"a block has at most 1024 threads (got {dims})")
    return dims


def _leading_dims(leading_dimension):
    """None, "suggested", or three positive ints."""
    if leading_dimension is None or (isinstance(leading_dimension, str) and leading_dimension == "suggested"):
        return leading_dimension
    return _dims(leading_dimension, "leading_dimension")


def _normalized_precision_enum(precision: np.dtype):
    return mathdx.Precision.F32 if precision == np.float32 else mathdx.Precision.F64


def _blas_traits(handle) -> dict:
    return {
        "block_dim": list(handle.traits(_T.BLOCK_DIM, 3)),
        "leading_dimension": list(handle.traits(_T.LEADING_DIMENSION, 3)),
        "suggested_leading_dimension": list(handle.traits(_T.SUGGESTED_LEADING_DIMENSION, 3)),
    }
