"""The local strategy: every rank multiplies its own pieces with :mod:`nvmathx.linalg` (cuBLASLt on
a GPU, numpy on the CPU), with no communication. It serves a world of one rank and the
combinations whose result pieces need no other rank's data (data parallel, column parallel with a
replicated input)."""

from __future__ import annotations

from ._layout import local_recipe

__all__ = ["LocalRunner", "local_arguments", "linalg_options", "empty_piece"]

_WHOLE = slice(None)


def _rows_cols(obj, rows: slice, cols: slice):
    if rows == _WHOLE and cols == _WHOLE:
        return obj
    return obj[rows, cols]


def local_arguments(problem, a, b, c, bias) -> tuple:
    """(a, b, c, epilog inputs) of this rank's local product: slices of its arrays (objects as given)."""
    rows, cols, bias_slice = local_recipe(problem.layout, problem.rank)
    inputs = None if bias is None else {"bias": bias if bias_slice == _WHOLE else bias[bias_slice]}
    return _rows_cols(a, rows, _WHOLE), _rows_cols(b, _WHOLE, cols), c, inputs


def linalg_options(problem, options, space: str) -> dict:
    """nvmathx.linalg's options for the same product."""
    chosen = {"memory_resource": options.memory_resource, "blocking": options.blocking, "logger": options.logger}
    if space != "cpu":
        chosen["compute_type"] = problem.compute_type
    return chosen


def empty_piece(problem, operand, stream):
    """This rank's piece when it holds none of the result (nvmathx.linalg takes no empty operand)."""
    from ..._core.streams import resolve_stream

    device_id = operand.device_id
    holder = None if device_id < 0 else resolve_stream(stream, device_id, operand.adapter.current_stream)
    return operand.adapter.empty(problem.result_shape, problem.dtype, device_id, holder)


class LocalRunner:
    """A stateful nvmathx.linalg.Matmul of this rank's pieces (none when the rank's piece is empty)."""

    def __init__(self, problem, operands, bias, epilog, alpha, beta, options, stream):
        from ...linalg import Matmul as LocalMatmul

        self._problem = problem
        self._operand = operands["a"]
        self._mm = None
        if 0 in problem.result_shape:
            return
        a, b, c, inputs = local_arguments(problem, _obj(operands["a"]), _obj(operands["b"]), _obj(operands["c"]),
                                          _obj(bias))
        space = "cpu" if operands["a"].device_id < 0 else "cuda"
        self._mm = LocalMatmul(a, b, c, alpha=alpha, beta=beta, options=linalg_options(problem, options, space),
                               stream=stream)
        try:
            self._mm.plan(epilog=epilog, epilog_inputs=inputs)
        except Exception:
            self._mm.free()
            raise

    def execute(self, stream):
        if self._mm is None:
            return empty_piece(self._problem, self._operand, stream)
        if stream is None:
            return self._mm.execute()
        return self._mm.execute(stream=stream)

    def bind(self, operands, bias, alpha, beta) -> None:
        """Use new operands (already checked against the plan's), bias, alpha and beta."""
        self._operand = operands["a"]
        if self._mm is None:
            return
        a, b, c, inputs = local_arguments(self._problem, _obj(operands["a"]), _obj(operands["b"]),
                                          _obj(operands["c"]), _obj(bias))
        self._mm.reset_operands(a=a, b=b, c=c, alpha=alpha, beta=beta, epilog_inputs=inputs)

    def free(self) -> None:
        if self._mm is not None:
            self._mm.free()
        self._mm = None


def _obj(operand):
    return None if operand is None else operand.obj
