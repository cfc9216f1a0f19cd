"""The GPU execution space of Matmul: the device operands (host ones staged), the streams its
calls run on, and the planned runner (:class:`~._runner.GpuRunner`, or the one for an extent of 0)."""

from __future__ import annotations

from .._core.errors import InvalidStateError, OperandError
from .._core.logs import get_logger
from .._core.streams import CallStreams, order_after, resolve_stream
from .._core.tensor import Operand, key_function, operand_keys
from ._autotune import autotune_algorithms
from ._layout import pointer_alignment
from ._operands import copied, input_argument, stage
from ._planning import Runner, build_runner
from ._runner import GpuRunner

__all__ = ["GpuMatmulState"]

_FACTORS = ("a", "b", "c")


class GpuMatmulState:
    """A Matmul's state in the GPU space (a :class:`~._space.MatmulSpace`).

    Attributes
    ----------
    runner : GpuRunner, DegenerateRunner or None
        The planned runner (None before ``plan()`` and after ``free()``).
    streams : CallStreams
        The stream of each call: the one given at construction, else the operand library's current
        stream, else the device's default stream.
    library_streams : CallStreams
        The operand library's stream choice alone (where it materialises lazy views).
    views_copied : bool
        Whether a, b or c given at construction was a copy of a lazy view (torch's conjugate or
        negative bit).

    An operand held as given (a device array used as it is, not a staged or materialised copy) is
    remembered by its signature, so that ``reset_operands`` may take a new array of that signature
    with one key computation instead of a full check (:meth:`reset_held`).
    """

    def __init__(self, operands: dict, given: dict, *, execution, options, stream):
        a = operands["a"]
        self.device_id = device_id = execution.device_id
        self.memory_resource = options.memory_resource
        self.options = options
        self.logger = get_logger(options.logger)
        # Without stream=, execute() follows the operand library's current stream (torch, cupy),
        # so that work lands where the caller's framework would put it (a graph capture too).
        current = a.adapter.current_stream if a.device_id >= 0 else None
        fixed = resolve_stream(stream, device_id) if stream is not None else None
        self.streams = CallStreams(device_id, current, fixed)
        self.library_streams = CallStreams(device_id, current)
        holder = self.streams()
        self.views_copied = self._after_copies(holder, *((operands[name], given[name]) for name in _FACTORS))
        self.host_like = a if a.device_id < 0 else None  # results go back to host memory
        self.operands = {name: stage(op, device_id, holder, self.memory_resource) for name, op in operands.items()}
        self.inputs: dict = {}
        self.runner: Runner | None = None
        self.alignments: dict[str, int] = {}  # per operand, the pointer alignment planned for
        self.signatures: dict[str, tuple] = {}  # per operand held as given: (its signature, its Operand)
        for name in _FACTORS:
            self._hold(name, self.operands[name], given[name])

    # -- planning ------------------------------------------------------------------------------

    def plan(self, problem, inputs, given, *, preferences, algorithms, alpha, beta, scales, keep) -> list:
        stream = self.streams()
        self._after_copies(stream, *((inputs[name], value) for name, value in given.items()))
        inputs = {name: stage(op, self.device_id, stream, self.memory_resource) for name, op in inputs.items()}
        runner = build_runner(problem, self.operands, inputs, options=self.options, preferences=preferences,
                              stream=stream, alpha=alpha, beta=beta, scales=scales, algorithms=algorithms,
                              host_like=self.host_like, keep=keep)
        if self.runner is not None:
            old, self.runner = self.runner, None
            old.free()
        self.runner, self.inputs = runner, inputs
        for name in [name for name in self.signatures if name not in _FACTORS]:
            del self.signatures[name]  # the epilog inputs of the earlier plan
        for name, value in given.items():
            self._hold(input_argument(name), inputs[name], value)
        # what reset_operands holds new operands to: the heuristic chose for these pointers
        self.alignments = {name: pointer_alignment(op.ptr) for name, op in self.operands.items() if op is not None}
        self.alignments.update({input_argument(name): pointer_alignment(op.ptr) for name, op in inputs.items()})
        return list(runner.algorithms)

    def direct(self):
        return self._planned_runner().run, self.streams

    @property
    def algorithms(self) -> list:
        return list(self._planned_runner().algorithms)

    def autotune(self, iterations: int, keep: int | None = None) -> list:
        runner = self._planned_runner()
        if not isinstance(runner, GpuRunner) or not runner.algorithms:  # an extent of 0 runs no algorithm
            return []
        stream = self.streams()
        runner.use_stream(stream)
        timings = autotune_algorithms(runner, stream, iterations)
        runner.algorithms = [algorithm for _, algorithm in timings]
        runner.select(runner.algorithms[0])
        self.logger.info("matmul autotune: %s", [(round(ms, 4), repr(a)) for ms, a in timings])
        if keep is not None:  # the fastest only, with no more workspace than they need
            runner.prepare(runner.algorithms[:keep])
        return timings

    def _planned_runner(self) -> Runner:
        runner = self.runner
        if runner is None:  # Matmul's state checks make this unreachable
            raise InvalidStateError("call plan() before execute() or autotune()")
        return runner

    # -- execution -----------------------------------------------------------------------------

    def execute(self, algorithm, stream, release_workspace: bool):
        runner = self._planned_runner()
        holder = self.streams(stream)
        runner.use_stream(holder)  # (a released workspace is allocated again before an algorithm is selected)
        previous = runner.algorithm
        if algorithm is not None:
            if algorithm not in runner.algorithms:
                raise OperandError("algorithm", "is not one of this plan's algorithms (see plan() or .algorithms)")
            runner.select(runner.algorithms[runner.algorithms.index(algorithm)])  # the plan's own workspace size
        try:
            return runner.run(holder)
        finally:
            if previous is not None:  # (None only where nothing runs: an extent of 0)
                runner.select(previous)
            if release_workspace:
                runner.release_workspace()

    # -- new operands --------------------------------------------------------------------------

    def check_alignment(self, operand: Operand, name: str) -> None:
        planned = self.alignments.get(name)
        if planned is not None and operand.device_id >= 0 and pointer_alignment(operand.ptr) < planned:
            raise OperandError(name, f"is aligned to {pointer_alignment(operand.ptr)} bytes, less than the "
                               f"{planned} the plan was made for; plan again")

    def reset(self, operands: dict, inputs: dict, *, scalars, scales: dict) -> None:
        pairs = [*operands.values(), *inputs.values()]
        stream = None
        if scales or copied(*pairs) or any(op.device_id < 0 for op, _ in pairs):
            # lazy views materialised, host arrays to stage, scales to upload: the stream is needed
            stream = self.streams()
            self._after_copies(stream, *pairs)
            operands = {name: (self._staged(op, stream), value) for name, (op, value) in operands.items()}
            inputs = {name: (self._staged(op, stream), value) for name, (op, value) in inputs.items()}
        for name, (operand, value) in operands.items():
            self.operands[name] = operand
            self._hold(name, operand, value)
        for name, (operand, value) in inputs.items():
            self.inputs[name] = operand
            self._hold(input_argument(name), operand, value)
        self._bind()
        if self.runner is not None:
            if scalars is not None:
                self.runner.set_scalars(*scalars)
            if scales:
                self.runner.set_scales(scales, stream=stream)

    def _staged(self, operand: Operand, stream) -> Operand:
        return stage(operand, self.device_id, stream, self.memory_resource)

    def reset_held(self, a, b, c, epilog_inputs) -> bool:
        if not self.signatures:
            return False
        new = {}
        for name, value in (("a", a), ("b", b), ("c", c)):
            if value is not None:
                operand = new[name] = self._held_like(name, value)
                if operand is None:
                    return False
        inputs = {}
        if epilog_inputs is not None:
            if type(epilog_inputs) is not dict:
                return False
            for name, value in epilog_inputs.items():
                operand = inputs[name] = self._held_like(input_argument(name), value)
                if operand is None:
                    return False
        self.operands.update(new)
        self.inputs.update(inputs)
        self._bind()
        return True

    def _hold(self, name: str, operand, value) -> None:
        """Remember the signature of ``value``, held as operand ``name``, where reset_operands may
        compare a new array's against it instead of checking it in full: a GPU array used as it is
        (not a staged or materialised copy) of a library that has a key."""
        if operand is None or operand.device_id < 0 or operand.obj is not value:
            self.signatures.pop(name, None)
            return
        key = operand_keys.get(type(value)) or key_function(value, name)  # (wrapped already: it has one)
        self.signatures[name] = (key(value)[0], operand)

    def _held_like(self, name: str, value):
        """An Operand for ``value`` when it has the signature of the operand held as ``name`` (so it
        passes every check that operand passed) and at least the planned alignment; else None."""
        held = self.signatures.get(name)
        key = operand_keys.get(type(value))
        if held is None or key is None:
            return None
        signature, ptr, _ = key(value)
        held_signature, operand = held
        if signature != held_signature:
            return None
        planned = self.alignments.get(name)
        if planned is not None and pointer_alignment(ptr) < planned:
            return None
        # equal signatures: the held operand's layout, library and device are this array's
        return Operand(value, ptr, operand.shape, operand.strides, operand.dtype, operand.device_id, operand.adapter,
                       operand.conj)

    def _bind(self) -> None:
        """Point a planned runner at the operands and epilog inputs held."""
        if self.runner is not None:
            self.runner.bind(self.operands["a"], self.operands["b"], self.operands["c"], self.inputs)

    def _after_copies(self, stream, *pairs) -> bool:
        """Order ``stream`` after the copies made of lazy views (torch's conjugate or negative bits),
        which the library made on its current stream; ``pairs`` are (Operand, array given). Returns
        whether there were any."""
        if not copied(*pairs):
            return False
        order_after(stream, self.library_streams())
        return True

    # -- the function form and the end -----------------------------------------------------------

    def inputs_copied(self, given: dict) -> bool:
        """Whether any planned epilog input views a copy of the array ``given`` for it (a lazy view)."""
        return copied(*((self.inputs[name], value) for name, value in given.items() if name in self.inputs))

    def detach(self) -> Runner:
        """The planned runner, bound to no operand and no longer this state's (the function form's
        cache binds each call's operands to it itself)."""
        runner, self.runner = self._planned_runner(), None
        runner.unbind()  # a cached plan must not keep this call's arrays alive
        return runner

    def free(self) -> None:
        runner, self.runner = self.runner, None
        self.operands, self.inputs, self.signatures = {}, {}, {}
        if runner is not None:
            runner.free()
