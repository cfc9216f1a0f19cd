"""The public surface of nvmathx.fft, pinned."""

import importlib
import pkgutil

import nvmathx.fft

EXPECTED = {
    "FFT", "FFTOptions",
    "fft", "ifft", "fft2", "ifft2", "fftn", "ifftn",
    "rfft", "irfft", "rfft2", "irfft2", "rfftn", "irfftn",
    "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn",
    "fftfreq", "rfftfreq", "fftshift", "ifftshift",
    "plan_cache", "plan_key", "backend",
    "compile_prolog", "compile_epilog", "CompiledCallback", "CallbackCompileError", "CallbacksUnavailableError",
}


def test_all_is_pinned():
    assert set(nvmathx.fft.__all__) == EXPECTED
    assert len(nvmathx.fft.__all__) == len(EXPECTED)


def test_every_name_resolves_and_is_documented():
    for name in nvmathx.fft.__all__:
        value = getattr(nvmathx.fft, name)
        if name == "plan_cache":
            continue  # an instance; its class is documented
        assert (getattr(value, "__doc__", None) or "").strip(), name


def test_module_is_a_scipy_backend():
    assert nvmathx.fft.__ua_domain__ == "numpy.scipy.fft"
    assert callable(nvmathx.fft.__ua_function__)


def test_private_modules_only():
    for info in pkgutil.iter_modules(nvmathx.fft.__path__):
        assert info.name.startswith("_"), info.name
        module = importlib.import_module(f"nvmathx.fft.{info.name}")
        assert hasattr(module, "__all__"), info.name


def test_import_loads_no_array_library():
    import subprocess
    import sys

    code = ("import sys, nvmathx.fft; bad = [m for m in sys.modules if m.split('.')[0] in "
            "('torch', 'cupy', 'jax', 'numba') or m.startswith('cuda.core')]; print(bad); assert not bad")
    subprocess.run([sys.executable, "-c", code], check=True)
