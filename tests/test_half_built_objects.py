"""No public class warns (from ``__del__`` or anywhere) about an object whose construction failed:
a bad call raises its error, and nothing else is printed."""

import gc
import inspect
import warnings

import numpy as np
import pytest

import nvmathx
import nvmathx.device_api
import nvmathx.distributed
import nvmathx.distributed.fft
import nvmathx.distributed.linalg
import nvmathx.fft
import nvmathx.linalg

MODULES = [nvmathx, nvmathx.linalg, nvmathx.fft, nvmathx.device_api, nvmathx.distributed, nvmathx.distributed.fft,
           nvmathx.distributed.linalg]
try:
    import nvmathx.torch
except ImportError:  # torch not installed: its classes are not public here
    pass
else:
    MODULES.append(nvmathx.torch)


def _public_classes():
    for module in MODULES:
        for name in module.__all__:
            value = getattr(module, name)
            if inspect.isclass(value) and not issubclass(value, BaseException):
                yield pytest.param(value, id=f"{module.__name__}.{name}")


_OPERAND = np.ones((4, 4), np.float32)
BAD_CALLS = {
    "no arguments": lambda cls: cls(),
    "one operand": lambda cls: cls(_OPERAND),  # Matmul(a) without b
    "an unknown keyword": lambda cls: cls(_OPERAND, _OPERAND, foo=1),
    "an operand of the wrong kind": lambda cls: cls(object(), object()),
}


@pytest.mark.parametrize("call", list(BAD_CALLS.values()), ids=list(BAD_CALLS))
@pytest.mark.parametrize("cls", list(_public_classes()))
def test_a_failed_construction_warns_nothing(cls, call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            obj = call(cls)
        except Exception:
            pass
        else:  # a call that suits the class: freeing it warns nothing either
            free = getattr(obj, "free", None)
            if callable(free):
                free()
            del obj
        gc.collect()
    assert [str(w.message) for w in caught] == []


def test_matmul_missing_b_raises_the_type_error_alone():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning would be raised here instead of the TypeError
        with pytest.raises(TypeError, match="b"):
            nvmathx.linalg.Matmul(_OPERAND)
        with pytest.raises(TypeError, match="foo"):
            nvmathx.linalg.Matmul(_OPERAND, _OPERAND, foo=1)
        gc.collect()
