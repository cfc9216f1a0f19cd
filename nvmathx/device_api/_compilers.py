"""Each kernel gets the typing and lowering of the Numba compiler that compiles it.

One registration module per compiler (``_numba_cuda_mlir``, ``_numba_cuda``), imported only when
that compiler types a kernel. A descriptor object reaches a compiler through the ``_numba_type_``
hook that both compilers' ``typeof`` read; the hook asks :func:`numba_type` with the calling frame,
so with both compilers imported in one process each kernel is typed by its own compiler's registry.
"""

from __future__ import annotations

import importlib
import sys
from types import FrameType
from typing import Any

from .._codegen.compilers import NUMBA_CUDA, NUMBA_CUDA_MLIR, compiler_of_module, default_compiler

_REGISTRATIONS = {NUMBA_CUDA_MLIR: "_numba_cuda_mlir", NUMBA_CUDA: "_numba_cuda"}


def registration(compiler: str):
    """The typing and lowering module of ``compiler`` (importing it imports the compiler)."""
    return importlib.import_module(f"{__package__}.{_REGISTRATIONS[compiler]}")


def numba_type(host: Any, caller: FrameType | None) -> Any:
    """The type of the descriptor ``host`` for the compiler that called the ``_numba_type_`` hook
    from frame ``caller`` (any other caller gets the default compiler's type)."""
    compiler = compiler_of_module(caller.f_globals.get("__name__", "")) if caller is not None else None
    if compiler is None:
        compiler = NUMBA_CUDA if "numba.cuda" in sys.modules else default_compiler()
    prefetch = getattr(host, "_prefetch", None)
    if prefetch is not None:  # a kernel uses it: its code may start generating now, beside the others'
        prefetch()
    return registration(compiler).numba_type(host)
