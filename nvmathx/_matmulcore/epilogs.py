"""Epilogs: what each one computes (the numpy reference every GPU result is checked against) and
how it maps onto cuBLASLt.

All semantics are in the user's row-major frame. ``d = alpha * a @ b + beta * c`` has shape
``(..., M, N)``; an epilog then transforms ``d`` and may produce auxiliary outputs:

========================  =================================  ======================================
epilog                    result                             auxiliary outputs / inputs
========================  =================================  ======================================
RELU                      ``max(d, 0)``
GELU                      ``gelu(d)`` (tanh form)
BIAS                      ``d + bias``                       input ``bias`` (N,) or (..., 1, N)
RELU_BIAS / GELU_BIAS     ``act(d + bias)``                  input ``bias``
RELU_AUX                  ``max(d, 0)``                      output ``relu_aux``: bitmask of ``d > 0``
RELU_AUX_BIAS             ``max(d + bias, 0)``               output ``relu_aux``, input ``bias``
GELU_AUX                  ``gelu(d)``                        output ``gelu_aux``: ``d`` itself
GELU_AUX_BIAS             ``gelu(d + bias)``                 output ``gelu_aux``: ``d + bias``
DRELU                     ``d * (z > 0)``                    input ``relu_aux`` (of z, from RELU_AUX*)
DRELU_BGRAD               same as DRELU                      + output ``drelu_bgrad`` = result summed over M
DGELU                     ``d * gelu'(z)``                   input ``gelu_aux`` (z, from GELU_AUX*)
DGELU_BGRAD               same as DGELU                      + output ``dgelu_bgrad`` = result summed over M
BGRADA                    ``d``                              output ``bgrada`` = ``a`` summed over K, (..., M)
BGRADB                    ``d``                              output ``bgradb`` = ``b`` summed over K, (..., N)
========================  =================================  ======================================

Auxiliary formats (shape ``(..., M, N)`` results, batch dimensions leading):

- ``gelu_aux`` is a ``(..., M, N)`` array of the result dtype holding the pre-activation. When N is
  not a multiple of 8 it is a view into a ``(..., M, round_up(N, 8))`` buffer (cuBLASLt's leading
  dimension must be a multiple of 8); hand that view back as it is to DGELU.
- ``relu_aux`` is the raw cuBLASLt bitmask as a ``uint8`` array of shape
  ``(..., M, round_up(N, 128) // 8)``: bit ``n % 8`` (least significant first) of byte
  ``[..., m, n // 8]`` is 1 where the pre-activation ``[..., m, n]`` was positive.
  :func:`relu_mask` unpacks it to booleans; DRELU consumes it unchanged.

An MLP layer ``y = act(x @ W + b)`` followed by ``out = y @ W2`` composes as: forward
``matmul(x, W, epilog=GELU_AUX_BIAS, epilog_inputs={"bias": b})`` returns ``(y, {"gelu_aux": z})``;
backward, given ``dout``, ``matmul(dout, W2.T, epilog=DGELU_BGRAD, epilog_inputs={"gelu_aux": z})``
returns ``(dz, {"dgelu_bgrad": db})``, then ``dW = matmul(x.T, dz)`` and ``dx = matmul(dz, W.T)``.
``matmul(x.T, dz, epilog=BGRADB)`` returns ``dW`` and ``{"bgradb": dz.sum(0)}`` in one call.

With an extent of 0 (M, N, K or the batch) every output keeps its shape and meaning: with K = 0,
``d`` is ``beta * c`` (zeros without ``c``) and the table applies to it; a bias gradient over an
empty axis is 0 (see :class:`Matmul`, Notes).
"""

from __future__ import annotations

import enum
import numbers
from dataclasses import dataclass
from typing import Any, Literal, Union

import numpy as np

