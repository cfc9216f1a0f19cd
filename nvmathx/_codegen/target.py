"""The GPU architecture generated code targets: from ``sm=`` or the current device."""

from __future__ import annotations

from dataclasses import dataclass

from .._core.errors import OptionsError

__all__ = ["Target", "resolve_target", "max_shared_memory_per_block"]

# Shared memory a block may opt into, in bytes (CUDA programming guide, compute capabilities table).
_MAX_SHARED_MEMORY = {
    (7, 0): 98304, (7, 2): 98304, (7, 5): 65536,
    (8, 0): 166912, (8, 6): 101376, (8, 7): 166912, (8, 9): 101376,
    (9, 0): 232448, (10, 0): 232448, (10, 3): 232448, (11, 0): 232448,
    (12, 0): 101376, (12, 1): 101376,
}  # fmt: skip


@dataclass(frozen=True)
class Target:
    """A compute capability, and whether code is built for its arch-specific variant (sm_XXa).

    numba-cuda compiles kernels for the arch-specific target on compute capability 9.0 and
    later, so generated code does the same there.
    """

    major: int
    minor: int

    @property
    def sm(self) -> int:
        """The form libmathdx takes: 900 for 9.0."""
        return self.major * 100 + self.minor * 10

    @property
    def arch_specific(self) -> bool:
        return (self.major, self.minor) >= (9, 0)

    @property
    def name(self) -> str:
        return f"sm_{self.major}{self.minor}{'a' if self.arch_specific else ''}"


def resolve_target(value, argument: str = "sm", *, needed_by: str = "cuFFTDx and cuBLASDx") -> Target:
    """Normalise ``value`` (``None``, ``(9, 0)``, ``90``, ``900`` or ``"sm_90"``/``"sm_90a"``) to a Target.

    ``None`` means the current CUDA device. Errors name ``argument`` (the caller's parameter) and
    say that ``needed_by`` (what the code is generated for) needs compute capability 7.0.

    Raises
    ------
    OptionsError
        When ``value`` has an unknown form, is below 7.0 (the oldest architecture cuFFTDx,
        cuBLASDx and cuFFT's LTO callbacks support), or is ``None`` and no CUDA device can be
        queried.
    """
    if value is None:
        try:
            major, minor = _current_device_capability()
        except Exception as error:  # no driver, no device, or no cuda.core
            raise OptionsError(
                argument,
                f"no CUDA device could be queried ({type(error).__name__}: {error}); pass the target "
                f"architecture explicitly, e.g. {argument}=(9, 0)",
            ) from None
    elif isinstance(value, str):
        digits = value.lower().removeprefix("sm_").removeprefix("compute_").rstrip("af")
        if not digits.isdigit() or len(digits) < 2:
            raise OptionsError(argument, f"expected a form like 'sm_90' or (9, 0) (got {value!r})")
        major, minor = int(digits[:-1]), int(digits[-1])
    elif isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, int) for v in value):
        major, minor = value
    elif isinstance(value, int) and not isinstance(value, bool) and value > 0:
        major, minor = (value // 100, (value // 10) % 10) if value >= 100 else (value // 10, value % 10)
    else:
        raise OptionsError(argument, f"expected None, (major, minor), an int like 90, or 'sm_90' (got {value!r})")
    if (major, minor) < (7, 0):
        raise OptionsError(argument, f"{needed_by} need compute capability 7.0 or newer (got {major}.{minor})")
    return Target(major, minor)


def _current_device_capability() -> tuple[int, int]:
    from cuda.core import Device

    capability = Device().compute_capability
    return int(capability[0]), int(capability[1])


def max_shared_memory_per_block(target: Target) -> int:
    """The opt-in shared memory limit of one block on ``target`` (the closest known architecture)."""
    known = [cc for cc in _MAX_SHARED_MEMORY if cc <= (target.major, target.minor)]
    return _MAX_SHARED_MEMORY[max(known)] if known else 49152
