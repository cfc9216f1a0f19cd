"""Which engine runs a GPU transform: cuFFT, or one generated cuFFTDx kernel per block of rows.

Pure functions of the planned layout, so the choice is tested without a GPU. The fused engine
loads whole rows into a thread block, transforms them with cuFFTDx, scales and stores them, in one
pass over memory (see :mod:`nvmathx._codegen.fused_fft`). What it runs: C2C, R2C and C2R transforms
along one axis, batched (one launch per outer index where the batch axes do not collapse into one
row stride; any element stride), in one pass with no copies. Plan
the layout of a C2R transform for it with ``overwrite_input=True``: the fused kernel does not write
its operand, so the copy that protects the operand from cuFFT is not needed.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._core.errors import OptionsError
from .layout import FFTPass, LayoutPlan

__all__ = ["ENGINES", "FusedRows", "fused_rows", "fused_considered", "choose_engine", "faster_families",
           "check_callback_launches"]

ENGINES = ("auto", "cufft", "fused")

# cuFFTDx's largest block C2C on sm_90 (a smaller block may still be refused by its shared memory)
MAX_FUSED_SIZE = {"float32": 32768, "float64": 16384}

# Plain transforms the fused kernel runs faster than cuFFT: (type, length, precision) -> the compute
# capability majors where measured (`scripts/recipe tune-fft-knobs`; the figures are in
# docs/guide/fft.rst, "Performance notes"). Only clear margins are listed: "auto" takes the fused
# kernel for these once it is in the disk cache.
MEASURED_FASTER = {("C2R", 4096, "float32"): frozenset({9})}


def faster_families(rows: FusedRows | str) -> frozenset:
    """The compute capability majors on which :data:`MEASURED_FASTER` lists the transform of ``rows``
    (empty where it does not)."""
    if not isinstance(rows, FusedRows):
        return frozenset()
    return MEASURED_FASTER.get((rows.fft_type, rows.size, rows.precision), frozenset())


@dataclass(frozen=True)
class FusedRows:
    """A transform as the fused kernel sees it: ``rows`` rows of ``size`` points (the real length for
    R2C/C2R; strides in elements of the input and output), launched once per ``loop_offsets``
    pair (input, output offsets in elements) where the operand's batch axes do not collapse into
    one row stride (axis 1 of a 3-D operand, say), once otherwise."""

    fft_type: str
    size: int
    rows: int
    precision: str  # "float32" or "float64"
    in_row_stride: int
    in_element_stride: int
    out_row_stride: int
    out_element_stride: int
    loop_offsets: tuple = ()


def fused_rows(layout: LayoutPlan, precision: str) -> FusedRows | str:
    """The rows of ``layout`` for the fused kernel, or why it cannot run them (a sentence)."""
    steps = layout.steps
    if len(steps) != 1 or not isinstance(steps[0], FFTPass):
        return "this layout needs copies or several cuFFT passes (more than one transformed axis, " \
               "a converted dtype, padding or cropping)"
    step = steps[0]
    if len(step.n) != 1:
        return f"it transforms one axis per launch (this transform has {len(step.n)})"
    size = step.n[0]
    largest = MAX_FUSED_SIZE.get(precision)
    if largest is None:
        return f"it computes in float32 or float64 (not {precision})"
    if not 2 <= size <= largest:
        return f"a length of {size} does not fit one thread block (2 to {largest} in {precision})"
    return FusedRows(layout.fft_type, size, step.batch, precision, step.idist, step.istride, step.odist, step.ostride,
                     tuple(step.loop_offsets()) if step.loop_shape else ())


def fused_considered(requested: str, rows: FusedRows | str, *, callbacks: bool = False, scaled: bool = False,
                     conjugated: bool = False, faster: bool = False) -> bool:
    """Whether :func:`choose_engine` needs to know the state of the fused kernel (``kernel``) for
    this transform: ``"auto"`` with callbacks, a scale or a transform measured faster, on rows the
    fused kernel takes."""
    return (requested == "auto" and isinstance(rows, FusedRows) and (callbacks or scaled or faster)
            and not (conjugated and rows.fft_type == "C2R"))


def choose_engine(requested: str, rows: FusedRows | str, *, callbacks: bool = False, scaled: bool = False,
                  conjugated: bool = False, faster: bool = False, kernel: str = "absent") -> tuple[str, str]:
    """``(engine, reason)`` for a transform: ``"cufft"`` or ``"fused"``.

    ``requested`` is ``FFTOptions.engine``; ``rows`` is :func:`fused_rows`'s answer; ``callbacks``:
    a prolog or epilog is attached; ``scaled``: the call multiplies the result (a norm other than
    "backward"); ``conjugated``: the operand is conjugated first (``hfft``, ``ihfft``); ``faster``:
    :data:`MEASURED_FASTER` lists the transform for this GPU's family (:func:`faster_families`);
    ``kernel``: the fused kernel is ``"cached"`` on disk, ``"absent"``, or a sentence saying why the
    fused engine cannot run the transform on this device (see :func:`fused_considered`).

    ``"auto"`` takes the fused kernel where callbacks run (building it if it is not cached: the
    plan asked for code), and for a scaled transform or one the committed table measured faster
    once its kernel is in the disk cache (a call never waits on code generation it did not ask
    for); other plain transforms stay on cuFFT.

    Raises
    ------
    OptionsError
        For ``"fused"`` when the transform does not fit the fused kernel (naming ``options.engine``).
    """
    if requested == "cufft":
        return "cufft", "options.engine='cufft'"
    if requested == "fused":
        if isinstance(rows, str):
            raise OptionsError("options.engine", f"the fused engine cannot run this transform: {rows}")
        return "fused", "options.engine='fused'"
    if requested != "auto":
        raise OptionsError("options.engine", f"expected one of {ENGINES} (got {requested!r})")
    if isinstance(rows, str):
        return "cufft", f"options.engine='auto': the fused engine cannot run this transform ({rows})"
    if not (callbacks or scaled or faster):
        return "cufft", "options.engine='auto': a plain transform (the measured table does not favour the fused engine)"
    if conjugated and rows.fft_type == "C2R":
        return "cufft", "options.engine='auto': the fused engine does not conjugate a C2R operand (hfft)"
    if kernel not in ("cached", "absent"):
        return "cufft", f"options.engine='auto': the fused engine cannot run this transform here ({kernel})"
    if callbacks:
        return "fused", "options.engine='auto': callbacks run inside the fused kernel, in one pass"
    if kernel == "cached" and scaled:
        return "fused", "options.engine='auto': the scale is applied in the fused kernel's store (kernel cached)"
    if kernel == "cached":
        return "fused", "options.engine='auto': measured faster than cuFFT on this GPU family (kernel cached)"
    return "cufft", ("options.engine='auto': the fused kernel is not in the disk cache (a plan with "
                     "engine='fused' builds it)")


def check_callback_launches(rows: FusedRows, prolog=None, epilog=None) -> None:
    """Refuse callbacks on rows that run in several launches (batch axes that do not collapse into
    one row stride): each launch would count offsets from its own rows, so no launch sees the
    operand's offsets, and cuFFT's engine refuses them alike.

    Raises
    ------
    OptionsError
        Naming ``prolog`` or ``epilog``.
    """
    for role, item in (("prolog", prolog), ("epilog", epilog)):
        if item is not None and rows.loop_offsets:
            raise OptionsError(role, f"this {rows.fft_type} layout runs in {len(rows.loop_offsets)} launches "
                                     "(batch axes that do not collapse into one row stride), so no launch "
                                     "sees the operand's offsets")
