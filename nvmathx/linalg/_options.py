"""Options of matmul: MatmulOptions, MatmulPlanPreferences, and the dtype rules they feed."""

from __future__ import annotations

import logging
import math
import numbers
from dataclasses import dataclass

import numpy as np

from .._core.dtypes import numpy_dtype
from .._core.errors import OptionsError, UnsupportedOperandError
from .._core.memory import check_memory_resource
from .._core.options import check_choice, check_positive_int

__all__ = [
    "MatmulOptions",
    "MatmulPlanPreferences",
    "COMPUTE_TYPES",
    "SCALE_TYPES",
    "INPUT_DTYPES",
    "FP8_DTYPES",
    "default_compute_type",
    "default_scale_type",
    "resolve_result_dtype",
    "as_int",
    "MAX_LIMIT",
]

# cublasComputeType_t names (without the CUBLAS_COMPUTE_ prefix) and values.
COMPUTE_TYPES = {
    "16F": 64, "16F_PEDANTIC": 65, "32F": 68, "32F_PEDANTIC": 69, "32F_FAST_16F": 74, "32F_FAST_16BF": 75,
    "32F_FAST_TF32": 77, "64F": 70, "64F_PEDANTIC": 71,
}
SCALE_TYPES = ("float16", "bfloat16", "float32", "float64", "complex64", "complex128")
INPUT_DTYPES = ("float16", "bfloat16", "float32", "float64", "complex64", "complex128", "float8_e4m3fn", "float8_e5m2")
FP8_DTYPES = ("float8_e4m3fn", "float8_e5m2")
RESULT_DTYPES = INPUT_DTYPES
_DEFAULT_WORKSPACE = 32 * 1024 * 1024


@dataclass(frozen=True)
class MatmulOptions:
    """Options of :class:`Matmul` and :func:`matmul`.

    Frozen: every field is checked when the object is made, and a changed copy is made with
    ``dataclasses.replace(options, field=value)``, which checks again. Integer fields take Python
    or numpy integers (stored as ``int``), boolean ones ``bool`` or ``numpy.bool_``; a bad value
    raises :class:`~nvmathx.OptionsError` naming ``options.<field>`` at once.

    Parameters
    ----------
    compute_type : str or None
        cuBLASLt compute type without its prefix: ``"16F"``, ``"32F"``, ``"32F_FAST_TF32"`` (TF32 for
        float32 operands), ``"32F_FAST_16F"``, ``"32F_FAST_16BF"``, ``"64F"`` or a ``_PEDANTIC``
        variant. Default: ``"32F"`` for float16, bfloat16, float32, complex64 and float8 operands,
        ``"64F"`` for float64 and complex128 (what torch uses). The CPU execution space computes in
        float32/float64 (complex64/complex128) whatever the compute type.
    scale_type : str or None
        dtype of ``alpha`` and ``beta`` (cuBLASLt's scale type). Default: float32 for 32F compute
        types, float64 for 64F, float16 for 16F; the complex counterpart for complex operands.
    result_type : str or None
        dtype of the result. Default: ``c``'s dtype when ``c`` is given, else ``a``'s dtype.
        float8 products may produce ``"bfloat16"``, ``"float16"``, ``"float32"`` or a float8 type.
    memory_resource : cuda.core MemoryResource or None
        Where workspaces (and device copies of host operands) come from. Default: the device's.
    workspace_limit : int
        Most bytes of workspace an algorithm may use (default 32 MiB, NVIDIA's advice for Hopper);
        0 to 2**64 - 1.
    blocking : "auto" or True
        ``True`` synchronises after every execution; ``"auto"`` only when the operands are host
        arrays (their result must be copied back).
    logger : logging.Logger or None
        Where planning is logged (default: the ``nvmathx`` logger).
    sm_count_target : int
        Number of SMs the heuristic should plan for (0: all of the device's), e.g. when another
        stream or a green context holds the rest; 0 to 2**31 - 1.
    fast_accumulation : bool
        float8 only: accumulate without periodic promotion (faster, less accurate).
    result_amax : bool
        float8 only: also return ``aux["result_amax"]``, a float32 device scalar holding the
        largest absolute value of the result before the ``d`` scale is applied.
    """

    compute_type: str | None = None
    scale_type: str | None = None
    result_type: str | None = None
    memory_resource: object = None
    workspace_limit: int = _DEFAULT_WORKSPACE
    blocking: object = "auto"
    logger: logging.Logger | None = None
    sm_count_target: int = 0
    fast_accumulation: bool = False
    result_amax: bool = False

    def __post_init__(self):
        if self.compute_type is not None:
            if not isinstance(self.compute_type, str):
                raise OptionsError("options.compute_type",
                                   f"expected a str or None (got {type(self.compute_type).__name__})")
            check_choice(self.compute_type, tuple(COMPUTE_TYPES), "options.compute_type")
        if self.scale_type is not None:
            name = _dtype_name(self.scale_type, "options.scale_type")
            check_choice(name, SCALE_TYPES, "options.scale_type")
            object.__setattr__(self, "scale_type", name)
        if self.result_type is not None:
            name = _dtype_name(self.result_type, "options.result_type")
            check_choice(name, RESULT_DTYPES, "options.result_type")
            object.__setattr__(self, "result_type", name)
        check_memory_resource(self.memory_resource, "options.memory_resource")
        _int_field(self, "workspace_limit", "options", low=0, high=_UINT64_MAX)
        if not (isinstance(self.blocking, str) and self.blocking == "auto") and not _is_true(self.blocking):
            raise OptionsError("options.blocking", f"expected 'auto' or True (got {self.blocking!r})")
        if _is_true(self.blocking):
            object.__setattr__(self, "blocking", True)
        if self.logger is not None and not isinstance(self.logger, logging.Logger):
            raise OptionsError("options.logger", f"expected a logging.Logger (got {type(self.logger).__name__})")
        _int_field(self, "sm_count_target", "options", low=0, high=_INT32_MAX)
        for name in ("fast_accumulation", "result_amax"):
            _bool_field(self, name, "options")


