"""FFTs on cuFFT (placeholder while the package is assembled)."""

__all__ = []
