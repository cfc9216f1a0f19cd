"""Pointer alignment, as plans are chosen for it: the largest power of two, up to 256 bytes, that
divides an address (a null pointer counts as 256).

cuBLASLt's heuristic picks algorithms for the alignment of each pointer, so plan keys hold it.
:data:`ALIGNMENT_OF_LOW_BYTE` answers from the address's low byte with one subscript, for the
per-call paths (``ALIGNMENT_OF_LOW_BYTE[ptr & 255]``); :func:`pointer_alignment` is the same rule
as a function.
"""

from __future__ import annotations

__all__ = ["ALIGNMENT_LIMIT", "ALIGNMENT_OF_LOW_BYTE", "pointer_alignment"]

ALIGNMENT_LIMIT = 256

ALIGNMENT_OF_LOW_BYTE: tuple[int, ...] = (ALIGNMENT_LIMIT,) + tuple(low & -low for low in range(1, ALIGNMENT_LIMIT))
"""The alignment of an address whose low byte is the index: a low byte of 0 means at least 256."""


def pointer_alignment(ptr: int) -> int:
    """The largest power of two, at most 256, that divides ``ptr`` (256 for a null pointer)."""
    return ALIGNMENT_OF_LOW_BYTE[ptr & 255]
