"""The status handling every library binding shares: a status code's C name, and the call that
raises the binding's typed error for a nonzero status.

Each binding makes its three functions with :func:`status_functions` from its status enum, the C
prefix of the names, its error class and its namespace (whose ``_lib`` function table is read at
each call, so that a test can swap it), and binds them as module functions (``status_name``,
``check``, ``_call``).
"""

from __future__ import annotations

import enum
from typing import Callable

from .._errors import CudaLibraryError

__all__ = ["status_functions"]


def status_functions(prefix: str, codes: type[enum.IntEnum], error: type[CudaLibraryError], namespace: dict,
                     *, unknown_prefix: str | None = None, library_name: str | None = None) -> tuple[Callable, ...]:
    """``(status_name, check, call)`` of one library.

    ``status_name(status)`` is ``prefix + member name`` for a known code; for another, the name the
    library gives through its ``library_name`` function (a ``const char*`` getter, e.g.
    ``cusparseGetErrorName``) where it has one, else ``(unknown_prefix or prefix) + the number``.
    ``check(status, function, detail="")`` raises ``error`` for a nonzero status;
    ``call(name, *args, detail="")`` calls ``name`` from ``namespace["_lib"]`` and checks what it
    returns.
    """
    fallback = prefix if unknown_prefix is None else unknown_prefix

    def status_name(status: int) -> str:
        try:
            return f"{prefix}{codes(status).name}"
        except ValueError:
            if library_name is not None:
                name = namespace["_lib"]()[library_name](int(status))
                if name:
                    return name.decode()
            return f"{fallback}{int(status)}"

    def check(status: int, function: str, detail: str = "") -> None:
        if status != 0:
            raise error(status, status_name(status), function, detail)

    def call(name: str, *args, detail: str = "") -> None:
        check(namespace["_lib"]()[name](*args), name, detail)

    status_name.__doc__ = f'The C name of a status (``"{prefix}{next(iter(codes)).name}"``).'
    check.__doc__ = f"Raise :class:`{error.__name__}` for a nonzero status."
    return status_name, check, call
