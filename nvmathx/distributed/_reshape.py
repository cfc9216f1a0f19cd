"""Reshape: move a distributed array from one box decomposition to another."""

from __future__ import annotations

import logging
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._core.errors import InvalidStateError, OperandError, OptionsError, UnsupportedLayoutError
from .._core.memory import check_memory_resource
from .._core.options import check_choice, check_or_create_options
from .._core.tensor import host_array, wrap_operand
from ..typing import AnyArray, ArrayLike, OptionsLike, StreamLike
from ._agree import check_same
from ._context import current, warn_leaked
from ._distributions import Box, BoxLike
from ._exchange_plan import check_tiling, plan_exchange
from ._host_exchange import exchange_host

__all__ = ["Reshape", "ReshapeOptions", "reshape"]

PLAN_CACHE_SIZE = 16


@dataclass(frozen=True)
class ReshapeOptions:
    """Options of :class:`Reshape` (frozen; ``dataclasses.replace`` validates again).

    Parameters
    ----------
    loopback : bool
        Send this rank's own piece through the exchange instead of copying it (testing on one GPU).
    memory_resource : cuda.core MemoryResource or None
        Where the exchange's staging buffers come from.
    blocking : True or "auto"
    logger : logging.Logger or None
    """

    loopback: bool = False
    memory_resource: Any = None
    blocking: Any = "auto"
    logger: logging.Logger | None = None

    def __post_init__(self):
        check_choice(self.loopback, (True, False), "options.loopback")
        check_choice(self.blocking, (True, "auto"), "options.blocking")
        check_memory_resource(self.memory_resource, "options.memory_resource")
        if self.logger is not None and not isinstance(self.logger, logging.Logger):
            raise OptionsError("options.logger", f"expected a logging.Logger (got {type(self.logger).__name__})")


def _as_box(value, argument: str) -> Box:
    if isinstance(value, Box):
        return value
    try:
        lower, upper = value
        return Box(lower, upper)
    except (TypeError, ValueError):
        raise OptionsError(argument, f"expected a Box or (lower, upper) (got {value!r})") from None


def _local(holder, x, input_box, output_box, options, context, stream):
    """This rank's checks and description (inside the agreement: a failing rank still takes part)."""
    checked = check_or_create_options(ReshapeOptions, options, "options")
    operand = wrap_operand(x, "x")
    if stream is not None and operand.device_id < 0:
        raise OptionsError("stream", "CPU execution takes no stream")
    holder["operand"], holder["options"] = operand, checked
    return _describe(operand, _as_box(input_box, "input_box"), _as_box(output_box, "output_box"), context, checked)


def _describe(operand, input_box: Box, output_box: Box, context, options):
    if input_box.ndim != operand.ndim or output_box.ndim != operand.ndim:
        raise OptionsError("input_box", f"the boxes need {operand.ndim} corners, as the operand has dimensions "
                                        f"(got {input_box}, {output_box})")
    if input_box.shape != tuple(operand.shape):
        raise OperandError("x", f"the local piece has shape {tuple(operand.shape)} but input_box {input_box} has "
                                f"shape {input_box.shape}")
    if not operand.is_c_contiguous():
        raise UnsupportedLayoutError("x", "the local piece must be C-contiguous", "pass a C-contiguous copy")
    if operand.device_id >= 0:
        device_id = context.require_gpu("x")
        if operand.device_id != device_id:
            raise OperandError("x", f"is on GPU {operand.device_id}, but the distributed context uses GPU {device_id}")
    elif not context.group.exchanges_host_data:
        raise OperandError("x", f"numpy operands are exchanged through the process group, and {context.group.name} "
                                "moves only GPU tensors: use a gloo or MPI group")
    space = "cpu" if operand.device_id < 0 else f"cuda:{operand.device_id}"
    return (np.dtype(operand.dtype).name, space, input_box, output_box, options.loopback, operand.package)