@dataclass(frozen=True)
class MatmulPlanPreferences:
    """What the cuBLASLt heuristic may return.

    Frozen: every field is checked when the object is made, and a changed copy is made with
    ``dataclasses.replace(preferences, field=value)``, which checks again. Integer fields take
    Python or numpy integers (stored as ``int``), ``max_waves_count`` any real number (stored as
    ``float``), boolean ones ``bool`` or ``numpy.bool_``; a bad value raises
    :class:`~nvmathx.OptionsError` naming ``preferences.<field>`` at once.

    Parameters
    ----------
    limit : int
        Most candidate algorithms to ask for (default 8, at most 1024); ``autotune()`` times
        them all.
    max_waves_count : float
        Exclude algorithms whose waves count (device occupancy, 1.0 = one full wave) exceeds
        this (finite, >= 0); 0 disables the filter.
    reduction_scheme_mask : int or None
        cuBLASLt's ``cublasLtReductionScheme_t`` mask of allowed split-K reductions, a 32-bit
        unsigned value (None: all).
    numerical_impl_mask : int or None
        cuBLASLt's ``cublasLtNumericalImplFlags_t`` mask of allowed implementations, a 64-bit
        unsigned value (None: all).
    expand_custom_options : bool
        Also offer each heuristic candidate with every other custom option its algorithm accepts
        (``CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION``: on Hopper, e.g. the raster order and the
        cooperative schedule of the kernel), each checked with ``cublasLtMatmulAlgoCheck``. The
        variants come after the heuristic's candidates, so ``execute()`` runs the heuristic's first
        pick until :meth:`Matmul.autotune` has timed them all. Hopper's kernels in cuBLASLt 13
        take eight custom options, so expect up to eight times the candidates, and autotuning
        that much longer. Default False.
    autotune : bool
        Time the candidates on the operands while planning, as :meth:`Matmul.autotune` does, and
        run the fastest: ``Matmul.plan()`` returns them fastest first; :func:`matmul` times them on
        the call that makes a plan and keeps only the fastest in its cache (so a problem's first
        call takes about a second longer with the default ``limit``). Default False.
    """

    limit: int = 8
    max_waves_count: float = 0.0
    reduction_scheme_mask: int | None = None
    numerical_impl_mask: int | None = None
    expand_custom_options: bool = False
    autotune: bool = False

    def __post_init__(self):
        _int_field(self, "limit", "preferences", low=1, high=MAX_LIMIT)
        value = self.max_waves_count
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real) or not math.isfinite(value) \
                or value < 0:
            raise OptionsError("preferences.max_waves_count", f"expected a finite number >= 0 (got {value!r})")
        object.__setattr__(self, "max_waves_count", float(value))
        _int_field(self, "reduction_scheme_mask", "preferences", low=0, high=_UINT32_MAX, allow_none=True)
        _int_field(self, "numerical_impl_mask", "preferences", low=0, high=_UINT64_MAX, allow_none=True)
        for name in ("expand_custom_options", "autotune"):
            _bool_field(self, name, "preferences")


