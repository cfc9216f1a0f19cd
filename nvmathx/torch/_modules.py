"""The layers: :class:`FusedLinear` and :class:`FusedMLP`."""

from __future__ import annotations

import torch
from torch import nn

from ._float8.dispatch import warn_unquantised_layer
from ._float8.recipe import Float8Recipe, check_recipe
from ._float8.state import Float8State
from ._functional import _activation, fused_linear, fused_mlp
from ._fused import check_autotune

__all__ = ["FusedLinear", "FusedMLP"]


class FusedLinear(nn.Module):
    """``nn.Linear`` followed by an optional activation, forward and backward on cuBLASLt.

    The parameters, their initialisation and the ``state_dict`` are exactly ``nn.Linear``'s
    (``weight`` of shape ``(out_features, in_features)``, ``bias`` of shape ``(out_features,)``),
    so a checkpoint of either loads into the other. It is not an ``nn.Linear`` subclass: code that
    swaps ``nn.Linear`` modules (quantisation, for example) would drop the activation. As with
    ``nn.Linear``, ``in_features`` or ``out_features`` may be 0, ``device="meta"`` creates a
    layer that computes shapes only, and gradients of gradients are torch's (see
    :func:`fused_linear`).

    Parameters
    ----------
    in_features, out_features : int
        Sizes of the input's last dimension and of the output's.
    bias : bool
        Learn an additive bias (default True).
    activation : None, "relu" or "gelu"
        Applied after the bias ("gelu": tanh approximation, ``F.gelu(approximate="tanh")``).
    device, dtype
        Where and in which dtype the parameters are created, as for ``nn.Linear``.
    autotune : None, True or False
        Whether this layer's GEMMs (forward and backward) autotune (see :func:`set_autotune`);
        None (default) follows the process-wide :func:`set_autotune`. The attribute of the same
        name may be changed later; it is not part of the ``state_dict``.
    fp8 : Float8Recipe or None
        Train and run in float8 with this recipe (see :func:`fused_linear`). The layer then holds
        its scaling state as the submodule ``fp8_state`` (:class:`Float8State`), whose buffers
        ``fp8_state.amax_history``, ``fp8_state.scale`` and ``fp8_state.scale_inv`` join the
        ``state_dict``: an ``nn.Linear`` checkpoint loads with ``strict=False`` (those keys
        reported missing), and this layer's loads into ``nn.Linear`` with ``strict=False``
        (reported unexpected); ``strict=True`` raises for them, as torch does. Where float8 cannot
        run on the input's device (CPU tensors, a GPU older than compute capability 8.9) the
        layer runs unquantised and warns once (``UserWarning``).

    See Also
    --------
    fused_linear : the computation, its dtypes, devices and fallbacks.

    Examples
    --------
    >>> import torch
    >>> from nvmathx.torch import FusedLinear
    >>> layer = FusedLinear(3, 4, activation="gelu")
    >>> layer(torch.ones(5, 2, 3)).shape
    torch.Size([5, 2, 4])
    >>> layer.load_state_dict(torch.nn.Linear(3, 4).state_dict())
    <All keys matched successfully>
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, activation: str | None = None,
                 device: torch.device | str | int | None = None, dtype: torch.dtype | None = None, *,
                 autotune: bool | None = None, fp8: Float8Recipe | None = None) -> None:
        super().__init__()
        _activation(activation, allow_none=True)
        self.autotune = check_autotune(autotune)
        self.fp8 = check_recipe(fp8)
        self.in_features = in_features
        self.out_features = out_features
        self.activation = activation
        self.weight = nn.Parameter(torch.empty((out_features, in_features), device=device, dtype=dtype))
        if bias:
            self.bias = nn.Parameter(torch.empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.fp8_state = Float8State(fp8, "linear", device=device) if fp8 is not None else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """``nn.Linear``'s initialisation (the same random draws from torch's generator), and the
        float8 scaling state's (:meth:`Float8State.reset_parameters`) where a recipe is on."""
        nn.Linear.reset_parameters(self)  # type: ignore[arg-type]  # borrowed: the same weight and bias
        if self.fp8_state is not None:
            self.fp8_state.reset_parameters()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.fp8 is not None:
            warn_unquantised_layer(self, x)
        return fused_linear(x, self.weight, self.bias, self.activation, autotune=self.autotune, fp8=self.fp8,
                            fp8_state=self.fp8_state)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}, "
                f"activation={self.activation!r}" + _autotune_repr(self.autotune) + _fp8_repr(self.fp8))


