"""The plans :func:`~nvmathx.linalg.matmul` keeps in :data:`plan_cache`, and the declared internal
interface through which other packages run them.

:class:`CachedMatmul` is a cache entry: a planned runner taken out of a :class:`Matmul`, the stream
choice of its operands' library, and the scalars it last wrote. ``matmul()`` runs a cache hit by
address, or binds a call's operands first where it must (lazy views, float8 scales given as
arrays). :mod:`nvmathx.torch`'s GEMMs, which know their operands' addresses without wrapping them,
use :func:`by_address` and :meth:`CachedMatmul.run_by_address` and nothing else of an entry.
"""

from __future__ import annotations

from .._core.plan_cache import PlanCache
from .._core.streams import StreamHolder, order_after
from .._matmulcore.scalars import check_scalars
from ._operands import copied, wrap_all
from ._problem import check_quantization_scales

__all__ = ["plan_cache", "CachedMatmul", "by_address"]

plan_cache = PlanCache("nvmathx.linalg", max_size=128, max_memory_bytes=1 << 30)
"""The per-device LRU cache of cuBLASLt plans used by :func:`matmul` (``info()``, ``clear()``,
``set_limits(max_size=, max_memory_bytes=)``), keyed by :func:`plan_key`."""

_DEFAULT_ALPHA, _DEFAULT_BETA = 1, 0  # the objects matmul() defaults alpha and beta to


class CachedMatmul:
    """A plan of :func:`matmul` kept in the cache: a Matmul's runner, the stream choice of its
    operands' library, and the alpha and beta it last wrote (checked then).

    ``alpha``, ``beta``, ``by_pointer``, ``rebind``, ``runner`` and ``streams`` are read by
    ``matmul()`` itself; other packages use :meth:`run_by_address` (after :func:`by_address`).
    """

    __slots__ = ("runner", "streams", "alpha", "beta", "complex", "has_c", "rebind", "by_pointer")

    def __init__(self, runner, streams, *, alpha, beta, has_c, rebind, by_pointer=False):
        self.runner = runner
        self.streams = streams  # follows the library's current stream
        self.alpha, self.beta = alpha, beta
        self.complex = runner.problem.a_dtype.startswith("complex")
        self.has_c = has_c
        # Float8 scales and lazy views (materialised into copies) are bound per call; epilog inputs
        # that are arrays as they are (by_pointer) are set by address, as a, b and c are.
        self.rebind = rebind
        self.by_pointer = by_pointer

    @property
    def workspace_bytes(self) -> int:
        return self.runner.workspace_bytes

    def set_scalars(self, alpha, beta) -> None:
        # The checked values are kept: numbers, which the next call's may be identical to; a 0-d
        # array becomes its value, so an array changed in place is read again on every call.
        self.alpha, self.beta = check_scalars(alpha, beta, complex_ok=self.complex, has_c=self.has_c)
        self.runner.set_scalars(self.alpha, self.beta)

    def run_bound(self, a, b, c, epilog_inputs, scales, stream):
        """Bind this call's operands (materialising lazy views), epilog inputs and scales, and run."""
        runner = self.runner
        a_op, b_op, c_op, inputs = wrap_all(a, b, c, epilog_inputs)
        runner.bind(a_op, b_op, c_op, inputs)
        if runner.scale_keys:  # every call states its scales: those it omits are 1.0
            runner.set_scales(check_quantization_scales(scales, runner.problem), complete=True)
        holder = self.streams(stream)
        given = (epilog_inputs or {}).items()
        views_copied = copied((a_op, a), (b_op, b), (c_op, c), *((inputs[name], value) for name, value in given))
        if views_copied:
            order_after(holder, self.streams())  # the copies were made on the library's current stream
        result = runner.run(holder)
        if not views_copied:
            # The caller's arrays are the caller's to keep: a cached plan holding the last call's
            # inputs would keep them (an MLP's activations, say) allocated until the next call.
            # Copies of lazy views stay until then: they may be read on another stream than the
            # one their library would reuse their memory on.
            runner.unbind()
        return result

    def run_by_address(self, stream: StreamHolder, a_ptr: int, b_ptr: int, input_pointers: dict):
        """Run on ``stream`` with ``a`` at ``a_ptr``, ``b`` at ``b_ptr`` (no ``c``) and the epilog
        inputs and float8 scales at ``input_pointers`` (``{"bias": ptr, "scale:a": ptr, ...}``),
        as a ``matmul()`` cache hit runs; only for an entry :func:`by_address` returned."""
        runner = self.runner
        if self.by_pointer:
            runner.set_input_pointers(input_pointers)
        return runner.run(stream, a_ptr, b_ptr, None)

    def free(self) -> None:
        self.runner.free()


def by_address(device_id: int, key) -> CachedMatmul | None:
    """The entry of :data:`plan_cache` for ``key`` on ``device_id`` when it runs by address as a
    ``matmul()`` call with the default scalars runs it (alpha 1 and beta 0 last set, no operand
    bound per call), else None (absent, or the caller must go through ``matmul()``)."""
    entry = plan_cache.get(device_id, key)
    if entry is None or entry.alpha is not _DEFAULT_ALPHA or entry.beta is not _DEFAULT_BETA or entry.rebind:
        return None
    return entry