from .._bindings import cublaslt as lt
from .._core.errors import OperandError, OptionsError, UnsupportedOperandError
from .._core.options import check_positive_int
from .._core.tensor import Operand, host_array, wrap_operand
from ..typing import ArrayLike

__all__ = [
    "MatmulEpilog",
    "EpilogLike",
    "EpilogWithOutputs",
    "EpilogWithoutOutputs",
    "EpilogSpec",
    "EPILOGS",
    "GELU_AUX_NAME",
    "RELU_AUX_NAME",
    "epilog_spec",
    "gelu",
    "gelu_derivative",
    "relu_mask",
    "pack_relu_mask",
    "relu_aux_width",
    "gelu_aux_ld",
    "reference_epilog",
]

# The auxiliary arrays' names: the keys of the outputs dict an *_AUX epilog returns and of the
# epilog_inputs a DRELU / DGELU epilog takes.
RELU_AUX_NAME = "relu_aux"
GELU_AUX_NAME = "gelu_aux"


class MatmulEpilog(enum.IntEnum):
    """Operations fused after the product (RELU, GELU, BIAS, ..., BGRADB).

    What each computes, consumes and returns is in the table of :mod:`nvmathx.linalg`; the values
    are cuBLASLt's ``cublasLtEpilogue_t`` codes of the same name. ``epilog=`` also accepts the name as
    a string, in any case, or the code as a plain integer; a member of any other enum is refused with
    an OptionsError naming ``epilog``, whatever its value.

    Each member also names the auxiliary array it returns (:attr:`aux_output`, ``"relu_aux"`` or
    ``"gelu_aux"``) and the one it consumes (:attr:`aux_input`), or None.
    """

    # Written out so that IDEs and type checkers see the members; the codes come from the bindings'
    # table, and a test checks that the names are that table's (DEFAULT aside).
    RELU = lt.Epilogue.RELU.value
    RELU_AUX = lt.Epilogue.RELU_AUX.value
    BIAS = lt.Epilogue.BIAS.value
    RELU_BIAS = lt.Epilogue.RELU_BIAS.value
    RELU_AUX_BIAS = lt.Epilogue.RELU_AUX_BIAS.value
    DRELU = lt.Epilogue.DRELU.value
    DRELU_BGRAD = lt.Epilogue.DRELU_BGRAD.value
    GELU = lt.Epilogue.GELU.value
    GELU_AUX = lt.Epilogue.GELU_AUX.value
    GELU_BIAS = lt.Epilogue.GELU_BIAS.value
    GELU_AUX_BIAS = lt.Epilogue.GELU_AUX_BIAS.value
    DGELU = lt.Epilogue.DGELU.value
    DGELU_BGRAD = lt.Epilogue.DGELU_BGRAD.value
    BGRADA = lt.Epilogue.BGRADA.value
    BGRADB = lt.Epilogue.BGRADB.value

    @property
    def aux_output(self) -> str | None:
        """The auxiliary output's key in the returned dict: ``"relu_aux"``, ``"gelu_aux"`` or None."""
        return EPILOGS[self].aux_output

    @property
    def aux_input(self) -> str | None:
        """The auxiliary input's key in ``epilog_inputs``: ``"relu_aux"``, ``"gelu_aux"`` or None."""
        return EPILOGS[self].aux_input


EpilogLike = Union[MatmulEpilog, str, int, None]
"""An ``epilog=`` argument: a member, its name in any case, or its cuBLASLt code."""

# The epilogs by whether they return auxiliary outputs (a result ``(array, dict)``), as literal
# types for the function forms' overloads: each member and its name as documented (upper case; a
# name in another case types as EpilogLike). A test holds them equal to EPILOGS.
EpilogWithOutputs = Union[
    Literal[MatmulEpilog.RELU_AUX, MatmulEpilog.RELU_AUX_BIAS, MatmulEpilog.GELU_AUX, MatmulEpilog.GELU_AUX_BIAS,
            MatmulEpilog.DRELU_BGRAD, MatmulEpilog.DGELU_BGRAD, MatmulEpilog.BGRADA, MatmulEpilog.BGRADB],
    Literal["RELU_AUX", "RELU_AUX_BIAS", "GELU_AUX", "GELU_AUX_BIAS", "DRELU_BGRAD", "DGELU_BGRAD", "BGRADA", "BGRADB"],
]
"""An ``epilog=`` whose result is ``(array, dict of auxiliary outputs)``."""