class FusedMLP(nn.Module):
    """The transformer feed-forward block ``fc2(act(fc1(x)))``, forward and backward on cuBLASLt
    with every elementwise step fused into a GEMM (:func:`fused_mlp`).

    ``fc1`` (``d_model -> hidden``) and ``fc2`` (``hidden -> d_model``) are :class:`FusedLinear`
    layers without an activation, so the ``state_dict`` keys are ``fc1.weight``, ``fc1.bias``,
    ``fc2.weight`` and ``fc2.bias``, each exactly ``nn.Linear``'s: the block loads a checkpoint of
    any module holding two ``nn.Linear`` layers named ``fc1`` and ``fc2``, and initialises as
    ``nn.Linear(d_model, hidden)`` then ``nn.Linear(hidden, d_model)`` created in that order.
    Empty problems, meta tensors and gradients of gradients behave as for those two layers.

    Parameters
    ----------
    d_model, hidden : int
        Feature sizes of the input (and output) and of the hidden layer.
    activation : "gelu" or "relu"
        Between the layers ("gelu": tanh approximation).
    bias : bool
        Both layers learn a bias (default True).
    device, dtype
        Where and in which dtype the parameters are created.
    autotune : None, True or False
        Whether the block's six GEMMs autotune; None (default) follows :func:`set_autotune`. The
        block's own ``autotune`` attribute decides (``fc1`` and ``fc2`` are not called on their own).
    fp8 : Float8Recipe or None
        Train and run in float8 with this recipe (see :func:`fused_mlp`); the block's scaling
        state is its submodule ``fp8_state`` (``kind="mlp"``), saved in the ``state_dict`` as for
        :class:`FusedLinear`, and the same ``UserWarning`` where float8 cannot run.

    Examples
    --------
    >>> import torch
    >>> from nvmathx.torch import FusedMLP
    >>> block = FusedMLP(8, 32)
    >>> block(torch.ones(4, 8)).shape
    torch.Size([4, 8])
    >>> sorted(block.state_dict())
    ['fc1.bias', 'fc1.weight', 'fc2.bias', 'fc2.weight']
    """

    def __init__(self, d_model: int, hidden: int, activation: str = "gelu", bias: bool = True,
                 device: torch.device | str | int | None = None, dtype: torch.dtype | None = None, *,
                 autotune: bool | None = None, fp8: Float8Recipe | None = None) -> None:
        super().__init__()
        _activation(activation, allow_none=False)
        self.activation = activation
        self.autotune = check_autotune(autotune)
        self.fp8 = check_recipe(fp8)
        self.fc1 = FusedLinear(d_model, hidden, bias, device=device, dtype=dtype)
        self.fc2 = FusedLinear(hidden, d_model, bias, device=device, dtype=dtype)
        self.fp8_state = Float8State(fp8, "mlp", device=device) if fp8 is not None else None

    def reset_parameters(self) -> None:
        """Both layers' :meth:`FusedLinear.reset_parameters` (``nn.Linear``'s draws, ``fc1`` first) and
        the block's float8 scaling state's where a recipe is on."""
        self.fc1.reset_parameters()
        self.fc2.reset_parameters()
        if self.fp8_state is not None:
            self.fp8_state.reset_parameters()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.fp8 is not None:
            warn_unquantised_layer(self, x)
        fc1, fc2 = self.fc1, self.fc2
        return fused_mlp(x, fc1.weight, fc1.bias, fc2.weight, fc2.bias, self.activation, autotune=self.autotune,
                         fp8=self.fp8, fp8_state=self.fp8_state)

    def extra_repr(self) -> str:
        return f"activation={self.activation!r}" + _autotune_repr(self.autotune) + _fp8_repr(self.fp8)


def _autotune_repr(autotune: bool | None) -> str:
    return "" if autotune is None else f", autotune={autotune}"


def _fp8_repr(recipe: Float8Recipe | None) -> str:
    return "" if recipe is None else f", fp8={recipe!r}"
