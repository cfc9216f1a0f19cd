"""Which path runs each GEMM: cuBLASLt (:mod:`._fused`) or the torch composition (:mod:`._reference`).

All three modules implement :class:`._layer_gemms.LayerGemms`; this one picks the other two's
function per call.

The decision costs next to nothing per call: non-empty problems on CUDA tensors of a dtype
cuBLASLt fuses go to cuBLASLt; anything else (CPU or meta tensors, float64, a problem with an
empty operand: no tokens, no input or no output features) to the reference, so cuBLASLt never
sees an empty GEMM. When cuBLASLt refuses a problem (a typed nvmathx error: NOT_SUPPORTED, a
layout or size it cannot take, no cuBLASLt library), that problem's signature is remembered and
it runs on the reference from then on; the signature is only computed once something has been
refused. Each new reason is logged once at DEBUG on the ``nvmathx`` logger.
"""

from __future__ import annotations

import logging

import torch

from .._core.errors import CudaLibraryError, LibraryNotFoundError, NvmathxError, OperandError, UnsupportedOperandError
from . import _fused, _reference
from ._layer_gemms import LayerGemms

__all__ = ["FUSED_DTYPES", "forward", "fusable", "grad_activation", "grad_input", "grad_weight", "refused"]

FUSED_DTYPES = frozenset({torch.float16, torch.bfloat16, torch.float32})

_logger = logging.getLogger("nvmathx")
_logged: set = set()
refused: set = set()  # signatures of the problems cuBLASLt refused

# Both paths implement the interface this module implements (checked by the type checker).
_PATHS: tuple[LayerGemms, LayerGemms] = (_fused, _reference)


def fusable(t: torch.Tensor) -> bool:
    """The cheap facts: a CUDA tensor of a dtype cuBLASLt fuses."""
    return t.is_cuda and t.dtype in FUSED_DTYPES


def _why_not_fused(t: torch.Tensor) -> str:
    if not t.is_cuda:
        return f"{t.device.type} tensors"
    return f"dtype {t.dtype}" if t.dtype not in FUSED_DTYPES else "an empty operand"


def _log_once(message: str) -> None:
    if message not in _logged:
        _logged.add(message)
        _logger.debug("nvmathx.torch: %s", message)


def _signature(kind, tensors, flags) -> tuple:
    return (kind, flags, *((t.shape, t.stride(), t.dtype, t.device) for t in tensors if t is not None))


def _is_refusal(error: NvmathxError) -> bool:
    """cuBLASLt said no (NOT_SUPPORTED), nvmathx found the problem outside what cuBLASLt can take
    (a layout, size or dtype), or there is no cuBLASLt. Anything else is an error to report."""
    if isinstance(error, CudaLibraryError):
        return error.status_name == "CUBLAS_STATUS_NOT_SUPPORTED"
    return isinstance(error, (OperandError, UnsupportedOperandError, LibraryNotFoundError))


def _run(kind: str, tensors: tuple, flags: tuple, autotune: bool | None):
    """Run GEMM ``kind`` on ``tensors`` (the first decides the device and dtype) with ``flags``;
    ``autotune`` reaches the cuBLASLt path only (None: :func:`set_autotune`'s default).

    The first two tensors are the GEMM's operands: the problem is empty when either is."""
    fused, reference = getattr(_fused, kind), getattr(_reference, kind)
    first = tensors[0]
    if not (fusable(first) and first.numel() and tensors[1].numel()):
        _log_once(f"{kind} with {_why_not_fused(first)}: torch composition")
        return reference(*tensors, *flags)
    if refused and _signature(kind, tensors, flags) in refused:
        return reference(*tensors, *flags)
    try:
        return fused(*tensors, *flags, autotune)
    except NvmathxError as error:
        if not _is_refusal(error):
            raise
        refused.add(_signature(kind, tensors, flags))
        _log_once(f"{kind} {flags} refused by cuBLASLt for {[tuple(t.shape) for t in tensors if t is not None]} "
                  f"{first.dtype} ({type(error).__name__}: {error}); torch composition from now on")
        return reference(*tensors, *flags)


def forward(x, weight, bias, activation: str, keep_aux: bool, autotune: bool | None = None):
    """``(act(x @ weight.T + bias), aux or None)``."""
    return _run("forward", (x, weight, bias), (activation, keep_aux), autotune)


def grad_input(grad, weight, autotune: bool | None = None):
    """``grad @ weight``."""
    return _run("grad_input", (grad, weight), (), autotune)


def grad_weight(grad, x, bias_grad: bool, autotune: bool | None = None):
    """``(grad.T @ x, grad.sum(0) or None)``."""
    return _run("grad_weight", (grad, x), (bias_grad,), autotune)


def grad_activation(grad, weight, aux, activation: str, bias_grad: bool, autotune: bool | None = None):
    """``(dz, dz.sum(0) or None)`` with ``dz = (grad @ weight) * act'(z)``."""
    return _run("grad_activation", (grad, weight, aux), (activation, bias_grad), autotune)
