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


def test_a_new_row_makes_a_function_that_runs_the_transform(monkeypatch):
    """define() turns a signature into a public function: the stub's signature, defaults and name,
    a body that calls the shared routine with the row's kind, and the stub's own body never run."""
    seen = []

    def stub(x, s=None, axes=(-2, -1), norm=None, overwrite_x=False, workers=None, *, plan=None, prolog=None,
             epilog=None):
        raise AssertionError("the stub's body is never the function's")

    stub.__name__ = stub.__qualname__ = "fft2_like"
    monkeypatch.setattr(_functions, "_transform", lambda *args: seen.append(args) or "done")
    function, kind = _functions.define(stub, C2C, -1)
    assert kind == ("fft2_like", C2C, 2, -1, False)
    assert inspect.signature(function) == inspect.signature(stub) and function.__name__ == "fft2_like"
    assert function is not stub and function(1, axes=(0, 1), epilog=7) == "done"
    # _transform was bound when the function was made: the patch above is what it holds.
    assert seen == [(kind, 1, None, (0, 1), None, False, None, None, None, 7)]


def test_define_reads_form_and_callbacks_from_the_signature():
    def one(x, n=None, axis=-1, norm=None, overwrite_x=False, workers=None, *, plan=None): ...

    def many(x, s=None, axes=None, norm=None, overwrite_x=False, workers=None, *, plan=None): ...

    assert _functions.define(one, C2C, 1)[1].form == 1
    assert _functions.define(many, C2C, 1, True)[1][2:] == (3, 1, True)
    with pytest.raises(TypeError, match="scipy.fft's parameters"):
        _functions.define(lambda x, y: None, C2C, 1)


def test_generated_functions_run_on_the_cpu():
    x = np.arange(8.0)
    np.testing.assert_allclose(nfft.irfft(nfft.rfft(x)), x)
    np.testing.assert_allclose(nfft.hfft(x[:5] + 0j), scipy.fft.hfft(x[:5] + 0j))


def test_the_body_holds_no_lookup_per_call():
    """The generated body reads the routine and its kind from a closure, not from the module."""
    code = nfft.fft.__code__
    assert set(code.co_freevars) == {"_kind", "_transform"}
    assert not code.co_names  # no global or attribute lookup
