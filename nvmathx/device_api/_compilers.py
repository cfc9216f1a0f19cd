"""Each kernel gets the typing and lowering of the Numba compiler that compiles it.

One registration module per compiler (``_numba_cuda_mlir``, ``_numba_cuda``), imported only when
that compiler types a kernel. numba-cuda and numba-cuda-mlir keep separate ``typeof`` registries:
the descriptor classes (:func:`descriptor`) are registered with the registry of each compiler
imported (:func:`register_imported`, at the construction of every descriptor), so each compiler
types a descriptor through its own registration, with both compilers in one process.

An installed nvmathx also declares :func:`register_imported` as both compilers' extension entry
point (``numba_cuda_extensions`` and ``numba_cuda_mlir_extensions``, in pyproject.toml), which each
runs before it compiles its first kernel. Without it (a source checkout), a compiler imported after
a descriptor was built has no registration yet and reads the ``_numba_type_`` attribute that both
compilers' generic ``typeof`` fall back to (:func:`unregistered_type`): the compiler asking is then
the one imported but not yet registered. Only when both were imported after the descriptor was
built, before either compiled a kernel, is the default compiler's type given; build descriptors
after importing the compiler to avoid it.
"""

from __future__ import annotations

import functools
import importlib
import sys
from typing import Any

from .._codegen.compilers import NUMBA_CUDA, NUMBA_CUDA_MLIR, default_compiler

__all__ = ["registration", "descriptor", "register_imported", "unregistered_type"]

_REGISTRATIONS = {NUMBA_CUDA_MLIR: "_numba_cuda_mlir", NUMBA_CUDA: "_numba_cuda"}
# Each compiler's typeof registry (a functools.singledispatch function ``typeof_impl``), by module.
TYPEOF_MODULES = {NUMBA_CUDA_MLIR: "numba_cuda_mlir.numba_cuda.typing.typeof", NUMBA_CUDA: "numba.cuda.typing.typeof"}

_descriptors: list[type] = []
_registered: set[str] = set()  # the compilers whose typeof registry holds every descriptor class


def registration(compiler: str):
    """The typing and lowering module of ``compiler`` (importing it imports the compiler)."""
    return importlib.import_module(f"{__package__}.{_REGISTRATIONS[compiler]}")


def descriptor(cls: type) -> type:
    """Class decorator: ``cls`` is a descriptor that kernels use, typed by each compiler's registry."""
    _descriptors.append(cls)
    for compiler in _registered:
        _typeof_registry(compiler).register(cls)(functools.partial(_type_for, compiler))
    return cls


def register_imported() -> list[str]:
    """Register the descriptor classes with the typeof registry of each compiler imported since the
    last call (importing nothing); returns the compilers registered now."""
    new = [compiler for compiler, module in TYPEOF_MODULES.items()
           if compiler not in _registered and module in sys.modules]
    for compiler in new:
        registry = _typeof_registry(compiler)
        for cls in _descriptors:
            registry.register(cls)(functools.partial(_type_for, compiler))
        _registered.add(compiler)
    return new


def unregistered_type(host: Any) -> Any:
    """The type of ``host`` for a compiler whose typeof registry does not know its class yet (the
    ``_numba_type_`` fallback of both compilers' generic typeof): the one compiler imported and not
    registered until now, else the default compiler. Registers the class with every imported
    compiler, so the fallback is not asked again."""
    new = register_imported()
    return _type_for(new[0] if len(new) == 1 else default_compiler(), host)


def _typeof_registry(compiler: str):
    return sys.modules[TYPEOF_MODULES[compiler]].typeof_impl


def _type_for(compiler: str, host: Any, context: Any = None) -> Any:
    """``compiler``'s type of the descriptor ``host`` (a typeof implementation: ``context`` unused)."""
    prefetch = getattr(host, "_prefetch", None)
    if prefetch is not None:  # a kernel uses it: its code may start generating now, beside the others'
        prefetch()
    return registration(compiler).numba_type(host)
