"""The transform table (``nvmathx.fft._transforms``) is the one source of the scipy.fft functions:
the public names, the backend's dispatch and the docstrings all come from its rows."""

import inspect

import numpy as np
import pytest
import scipy.fft

import nvmathx.fft as nfft
from nvmathx._fftcore.layout import C2C
from nvmathx.fft import _backend, _functions, _transforms

TABLE = list(_transforms.TRANSFORMS)


def test_every_row_is_public_served_and_documented():
    assert TABLE and TABLE == _transforms.__all__  # __all__ is written out for type checkers: the same names
    for name in TABLE:
        function = _transforms.TRANSFORMS[name]
        assert getattr(nfft, name) is function and name in nfft.__all__
        assert _backend._SERVED[name] is function
        assert function.__name__ == name and function.__doc__.startswith("Compute the")
        assert "Examples\n--------" in function.__doc__


def test_nothing_outside_the_table():
    """No scipy.fft transform is public or served except through a row (the helpers fftfreq,
    fftshift, ... are not transforms: they take no ``norm``)."""
    transforms = {name for name in nfft.__all__ if name in dir(scipy.fft)
                  and "norm" in inspect.signature(getattr(scipy.fft, name)).parameters}
    assert transforms == set(TABLE)
    assert set(_backend._SERVED) == set(TABLE)
    assert not [name for name in TABLE if hasattr(_functions, name)]  # no second definition


def test_every_function_is_an_ordinary_def():
    """IDEs, inspect and debuggers see each function's source: a def of this module, whose body is
    one call of the shared routine with the row's kind."""
    for name, function in _transforms.TRANSFORMS.items():
        assert function.__module__ == "nvmathx.fft._transforms" and function.__qualname__ == name
        assert function.__code__.co_filename == _transforms.__file__
        source = inspect.getsource(function)
        assert f"\ndef {name}(" in source and "return _transform(" in source


def test_each_function_calls_the_routine_with_its_kind(monkeypatch):
    """Every argument reaches the shared routine in its place, under the function's own kind
    (callbacks as None for the Hermitian transforms, which take none)."""
    seen = []
    monkeypatch.setattr(_transforms, "_transform", lambda *args: seen.append(args) or "done")
    for name, function in _transforms.TRANSFORMS.items():
        seen.clear()
        hermitian = name.startswith(("hfft", "ihfft"))
        callbacks = {} if hermitian else {"prolog": "p", "epilog": "e"}
        assert function(1, 2, 3, "ortho", True, 4, plan="plan", execution="cpu", stream=5, **callbacks) == "done"
        (kind, *arguments), = seen
        assert kind.name == name and kind.conj == hermitian
        assert arguments == [1, 2, 3, "ortho", True, 4, "plan", None if hermitian else "p",
                             None if hermitian else "e", "cpu", 5]


def test_the_row_decorator_checks_the_signature():
    kind = _functions.Kind("like_fft2", C2C, 2, -1)

    def like_fft2(x, s=None, axes=(-2, -1), norm=None, overwrite_x=False, workers=None, *, plan=None, prolog=None,
                  epilog=None, execution=None, stream=None): ...

    declared = _transforms._row(kind, summary="Compute it.", returns="It.", see_also="fft", example="")(like_fft2)
    try:
        assert declared is like_fft2 and declared.__doc__.startswith("Compute it.")
        assert "execution :" in declared.__doc__ and "stream :" in declared.__doc__
    finally:
        del _transforms.TRANSFORMS["like_fft2"]

    def like_fft2_without_stream(x, s=None, axes=(-2, -1), norm=None, overwrite_x=False, workers=None, *,
                                 plan=None, prolog=None, epilog=None, execution=None): ...

    like_fft2_without_stream.__name__ = "like_fft2"
    with pytest.raises(TypeError, match="scipy.fft's parameters"):
        _transforms._row(kind, summary="", returns="", see_also="", example="")(like_fft2_without_stream)
    with pytest.raises(TypeError, match="scipy.fft's parameters"):  # the kind says 2-D; the signature n-D
        _transforms._row(_functions.Kind("like_fft2", C2C, 3, -1), summary="", returns="", see_also="",
                         example="")(like_fft2)


def test_generated_functions_run_on_the_cpu():
    x = np.arange(8.0)
    np.testing.assert_allclose(nfft.irfft(nfft.rfft(x)), x)
    np.testing.assert_allclose(nfft.hfft(x[:5] + 0j), scipy.fft.hfft(x[:5] + 0j))


def test_the_body_holds_two_lookups_per_call():
    """The body reads the routine and its kind, two module globals, and nothing else."""
    for function in _transforms.TRANSFORMS.values():
        assert not function.__code__.co_freevars
        assert set(function.__code__.co_names) == {"_transform", f"_{function.__name__.upper()}"}
