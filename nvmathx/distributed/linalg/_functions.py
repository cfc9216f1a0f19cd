"""The function form: ``matmul`` of distributed matrices, with cuBLASMp plans cached by the
distributed context (freed at ``finalize()``)."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from ..._matmulcore.epilogs import EpilogLike
from ...typing import AnyArray, ArrayLike, OptionsLike, StreamLike
from .._context import current
from .._distributions import MatrixDistribution
from ._cpu import GatherRunner
from ._local import empty_piece, linalg_options, local_arguments
from ._matmul import CachedMatmul, describe_call
from ._problem import describe_epilog, resolve, resolve_epilog

__all__ = ["matmul", "PLAN_CACHE_SIZE"]

PLAN_CACHE_SIZE = 16  # cuBLASMp plans kept per process (least recently used dropped)


def matmul(a: ArrayLike, b: ArrayLike, c: ArrayLike | None = None, *, alpha: complex = 1, beta: complex = 0,
           distributions: tuple[MatrixDistribution, MatrixDistribution, MatrixDistribution] | None = None,
           epilog: EpilogLike = None, epilog_inputs: dict[str, Any] | None = None, options: OptionsLike = None,
           stream: StreamLike = None) -> AnyArray:
    """The distributed product ``alpha * a @ b + beta * c``, then an epilog (collective).

    The function form of :class:`Matmul` (construction, ``plan()`` and ``execute()`` in one call):
    every rank passes its own pieces, the ranks agree on the arguments, and every rank gets its piece
    of the whole result. cuBLASMp plans are cached by the distributed context, keyed by every
    rank's local shapes, dtype, distributions, options and epilog, so a repeated call costs the
    agreement (one all-gather of a small description) and the product.

    Parameters
    ----------
    a, b, c, alpha, beta, distributions, options, stream
        As for :class:`Matmul`.
    epilog, epilog_inputs
        As for :meth:`Matmul.plan`.

    Returns
    -------
    array
        This rank's piece of the result (a replicated result whole), the operands' kind of array.

    Raises
    ------
    OperandError, UnsupportedOperandError, UnsupportedLayoutError, OptionsError
        On every rank, naming the argument, when any rank's arguments are invalid or disagree.

    Notes
    -----
    World size 1 runs :func:`nvmathx.linalg.matmul` unless ``options.force_distributed``. The
    tensor-parallel layers map onto ``distributions`` as:

    - column parallel: ``(Replicated(), Slab.Y, Slab.Y)`` (no communication), or with row slabs of
      the activations ``(Slab.X, Slab.Y, Slab.Y)`` (cuBLASMp gathers them);
    - row parallel: ``(Slab.Y, Slab.X, Replicated())`` or ``(Slab.Y, Slab.X, Slab.X)`` (the split K is
      reduced, onto every rank or scattered in row slabs);
    - data parallel: ``(Slab.X, Replicated(), Slab.X)`` (no communication);
    - 2-D: ``BlockCyclic`` for all three, with equal block sizes along each shared axis.

    Examples
    --------
    Under ``torchrun`` with gloo (CPU) or with ``initialize(device_id=...)`` (GPU)::

        from nvmathx.distributed import Replicated, Slab
        from nvmathx.distributed.linalg import local_shape, matmul

        w = weights[:, local columns]            # shape local_shape((K, N), Slab.Y)
        y = matmul(x, w, distributions=(Replicated(), Slab.Y, Slab.Y), epilog="GELU_BIAS",
                   epilog_inputs={"bias": bias})  # this rank's columns of gelu(x @ W + bias)
    """
    context = current("matmul")
    holder: dict[str, Any] = {}

    def local():  # every check, so that a rank that fails still takes part in the agreement
        description = describe_call(holder, context, a, b, c, distributions, alpha, beta, options, stream)
        epilog_description, bias = describe_epilog(epilog, epilog_inputs, holder["operands"]["a"], description.dtype)
        holder["bias"] = bias
        return description, epilog_description

    outcomes = context.agree(local)
    descriptions = [outcome[0] for outcome in outcomes]
    checked = holder["options"]
    problem = resolve(descriptions, context.rank, forced=checked.force_distributed)
    name = resolve_epilog([outcome[1] for outcome in outcomes], problem)
    operands, bias = holder["operands"], holder["bias"]
    if problem.strategy == "local":
        return _local_product(problem, operands, bias, name, alpha, beta, checked, stream)
    if operands["a"].device_id < 0:
        return GatherRunner(problem, context.group, operands, bias, name, alpha, beta).execute(stream)
    cache = context.caches.setdefault("matmul", OrderedDict())
    key = (tuple((d.a_shape, d.b_shape, d.c_shape, d.dtype, d.space, d.distributions, d.options) for d in descriptions),
           tuple(outcome[1] for outcome in outcomes), checked.memory_resource is None)
    plan = cache.get(key)
    if plan is None:
        plan = CachedMatmul(context, holder, descriptions, alpha, beta, name, bias, stream)
        cache[key] = plan
        if len(cache) > PLAN_CACHE_SIZE:  # every rank makes the same calls, so evicts the same plan
            cache.popitem(last=False)[1].free()
    else:
        cache.move_to_end(key)
    return plan.run(operands, bias, alpha, beta, stream)


def _local_product(problem, operands, bias, epilog, alpha, beta, options, stream):
    """Each rank's own product, by nvmathx.linalg.matmul (whose plan cache serves repeated calls)."""
    from ...linalg import matmul as local_matmul

    if 0 in problem.result_shape:
        return empty_piece(problem, operands["a"], stream)
    objects = [None if operands[name] is None else operands[name].obj for name in "abc"]
    a, b, c, inputs = local_arguments(problem, *objects, None if bias is None else bias.obj)
    space = "cpu" if operands["a"].device_id < 0 else "cuda"
    return local_matmul(a, b, c, alpha=alpha, beta=beta, epilog=epilog, epilog_inputs=inputs,
                        options=linalg_options(problem, options, space), stream=stream)
