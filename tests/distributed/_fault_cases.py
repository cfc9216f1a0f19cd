"""A rank killed (SIGKILL) before, during or after a collective, run on every rank of a test world.

Every rank first runs one distributed FFT together (so that nothing is still loading when the
fault comes). Then the victim dies at its phase, and every survivor calls the distributed FFT again
and again (at most ``CALLS`` times): one of those calls must raise ``CommunicationError`` (the
first, unless it is the call the victim completed or died in after sending its part), and no call
may take longer than the collective timeout allows. A survivor reports what each call did.

Phases (``NVMATHX_FAULT_PHASE``):

- ``before``: the victim dies before the survivors' next call;
- ``during``: the victim posts its part of a collective (the exchange on even runs, the agreement
  on odd ones: ``NVMATHX_FAULT_RUN``) and dies while the others are in it;
- ``after``: the victim dies right after a call every rank completed;
- ``hang``: the victim stops taking part (sleeps 2 s past the collective timeout, then dies), so the
  survivors' collective never completes: the timeout itself must end it.
"""

from __future__ import annotations

import os
import signal
import time

import numpy as np

import nvmathx.distributed as dist
from nvmathx import CommunicationError
from nvmathx.distributed import Slab
from nvmathx.distributed import fft as dfft

PHASES = ("before", "during", "after", "hang")
CALLS = 3  # calls a survivor makes after the fault; one of them must raise
SHAPE = (256, 256)  # a 1 MiB complex128 array: the exchange is not over at once


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(60)  # never reached: SIGKILL is not delivered late, but make sure nothing goes on


def _die_inside(group, operation: str) -> None:
    """Make this rank post its part of the next ``operation`` ("all_to_all" or "agreement") and die."""
    original = group._run

    def post_then_die(name, start):
        if name == operation:
            start()
            _die()
        return original(name, start)

    group._run = post_then_die


def _piece(rng, rank: int, world_size: int) -> np.ndarray:
    shape = dist.local_shape(SHAPE, Slab.X, rank=rank, world_size=world_size)
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def run(seed):
    """This survivor's list of (outcome, seconds, operation) per call after the fault, where
    outcome is "returned", "CommunicationError" or another exception's type and message."""
    from nvmathx.distributed._context import current

    phase, victim = os.environ["NVMATHX_FAULT_PHASE"], int(os.environ["NVMATHX_FAULT_VICTIM"])
    run_index = int(os.environ.get("NVMATHX_FAULT_RUN", "0"))
    context = current()
    rng = np.random.default_rng(seed + context.rank)
    x = _piece(rng, context.rank, context.world_size)
    dfft.fft(x)  # every rank, before the fault
    if context.rank == victim:
        if phase == "hang":
            time.sleep(context.group.timeout + 2)
        if phase == "during":
            _die_inside(context.group, "all_to_all" if run_index % 2 == 0 else "agreement")
        if phase in ("during", "after"):
            dfft.fft(x)  # "after": returns (the survivors' first call may return too), then the victim dies
        _die()
    outcomes = []
    for _ in range(CALLS):
        start = time.monotonic()
        try:
            dfft.fft(x)
        except CommunicationError as error:
            outcomes.append(("CommunicationError", time.monotonic() - start, error.operation))
            break
        except Exception as error:  # noqa: BLE001  (reported, and fails the test)
            outcomes.append((f"{type(error).__name__}: {error}", time.monotonic() - start, ""))
            break
        outcomes.append(("returned", time.monotonic() - start, ""))
    return outcomes