EpilogWithoutOutputs = Union[
    Literal[MatmulEpilog.RELU, MatmulEpilog.BIAS, MatmulEpilog.RELU_BIAS, MatmulEpilog.DRELU, MatmulEpilog.GELU,
            MatmulEpilog.GELU_BIAS, MatmulEpilog.DGELU],
    Literal["RELU", "BIAS", "RELU_BIAS", "DRELU", "GELU", "GELU_BIAS", "DGELU"],
    None,
]
"""An ``epilog=`` (or none) whose result is the array alone."""


@dataclass(frozen=True)
class EpilogSpec:
    """What an epilog needs and produces, and its cuBLASLt code in the swapped (column-major) frame."""

    epilog: MatmulEpilog
    lt_code: int
    activation: str | None = None  # "relu" or "gelu" applied to the result (forward)
    bias: bool = False  # consumes epilog_inputs["bias"]
    aux_output: str | None = None  # RELU_AUX_NAME or GELU_AUX_NAME
    aux_input: str | None = None  # RELU_AUX_NAME or GELU_AUX_NAME (backward)
    bgrad: str | None = None  # name of the bias-gradient output
    bgrad_of: str | None = None  # "result", "a" or "b"

    @property
    def name(self) -> str:
        return self.epilog.name

    @property
    def outputs(self) -> tuple:
        return tuple(name for name in (self.aux_output, self.bgrad) if name)


_E = MatmulEpilog
# Under D^T = B^T A^T, cuBLASLt's A is the user's b: "bias gradient of A" (BGRADA, 256) sums the
# user's b and "of B" (BGRADB, 512) sums the user's a. Everything else keeps its code.
EPILOGS = {
    spec.epilog: spec
    for spec in (
        EpilogSpec(_E.RELU, 2, activation="relu"),
        EpilogSpec(_E.GELU, 32, activation="gelu"),
        EpilogSpec(_E.BIAS, 4, bias=True),
        EpilogSpec(_E.RELU_BIAS, 6, activation="relu", bias=True),
        EpilogSpec(_E.GELU_BIAS, 36, activation="gelu", bias=True),
        EpilogSpec(_E.RELU_AUX, 130, activation="relu", aux_output=RELU_AUX_NAME),
        EpilogSpec(_E.RELU_AUX_BIAS, 134, activation="relu", bias=True, aux_output=RELU_AUX_NAME),
        EpilogSpec(_E.GELU_AUX, 160, activation="gelu", aux_output=GELU_AUX_NAME),
        EpilogSpec(_E.GELU_AUX_BIAS, 164, activation="gelu", bias=True, aux_output=GELU_AUX_NAME),
        EpilogSpec(_E.DRELU, 136, aux_input=RELU_AUX_NAME),
        EpilogSpec(_E.DRELU_BGRAD, 152, aux_input=RELU_AUX_NAME, bgrad="drelu_bgrad", bgrad_of="result"),
        EpilogSpec(_E.DGELU, 192, aux_input=GELU_AUX_NAME),
        EpilogSpec(_E.DGELU_BGRAD, 208, aux_input=GELU_AUX_NAME, bgrad="dgelu_bgrad", bgrad_of="result"),
        EpilogSpec(_E.BGRADA, 512, bgrad="bgrada", bgrad_of="a"),
        EpilogSpec(_E.BGRADB, 256, bgrad="bgradb", bgrad_of="b"),
    )
}

