"""The public surface of nvmathx.distributed is pinned: every listed name resolves and is documented,
and importing it starts nothing (no process group, no NCCL, no GPU library)."""

import subprocess
import sys

import pytest

import nvmathx.distributed as distributed

PUBLIC = {
    "distributed": {"initialize", "finalize", "is_initialized", "Slab", "Box", "Replicated", "BlockCyclic",
                    "local_box", "local_shape", "local_offset", "allocate", "reshape", "Reshape",
                    "LeakedResourceWarning", "fft", "linalg"},
    "distributed.fft": {"FFT", "FFTOptions", "fft", "ifft", "rfft", "irfft"},
    "distributed.linalg": {"Matmul", "MatmulOptions", "matmul", "local_shape"},
}


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_all_is_pinned_and_documented(name):
    module = distributed if name == "distributed" else getattr(distributed, name.split(".")[1])
    assert set(module.__all__) == PUBLIC[name]
    for public in module.__all__:
        assert (getattr(module, public).__doc__ or "").strip(), f"nvmathx.{name}.{public} has no docstring"


@pytest.mark.parametrize("cls, methods", [
    ("fft.FFT", ("plan", "execute", "reset_operand", "free")),
    ("linalg.Matmul", ("plan", "execute", "reset_operands", "free")),
    ("Reshape", ("plan", "execute", "reset_operand", "free")),
])
def test_methods_are_documented(cls, methods):
    target = distributed
    for part in cls.split("."):
        target = getattr(target, part)
    for method in methods:
        assert (getattr(target, method).__doc__ or "").strip(), f"{cls}.{method}"


def test_import_is_light():
    code = ("import sys, nvmathx.distributed, nvmathx.distributed.fft, nvmathx.distributed.linalg; "
            "print(sorted(m for m in ('torch', 'mpi4py', 'nccl', 'cupy', 'cuda.core') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_initialize_takes_a_timeout_of_at_most_300_seconds():
    import inspect

    parameters = inspect.signature(distributed.initialize).parameters
    assert list(parameters) == ["process_group", "device_id", "timeout"]
    assert parameters["timeout"].kind is inspect.Parameter.KEYWORD_ONLY and 0 < parameters["timeout"].default <= 300
    assert "CommunicationError" in distributed.initialize.__doc__
