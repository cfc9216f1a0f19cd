"""The errors of cuFFT callbacks: raised where callbacks are compiled and where plans link them.

A module of their own, so that the compilers (:mod:`.callback_codegen`,
:mod:`.callback_codegen_mlir`) and the callbacks' front
(:mod:`.callbacks`, which imports the compiler when a callback is compiled) share them without
importing each other.
"""

from __future__ import annotations

from .._core.errors import NvmathxError

__all__ = ["CallbackCompileError", "CallbacksUnavailableError", "plain_message"]


class CallbackCompileError(NvmathxError, TypeError):
    """A callback function does not compile for the signature cuFFT calls it with (the message
    starts with the argument's name and carries numba's own message)."""

    def __init__(self, argument: str, message: str) -> None:
        self.argument = argument
        super().__init__(f"{argument}: {message}")


class CallbacksUnavailableError(NvmathxError, RuntimeError):
    """The installed cuFFT or nvJitLink cannot link LTO callbacks (the message names the versions
    found and what is needed)."""



def plain_message(message: str) -> str:
    """A compiler's message without its terminal colour codes."""
    import re

    return re.sub(r"\x1b\[[0-9;]*m", "", message).strip()
