"""The layers' GEMMs on CUDA tensors: :func:`nvmathx.linalg.matmul`'s cached plans, found and run
with fewer host steps than a ``matmul()`` call takes.

A training step makes the same six GEMMs every time, on fresh tensors of the same layouts.
``matmul()`` makes each call's plan key from every operand (library, shape, strides, dtype, lazy
flags, alignment; the epilog inputs' and float8 scales' too) and then looks it up; here a call's
*layouts* (the same facts of a and b and the epilog inputs, read straight off the torch tensors)
map to the plan key made on their first call (:func:`~nvmathx.linalg.plan_key`), the plan is looked
up in :data:`~nvmathx.linalg.plan_cache` and run by address, exactly as ``matmul()`` runs a cache
hit, through linalg's declared interface for its cache entries (``nvmathx.linalg._cached``:
``by_address`` and ``CachedMatmul.run_by_address``, nothing else). A first call, and a call whose
plan the cache has dropped, is a ``matmul()`` call, which plans and caches it. Float8 scales are given as addresses (the
layers' scales are elements of their state's vectors), made into tensors only for planning.
CPU tensors (the CPU execution space) and any plan ``matmul()`` would not run by address go
through ``matmul()`` itself.
"""

from __future__ import annotations

from collections.abc import Callable

from .._core.alignment import ALIGNMENT_OF_LOW_BYTE
from .._core.plan_cache import HashedKey
from .._core.streams import StreamHolder, resolve_stream
from ..linalg import matmul, plan_key
from ..linalg._cached import by_address as cached_entry
from ._column_sums import current_stream_handle

__all__ = ["cached_entry", "current_stream", "gemm", "key_of"]

# layouts -> plan_key (hashed once); forgotten wholesale past the limit (token counts may vary from call to call)
_PLAN_KEYS: dict = {}
_PLAN_KEYS_LIMIT = 1024


def gemm(a, b, *, epilog=None, epilog_inputs: dict | None = None, scale_pointers: dict | None = None,
         scales: Callable[[], dict] | None = None, options=None, preferences=None, stream: StreamHolder | None = None):
    """``matmul(a, b, epilog=..., epilog_inputs=..., quantization_scales=scales(), options=...,
    preferences=...)`` on torch's current stream (or ``stream``).

    ``scale_pointers`` gives float8 scales by address (``{"scale:a": ptr, "scale:b": ptr}``);
    ``scales()`` makes them as tensors, for planning. ``options`` and ``preferences`` are keyed by
    identity: pass the layers' interned objects (or None), never one made per call.
    """
    device_id = a.get_device()
    if device_id < 0:
        return matmul(a, b, **_arguments(epilog, epilog_inputs, scales, options, preferences))
    a_ptr, b_ptr = a.data_ptr(), b.data_ptr()
    layouts: tuple = (a.shape, a.stride(), a.dtype, a.is_neg(), ALIGNMENT_OF_LOW_BYTE[a_ptr & 255],
                      b.shape, b.stride(), b.dtype, b.is_neg(), ALIGNMENT_OF_LOW_BYTE[b_ptr & 255],
                      epilog, id(options), id(preferences), scales is not None, device_id)
    pointers = dict(scale_pointers) if scale_pointers else {}
    if epilog_inputs:
        for name, tensor in epilog_inputs.items():
            ptr = pointers[name] = tensor.data_ptr()
            layouts += (name, tensor.shape, tensor.stride(), tensor.dtype, tensor.is_neg(),
                        ALIGNMENT_OF_LOW_BYTE[ptr & 255])
    key = _PLAN_KEYS.get(layouts)
    entry = cached_entry(device_id, key) if key is not None else None
    if entry is None:
        # new layouts, a plan the cache dropped, another caller's scalars on this plan, or operands
        # matmul() binds per call
        arguments = _arguments(epilog, epilog_inputs, scales, options, preferences)
        if key is None:
            if len(_PLAN_KEYS) >= _PLAN_KEYS_LIMIT:
                _PLAN_KEYS.clear()
            _PLAN_KEYS[layouts] = HashedKey(plan_key(a, b, **arguments))
        return matmul(a, b, **arguments, stream=stream.handle if stream is not None else None)
    return entry.run_by_address(stream if stream is not None else current_stream(device_id), a_ptr, b_ptr, pointers)


def current_stream(device_id: int) -> StreamHolder:
    """torch's current stream on device ``device_id``."""
    return resolve_stream(current_stream_handle(device_id), device_id)


def key_of(a, b, *, epilog=None, epilog_inputs: dict | None = None, preferences=None):
    """The plan key :func:`gemm` looks up for these operands (no float8 scales, default options)."""
    return HashedKey(plan_key(a, b, **_arguments(epilog, epilog_inputs, None, None, preferences)))


def _arguments(epilog, epilog_inputs, scales, options, preferences) -> dict:
    """The :func:`~nvmathx.linalg.matmul` (and ``plan_key``) keywords of a call."""
    return {"epilog": epilog, "epilog_inputs": epilog_inputs,
            "quantization_scales": scales() if scales is not None else None, "options": options,
            "preferences": preferences}
