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
  survivors' agreement never completes: the timeout itself must end it;
- ``stall``: the victim agrees, then stalls before its exchange (the same sleep): the survivors'
  exchange (gloo, or NCCL in a GPU world) must time out.

In a GPU world (``NVMATHX_WORLD_DEVICE=cuda``) the operands are CUDA tensors and the exchanges run on
NCCL; the calls block (``options.blocking``), so an exchange the watchdog aborts raises in its call.
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

from ._space import on_gpu, to_space

PHASES = ("before", "during", "after", "hang", "stall")
CALLS = 3  # calls a survivor makes after the fault; one of them must raise
SHAPE = (256, 256)  # a 1 MiB complex128 array: the exchange is not over at once


def _die() -> None:
    if os.environ.get("NVMATHX_WORLD_LAUNCHER") == "mpi":  # mpiexec would end the whole job: leave quietly
        os._exit(0)
    os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(60)  # never reached: SIGKILL is not delivered late, but make sure nothing goes on


def _fail_inside(context, operation: str, *, stall: bool = False) -> None:
    """Make this rank post its part of the next ``operation`` ("all_to_all" or "agreement") and die,
    or (``stall``) sleep past the timeout before it, then die."""
    if operation == "all_to_all" and on_gpu():
        guard = context.nccl_guard
        original_exchange = guard.exchange

        def exchange_then_die(name, enqueue, stream_handle):
            if stall:
                time.sleep(context.group.timeout + 2)
                _die()
            original_exchange(name, enqueue, stream_handle)
            _die()

        guard.exchange = exchange_then_die
        return
    group = context.group
    original = group._run

    def post_then_die(name, start):
        if name == operation:
            if stall:
                time.sleep(group.timeout + 2)
            else:
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
    x = to_space(_piece(rng, context.rank, context.world_size))
    options = {"blocking": True}
    dfft.fft(x, options=options)  # every rank, before the fault
    if context.rank == victim:
        if phase == "hang":
            time.sleep(context.group.timeout + 2)
        if phase == "during":
            _fail_inside(context, "all_to_all" if run_index % 2 == 0 else "agreement")
        if phase == "stall":
            _fail_inside(context, "all_to_all", stall=True)
        if phase in ("during", "after", "stall"):
            dfft.fft(x, options=options)  # "after": returns (the survivors' first call may return too)
        _die()
    outcomes = []
    for _ in range(CALLS):
        start = time.monotonic()
        try:
            dfft.fft(x, options=options)
        except CommunicationError as error:
            outcomes.append(("CommunicationError", time.monotonic() - start, error.operation))
            break
        except Exception as error:  # noqa: BLE001  (reported, and fails the test)
            outcomes.append((f"{type(error).__name__}: {error}", time.monotonic() - start, ""))
            break
        outcomes.append(("returned", time.monotonic() - start, ""))
    return outcomes