# The same epilog without its bias, for a bias folded into C.
WITHOUT_BIAS = {
    _E.BIAS: None, _E.RELU_BIAS: _E.RELU, _E.GELU_BIAS: _E.GELU,
    _E.RELU_AUX_BIAS: _E.RELU_AUX, _E.GELU_AUX_BIAS: _E.GELU_AUX,
}


def epilog_spec(epilog) -> EpilogSpec | None:
    """The spec of ``epilog``: a MatmulEpilog, its name in any case, its cuBLASLt code as a plain
    integer (Python or numpy), or None. Members of other enums are refused, even where their
    values are codes: an ``IntEnum`` of another library means something else."""
    if epilog is None or isinstance(epilog, MatmulEpilog):
        return EPILOGS[epilog] if epilog is not None else None
    if isinstance(epilog, enum.Enum):
        raise OptionsError("epilog", f"expected a MatmulEpilog, its name or None (got {type(epilog).__name__}."
                           f"{epilog.name}, a member of another enum)")
    if isinstance(epilog, str):
        try:
            return EPILOGS[MatmulEpilog[epilog.upper()]]
        except KeyError:
            raise OptionsError(
                "epilog", f"unknown epilog {epilog!r}; valid: {[e.name for e in MatmulEpilog]}"
            ) from None
    if isinstance(epilog, numbers.Integral) and not isinstance(epilog, (bool, np.bool_)):
        try:
            return EPILOGS[MatmulEpilog(int(epilog))]
        except ValueError:
            raise OptionsError(
                "epilog", f"unknown epilog code {epilog}; valid: {[e.name for e in MatmulEpilog]}"
            ) from None
    raise OptionsError("epilog", f"expected a MatmulEpilog, its name or None (got {type(epilog).__name__})")


_SQRT_2_OVER_PI = np.sqrt(2.0 / np.pi)
_GELU_CUBIC = 0.044715


def gelu(x):
    """GELU, tanh approximation: ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``."""
    return 0.5 * x * (1.0 + np.tanh(_SQRT_2_OVER_PI * (x + _GELU_CUBIC * x**3)))


def gelu_derivative(x):
    """d gelu(x) / dx for the tanh approximation."""
    t = np.tanh(_SQRT_2_OVER_PI * (x + _GELU_CUBIC * x**3))
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * _SQRT_2_OVER_PI * (1.0 + 3.0 * _GELU_CUBIC * x * x)


def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def relu_aux_width(n: int) -> int:
    """Bytes per row of the ReLU bitmask: N bits rounded up to a multiple of 128 bits."""
    return _round_up(n, 128) // 8


def gelu_aux_ld(n: int) -> int:
    """Leading dimension, in elements, of the GELU auxiliary buffer (a multiple of 8)."""
    return _round_up(n, 8)


def pack_relu_mask(positive) -> np.ndarray:
    """Pack a boolean ``(..., M, N)`` array into the ``relu_aux`` bitmask format."""
    positive = np.asarray(positive, dtype=bool)
    n = positive.shape[-1]
    padded = np.zeros(positive.shape[:-1] + (_round_up(n, 128),), dtype=bool)
    padded[..., :n] = positive
    return np.packbits(padded, axis=-1, bitorder="little")


