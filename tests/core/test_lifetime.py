"""free_at_collection: what the stateful objects' __del__ does."""

import warnings

import pytest

from nvmathx._core.lifetime import free_at_collection


class _Resource:
    def __init__(self, error=None):
        self.error, self.freed = error, 0

    def free(self):
        self.freed += 1
        if self.error is not None:
            raise self.error


def test_frees_quietly_when_free_succeeds():
    resource = _Resource()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        free_at_collection(resource, "Thing")
    assert resource.freed == 1


def test_a_failing_free_becomes_a_warning_naming_the_object():
    with pytest.warns(RuntimeWarning, match=r"Thing\.free\(\) failed during garbage collection: boom"):
        free_at_collection(_Resource(ValueError("boom")), "Thing")


def test_a_warning_that_cannot_be_issued_is_swallowed(monkeypatch):
    # at interpreter exit, warnings.warn itself may fail (its module's globals torn down)
    def broken(*args, **kwargs):
        raise AttributeError("'NoneType' object has no attribute 'warn'")

    monkeypatch.setattr(warnings, "warn", broken)
    free_at_collection(_Resource(RuntimeError("late")), "Thing")  # does not raise
