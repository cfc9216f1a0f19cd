"""The four GEMMs of the layers, as one declared interface.

:class:`LayerGemms` is what :mod:`._reference` (the torch composition), :mod:`._fused` (cuBLASLt
with fused epilogs) and :mod:`._dispatch` (the choice between them, per call) each implement as
module-level functions, so that any one can stand where another does. The layers' weights have
``nn.Linear``'s layout ``(out_features, in_features)``; the auxiliary formats are
:mod:`._reference`'s. ``autotune`` reaches cuBLASLt only (None: :func:`set_autotune`'s default);
the reference ignores it.
"""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["LayerGemms", "GEMM_NAMES"]

GEMM_NAMES = ("forward", "grad_input", "grad_weight", "grad_activation")


class LayerGemms(Protocol):
    """The layers' GEMMs: a module implementing each as a function of these parameters."""

    def forward(self, x: Any, weight: Any, bias: Any, activation: str, keep_aux: bool,
                autotune: bool | None = None) -> tuple[Any, Any]:
        """``(act(x @ weight.T + bias), aux or None)``; ``aux`` (for ``keep_aux``) in the format of
        :mod:`._reference`. ``activation``: "none", "relu" or "gelu"; ``bias`` may be None."""
        ...

    def grad_input(self, grad: Any, weight: Any, autotune: bool | None = None) -> Any:
        """``grad @ weight``: the input gradient of ``x @ weight.T``."""
        ...

    def grad_weight(self, grad: Any, x: Any, bias_grad: bool, autotune: bool | None = None) -> tuple[Any, Any]:
        """``(grad.T @ x, grad.sum(0) or None)``: the weight (and, for ``bias_grad``, bias) gradient."""
        ...

    def grad_activation(self, grad: Any, weight: Any, aux: Any, activation: str, bias_grad: bool,
                        autotune: bool | None = None) -> tuple[Any, Any]:
        """``(dz, dz.sum(0) or None)`` with ``dz = (grad @ weight) * act'(z)``, ``z`` read from ``aux``."""
        ...
