"""PyTorch layers whose forward and backward passes run on cuBLASLt GEMMs with fused epilogs.

:class:`FusedLinear` (``nn.Linear`` plus an optional ReLU or tanh-GELU) and :class:`FusedMLP`
(Linear, activation, Linear: the transformer feed-forward block) have ``nn.Linear``'s parameters,
initialisation and ``state_dict``. Their functional forms :func:`fused_linear` and
:func:`fused_mlp` are ``torch.library`` custom ops (namespace ``nvmathx``) with fake
implementations and registered autograd, so autograd, ``torch.autograd.gradcheck`` and
``torch.compile(fullgraph=True)`` see them as single ops.

Where the work goes (CUDA float16, bfloat16, float32):

- ``fused_mlp`` forward: ``h = act(x @ w1.T + b1)`` in one GEMM that also keeps the
  pre-activation (GELU) or a bitmask (ReLU), then ``out = h @ w2.T + b2`` in one GEMM.
- ``fused_mlp`` backward: ``dz = (grad @ w2) * act'(z)`` in one GEMM (DGELU / DRELU),
  ``dw2 = grad.T @ h`` with ``db2 = grad.sum(0)`` in one GEMM (BGRADA), ``dw1 = dz.T @ x`` with
  ``db1 = dz.sum(0)`` in one GEMM (BGRADA), and ``dx = dz @ w1``: four GEMMs (six with the
  forward's two) and no elementwise kernel. ``db1`` is taken in ``dw1``'s GEMM rather than with
  ``dz`` (cuBLASLt's DGELU_BGRAD / DRELU_BGRAD), which runs slower. Gradients of 2^24 elements
  or more take their bias gradient from one column-sum pass instead of BGRADA (faster on Hopper).
- ``fused_linear``: one GEMM forward, two backward (weight and bias gradient together), plus one
  elementwise kernel for the activation's derivative.

Transposed operands are cuBLASLt transpose flags, never copies; plans come from
:data:`nvmathx.linalg.plan_cache`; results come from torch's caching allocator on torch's current
stream. Autotuning (each new GEMM times cuBLASLt's candidates first and keeps the fastest) is
chosen per layer (``FusedLinear(..., autotune=True)``), per call (``fused_linear(...,
autotune=True)``) or, for those left at ``autotune=None``, process-wide with :func:`set_autotune`.
Measured times are in ``benchmarks/`` (the ``mlp`` and ``matmul`` suites).
``torch.autocast`` casts the operands as it does for ``nn.Linear``.

With ``fp8=Float8Recipe(...)`` (:class:`Float8Recipe`, :class:`Float8State`) the GEMMs run in
float8 on GPUs of compute capability 8.9 or newer: e4m3 activations and weights, e5m2 gradients,
per-tensor delayed or dynamic scaling, one fused cast / transpose / amax kernel per tensor.

CPU tensors, float64, and any problem cuBLASLt refuses run the same computation as torch ops
(logged once per reason at DEBUG on the ``nvmathx`` logger); a refusal is remembered per problem
signature. Importing this module imports torch; ``import nvmathx`` does not.

As ``nn.Linear``:

- **Gradients of gradients** (``create_graph=True`` and then differentiating the result: gradient
  penalties, Hessian-vector products, ``torch.autograd.gradgradcheck``) are those of torch's
  unfused layers, for every layer and activation. A backward pass with ``create_graph=True``
  differentiates the torch composition recomputed from the saved inputs, at unfused cost, instead
  of running the fused GEMMs, whose results carry no autograd history; the ordinary
  ``create_graph=False`` backward is unchanged. Under ``torch.compile`` with AOTAutograd (the
  default inductor backend, ``aot_eager``) torch itself refuses to differentiate a compiled
  backward pass (a ``RuntimeError``: "torch.compile with aot_autograd does not currently support
  double backward"); dynamo-only backends (``backend="eager"``) differentiate the layers as eager
  mode does.
- **Empty problems** (no tokens, ``in_features``, ``out_features`` or ``hidden`` of 0) give
  ``nn.Linear``'s outputs and gradients: with no input features the output is the activated bias,
  the weight gradient is empty and the bias gradient is the summed output gradient. They run as
  torch ops; cuBLASLt never sees an empty GEMM.
- **Meta tensors** (``device="meta"`` layers, meta inputs) give meta outputs and gradients of the
  right shapes, touching no data.
"""

from ._float8.recipe import Float8Recipe
from ._float8.state import Float8State
from ._functional import fused_linear, fused_mlp
from ._fused import set_autotune
from ._modules import FusedLinear, FusedMLP

__all__ = ["Float8Recipe", "Float8State", "FusedLinear", "FusedMLP", "fused_linear", "fused_mlp", "set_autotune"]
