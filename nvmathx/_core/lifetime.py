"""What the stateful objects' ``__del__`` does: free, and never raise."""

from __future__ import annotations

__all__ = ["free_at_collection"]


def free_at_collection(resource, label: str) -> None:
    """Call ``resource.free()`` from its ``__del__``; a failure becomes a RuntimeWarning naming
    ``label``. At interpreter exit the modules a warning needs may already be torn down (their
    globals set to None): then the failure passes silently, as the process is ending anyway."""
    try:
        resource.free()
    except Exception as error:  # a destructor must not raise
        try:
            import warnings

            warnings.warn(f"{label}.free() failed during garbage collection: {error}", RuntimeWarning, stacklevel=3)
        except Exception:
            pass