def relu_mask(relu_aux: ArrayLike, n: int) -> np.ndarray:
    """Unpack a ``relu_aux`` bitmask (host array) to a boolean ``(..., M, n)`` array.

    Parameters
    ----------
    relu_aux : array_like
        The ``uint8`` bitmask a RELU_AUX or RELU_AUX_BIAS epilog returned, of shape
        ``(..., M, round_up(N, 128) // 8)``, in host memory (a numpy array or a torch CPU
        tensor): copy a GPU one to the host first.
    n : int
        The result's N: how many of the mask's bits per row to unpack, 0 to ``8 *
        relu_aux.shape[-1]``.

    Returns
    -------
    numpy.ndarray
        ``bool``, of shape ``(..., M, n)``: True where the pre-activation was positive.

    Raises
    ------
    UnsupportedOperandError
        When ``relu_aux`` is not an array or not of dtype ``uint8``.
    OperandError
        When ``relu_aux`` has no dimension or lives on a GPU.
    OptionsError
        When ``n`` is not an int (bools are refused), negative, or more bits than a row holds.

    Examples
    --------
    >>> import numpy as np
    >>> from nvmathx.linalg import matmul, relu_mask
    >>> a = np.array([[1.0, -1.0], [-2.0, 3.0]])
    >>> d, aux = matmul(a, np.eye(2), epilog="RELU_AUX")
    >>> relu_mask(aux["relu_aux"], 2)
    array([[ True, False],
           [False,  True]])
    """
    operand = _bitmask(relu_aux)
    mask = host_array(operand)  # (a view of operand's memory: operand stays alive while it is read)
    bits = 8 * mask.shape[-1]
    count = check_positive_int(n, "n", allow_zero=True)  # (N = 0: a mask of no bits)
    if count > bits:
        raise OptionsError("n", f"asks for {count} bits per row, but {RELU_AUX_NAME} holds {bits} (shape {mask.shape})")
    return np.unpackbits(mask, axis=-1, count=count, bitorder="little").astype(bool)


def _bitmask(relu_aux) -> Operand:
    """The Operand of ``relu_aux``, checked to be a host ``uint8`` array of at least one dimension."""
    operand = wrap_operand(relu_aux, RELU_AUX_NAME)
    if operand.device_id >= 0:
        raise OperandError(RELU_AUX_NAME, f"lives on GPU {operand.device_id}; relu_mask unpacks host arrays "
                                       "(copy it to the host first)")
    if operand.dtype != np.uint8:
        raise UnsupportedOperandError(RELU_AUX_NAME, f"expected the uint8 bitmask of a RELU_AUX epilog "
                                                  f"(got dtype {operand.dtype})")
    if operand.ndim == 0:
        raise OperandError(RELU_AUX_NAME, "expected an array of at least one dimension (got a 0-d array)")
    return operand


def reference_epilog(spec: EpilogSpec | None, d, *, bias=None, aux_input=None, a=None, b=None, n=None):
    """Apply ``spec`` to ``d`` (the product ``alpha a@b + beta c`` in the compute dtype).

    Returns ``(result, outputs)`` with ``outputs`` a dict (empty without auxiliary outputs); ``a``
    and ``b`` (compute dtype, ``(..., M, K)`` and ``(..., K, N)``) serve BGRADA/BGRADB.
    """
    outputs: dict[str, Any] = {}
    if spec is None:
        return d, outputs
    if spec.bias:
        d = d + bias
    if spec.aux_output == GELU_AUX_NAME:
        outputs[GELU_AUX_NAME] = d
    elif spec.aux_output == RELU_AUX_NAME:
        outputs[RELU_AUX_NAME] = pack_relu_mask(d > 0)
    if spec.activation == "relu":
        d = np.maximum(d, 0)
    elif spec.activation == "gelu":
        d = gelu(d)
    if spec.aux_input == RELU_AUX_NAME:
        d = d * relu_mask(aux_input, d.shape[-1])
    elif spec.aux_input == GELU_AUX_NAME:
        d = d * gelu_derivative(aux_input)
    bgrad = spec.bgrad or ""  # set exactly when bgrad_of is
    if spec.bgrad_of == "result":
        outputs[bgrad] = d.sum(axis=-2)
    elif spec.bgrad_of == "a":
        outputs[bgrad] = np.broadcast_to(a.sum(axis=-1), d.shape[:-1]).copy()
    elif spec.bgrad_of == "b":
        outputs[bgrad] = np.broadcast_to(b.sum(axis=-2), d.shape[:-2] + d.shape[-1:]).copy()
    return d, outputs