class Reshape:
    """Move a distributed array between two box decompositions (collective).

    Parameters
    ----------
    x : array
        This rank's piece (C order), of ``input_box``'s shape: numpy (CPU) or a GPU array on the
        context's device.
    input_box, output_box : Box or (lower, upper)
        This rank's piece before and after. The ranks' input boxes must tile the global array
        exactly, and so must their output boxes.
    options : ReshapeOptions or dict, optional
    stream : optional
        GPU only.

    Raises
    ------
    OperandError, OptionsError
        On every rank, naming the argument, when any rank's arguments are invalid or the boxes do not
        tile one global array.
    """

    def __init__(self, x: ArrayLike, input_box: BoxLike, output_box: BoxLike, *, options: OptionsLike = None,
                 stream: StreamLike = None) -> None:
        self._freed = True
        context = current("Reshape")
        holder: dict[str, Any] = {}
        descriptions = context.agree(lambda: _local(holder, x, input_box, output_box, options, context, stream))
        self.options = holder["options"]
        self._setup(context, holder["operand"], descriptions, stream)

    def _setup(self, context, operand, descriptions, stream) -> None:
        check_same([d[0] for d in descriptions], "x", "dtype")
        check_same([d[1] for d in descriptions], "x", "execution space")
        check_same([d[4] for d in descriptions], "options", "options")
        inputs = [d[2] for d in descriptions]
        outputs = [d[3] for d in descriptions]
        self.global_shape = check_tiling(inputs, "input_box")
        check_tiling(outputs, "output_box", self.global_shape)
        self._context = context
        self._exchange = plan_exchange(inputs, outputs, context.rank)
        self._operand = operand
        self._stream_argument = stream
        self._device = None
        self._freed = False
        context.track(self)

    @property
    def output_box(self) -> Box:
        return self._exchange.target

    def plan(self) -> None:
        """Prepare the exchange's buffers (collective; a second call does nothing).

        Raises
        ------
        InvalidStateError
            On every rank, when any rank's Reshape is freed.
        """

        def make():
            from ._device_exchange import DeviceExchange

            self._check_valid()
            if self._device is not None or self._operand.device_id < 0:
                return
            self._device = DeviceExchange(self._exchange, self._context, self._operand,
                                          memory_resource=self.options.memory_resource, loopback=self.options.loopback)

        self._context.agree(make)

    def execute(self, stream: StreamLike = None) -> AnyArray:
        """This rank's piece in the output decomposition (collective), the operand's kind of array.

        Raises
        ------
        InvalidStateError
            On every rank, when any rank's Reshape is freed (or, on a GPU, not planned).
        CommunicationError
            When a rank dies or the exchange does not finish within the context's timeout.
        """
        holder: dict[str, Any] = {}

        def local() -> None:
            holder["prepared"] = self._prepare(self._operand, stream)

        self._context.agree(local)
        return self._run_prepared(self._operand, holder["prepared"])

    def _prepare(self, operand, stream) -> tuple:
        """This rank's part of a call that can fail locally (nothing collective)."""
        self._check_valid()
        if operand.device_id < 0:
            if stream is not None:
                raise OptionsError("stream", "CPU execution takes no stream")
            return ()
        if self._device is None:
            raise InvalidStateError("call plan() before execute()")
        return self._device.prepare_new(operand, stream)

    def _run_prepared(self, operand, prepared: tuple):
        """Run a prepared call (collective: every rank prepared its own, and the ranks agreed)."""
        if operand.device_id < 0:
            source = host_array(operand)
            target = np.empty(self._exchange.target.shape, dtype=source.dtype)
            exchange_host(self._context.group, self._exchange, np.ascontiguousarray(source), target,
                          loopback=self.options.loopback)
            return operand.adapter.from_host(target)
        assert self._device is not None
        return self._device.run_to_new(operand, prepared, blocking=self.options.blocking is True)

    def reset_operand(self, x: ArrayLike) -> None:
        """Use ``x`` (same shape, dtype, device and library) from now on (collective)."""
        holder: dict[str, Any] = {}

        def local():
            self._check_valid()
            operand = wrap_operand(x, "x")
            old = self._operand
            if (tuple(operand.shape), operand.dtype, operand.device_id, operand.package) != (
                    tuple(old.shape), old.dtype, old.device_id, old.package) or not operand.is_c_contiguous():
                raise OperandError("x", f"the new operand must match the plan's: shape {tuple(old.shape)}, dtype "
                                        f"{old.dtype}, device {old.device_id}, {old.package}, C order")
            holder["operand"] = operand

        self._context.agree(local)
        self._operand = holder["operand"]

    def _check_valid(self):
        if self._freed:
            raise InvalidStateError("this Reshape has been freed; create a new one")

    def free(self) -> None:
        """Release the staging buffers. Safe to call twice; afterwards every method raises."""
        if self._freed:
            return
        self._freed = True
        if self._device is not None:
            self._device.free()
        self._device = None
        self._operand = None

    def __enter__(self) -> Reshape:
        self._check_valid()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.free()

    def __del__(self):
        if not getattr(self, "_freed", True) and self._device is not None:
            warn_leaked(self)


def reshape(x: ArrayLike, input_box: BoxLike, output_box: BoxLike, *, options: OptionsLike = None,
            stream: StreamLike = None) -> AnyArray:
    """This rank's piece ``x`` (of ``input_box``) moved to ``output_box`` (collective).

    The function form of :class:`Reshape`, with its plans cached by the distributed context.
    Returns the operand's kind of array. Box round trips are exact (nothing is computed).
    """
    context = current("reshape")
    holder: dict[str, Any] = {}
    descriptions = context.agree(lambda: _local(holder, x, input_box, output_box, options, context, stream))
    cache = context.caches.setdefault("reshape", OrderedDict())
    key = (tuple(descriptions), holder["options"].memory_resource is None)
    plan = cache.get(key)
    if plan is None:
        plan = Reshape.__new__(Reshape)
        plan.options = holder["options"]
        plan._setup(context, holder["operand"], descriptions, stream)
        plan.plan()
        cache[key] = plan
        if len(cache) > PLAN_CACHE_SIZE:
            cache.popitem(last=False)[1].free()
    else:
        cache.move_to_end(key)
        plan._operand = holder["operand"]  # same local shape, dtype, device and library: agreed above
    return plan._run_prepared(plan._operand, plan._prepare(plan._operand, stream))