_INT32_MAX, _UINT32_MAX, _UINT64_MAX = 2**31 - 1, 2**32 - 1, 2**64 - 1
MAX_LIMIT = 1024  # candidates a heuristic query may ask for (cuBLASLt returns far fewer)


def as_int(value):
    """A Python or numpy integer as ``int`` (anything else as it is, for the check to refuse)."""
    if isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_)):
        return int(value)
    return value


def _is_true(value) -> bool:
    return value is True or (isinstance(value, np.bool_) and bool(value))


def _int_field(options, name: str, prefix: str, *, low: int, high: int, allow_none: bool = False) -> None:
    """Check an integer field of a frozen dataclass (``low`` 0 or 1) and store it as ``int``."""
    argument = f"{prefix}.{name}"
    value = as_int(getattr(options, name))
    check_positive_int(value, argument, allow_none=allow_none, allow_zero=low == 0)
    if value is not None and value > high:
        raise OptionsError(argument, f"expected an int <= {high} (got {value!r})")
    object.__setattr__(options, name, value)


def _bool_field(options, name: str, prefix: str) -> None:
    """Check a boolean field of a frozen dataclass (``bool`` or ``numpy.bool_``) and store it as ``bool``."""
    value = getattr(options, name)
    if not isinstance(value, (bool, np.bool_)):
        raise OptionsError(f"{prefix}.{name}", f"expected a bool (got {value!r})")
    object.__setattr__(options, name, bool(value))


def _dtype_name(value, argument) -> str:
    try:
        return numpy_dtype(value).name
    except (UnsupportedOperandError, TypeError, ValueError):  # numpy raises either for a string it cannot parse
        raise OptionsError(argument, f"unknown dtype {value!r}") from None


def default_compute_type(dtype_name: str) -> str:
    """The compute type used when the options name none (what torch uses for the same dtype)."""
    return "64F" if dtype_name in ("float64", "complex128") else "32F"


def default_scale_type(compute_type: str, dtype_name: str) -> str:
    """alpha/beta dtype for a compute type; complex for complex operands."""
    real = {"16F": "float16", "64F": "float64"}.get(compute_type.replace("_PEDANTIC", ""), "float32")
    if dtype_name.startswith("complex"):
        return {"float32": "complex64", "float64": "complex128"}.get(real, real)
    return real


def resolve_result_dtype(options: MatmulOptions, a_dtype: str, c_dtype: str | None) -> str:
    """The result dtype: options.result_type, else c's dtype, else a's."""
    if options.result_type is not None:
        return options.result_type
    return c_dtype if c_dtype is not None else a_dtype
