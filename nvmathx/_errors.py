"""The nvmathx exception hierarchy, below every other module: the C bindings (``_bindings``) raise
these errors and import nothing else of nvmathx; ``_core`` (and through it every area) imports them
as ``nvmathx._core.errors``.

Every error nvmathx raises on purpose derives from :class:`NvmathxError`. Errors about user input
also derive from the matching builtin (``ValueError``, ``TypeError``, ``RuntimeError``), so code
written against numpy/scipy semantics keeps catching what it caught before.
"""

from __future__ import annotations

__all__ = [
    "NvmathxError",
    "LibraryNotFoundError",
    "CudaLibraryError",
    "OperandError",
    "UnsupportedOperandError",
    "UnsupportedLayoutError",
    "OptionsError",
    "InvalidStateError",
    "DeviceUnavailableError",
    "SingularMatrixError",
    "CommunicationError",
]

import numpy.linalg as _numpy_linalg


class NvmathxError(Exception):
    """Base class of every error nvmathx raises on purpose.

    Every subclass pickles with its message and all its attributes (``argument``, ``remedy``,
    ``status``, ...), so errors cross process boundaries (multiprocessing, distributed ranks)
    intact, whatever the subclass's ``__init__`` takes.
    """

    def __reduce__(self):
        return (_rebuild, (type(self), self.args, dict(self.__dict__)))


class LibraryNotFoundError(NvmathxError, ImportError):
    """A CUDA library could not be loaded.

    Attributes
    ----------
    library : str
        The library's short name (``"cublasLt"``, ``"cufft"``, ``"mathdx"``).
    pip_package : str
        The pip package that provides it.
    env_var : str
        The environment variable that overrides its path.
    """

    def __init__(self, library: str, pip_package: str, env_var: str, detail: str = "") -> None:
        self.library = library
        self.pip_package = pip_package
        self.env_var = env_var
        self.detail = detail
        message = (
            f"could not load the CUDA library {library!r}: install it with "
            f"`pip install {pip_package}`, or set {env_var} to the path of the shared library"
        )
        if detail:
            message += f" ({detail})"
        super().__init__(message)


class CudaLibraryError(NvmathxError, RuntimeError):
    """A CUDA library call returned a nonzero status.

    Subclasses name the library. The error carries the numeric ``status``, its C name
    (``status_name``, e.g. ``"CUBLAS_STATUS_NOT_SUPPORTED"``), the function that failed and a hint.
    """

    library = "CUDA library"
    hint = ""

    def __init__(self, status: int, status_name: str, function: str = "", detail: str = "") -> None:
        self.status = int(status)
        self.status_name = status_name
        self.function = function
        self.detail = detail
        where = f" in {function}" if function else ""
        message = f"{status_name} ({self.status}){where}"
        if detail:
            message += f": {detail}"
        if self.hint:
            message += f". {self.hint}"
        super().__init__(message)


class OperandError(NvmathxError, ValueError):
    """An operand has the wrong shape, dtype, device or layout.

    Attributes
    ----------
    argument : str
        The name of the offending argument.
    """

    def __init__(self, argument: str, message: str) -> None:
        self.argument = argument
        super().__init__(f"{argument}: {message}")


class UnsupportedOperandError(NvmathxError, TypeError):
    """An object is not an array nvmathx can view (no DLPack, CUDA Array Interface or
    array interface), or its dtype is not supported."""

    def __init__(self, argument: str, message: str) -> None:
        self.argument = argument
        super().__init__(f"{argument}: {message}")


class UnsupportedLayoutError(OperandError):
    """An operand's memory layout cannot be used without a copy the caller did not allow.

    Attributes
    ----------
    argument : str
        The name of the offending argument.
    remedy : str
        What to do instead (for example, ``"pass a C-contiguous copy"``).
    """

    def __init__(self, argument: str, message: str, remedy: str = "") -> None:
        self.remedy = remedy
        super().__init__(argument, message + (f"; {remedy}" if remedy else ""))


class OptionsError(NvmathxError, ValueError):
    """An options object or keyword has an invalid value."""

    def __init__(self, argument: str, message: str) -> None:
        self.argument = argument
        super().__init__(f"{argument}: {message}")


class InvalidStateError(NvmathxError, RuntimeError):
    """A method was called in a state that does not allow it (for example, after ``free()``, or
    ``execute()`` before ``plan()``)."""


class DeviceUnavailableError(NvmathxError, RuntimeError):
    """CUDA execution was asked for where it cannot run: no CUDA driver, no GPU, or no GPU of that
    ordinal.

    Attributes
    ----------
    argument : str
        The argument that asked for the device (``"execution"``).
    """

    def __init__(self, argument: str, message: str) -> None:
        self.argument = argument
        super().__init__(f"{argument}: {message}")


class SingularMatrixError(NvmathxError, _numpy_linalg.LinAlgError):
    """A factorization met an exactly zero pivot: the system has no unique solution.

    The dense (:class:`nvmathx.linalg.DirectSolver`) and sparse solvers raise the same class, which
    is also a :class:`numpy.linalg.LinAlgError`, so code written against numpy/scipy keeps catching it.

    Attributes
    ----------
    batch_index : int or None
        The index (in the flattened batch) of the first system whose factorization failed, or
        ``None`` for an unbatched solve.
    pivot : int or None
        The (0-based) index of the first zero pivot, where the library reports it.
    """

    def __init__(self, message: str, batch_index: int | None = None, pivot: int | None = None) -> None:
        self.batch_index = batch_index
        self.pivot = pivot
        super().__init__(message)


class CommunicationError(NvmathxError, RuntimeError):
    """A collective among the ranks of a distributed run failed: a peer died, the connection was
    lost, or the collective did not finish within the timeout given to
    :func:`nvmathx.distributed.initialize`.

    Attributes
    ----------
    rank : int or None
        The rank that failed, where it is known.
    operation : str
        The collective that failed (``"all_to_all"``, ``"agreement"``, ...).
    """

    def __init__(self, message: str, rank: int | None = None, operation: str = "") -> None:
        self.rank = rank
        self.operation = operation
        super().__init__(message)


def _rebuild(cls, args, attributes):
    """An exception of ``cls`` with these ``args`` (its message) and attributes, made without
    calling ``cls.__init__``, whose signature differs from class to class. The builtin base's
    ``__init__`` runs, for what it keeps outside ``__dict__`` (ImportError's ``msg``)."""
    error = cls.__new__(cls, *args)
    builtin = next(base for base in cls.__mro__ if base.__module__ == "builtins")
    builtin.__init__(error, *args)
    error.__dict__.update(attributes)
    return error


# Tracebacks and reprs name the classes where users import them from (``nvmathx.OperandError``);
# pickles find them there too.
for _name in __all__:
    globals()[_name].__module__ = "nvmathx"
del _name
