"""What :class:`~nvmathx.linalg.Matmul` asks of the execution space it runs in.

``Matmul`` checks its arguments and its life-cycle state, and hands everything that depends on
where the product runs to one state object chosen at construction: :class:`~._cpu.CpuMatmulState`
(numpy) or :class:`~._gpu.GpuMatmulState` (cuBLASLt). Both implement :class:`MatmulSpace`; neither
knows about the other, and ``Matmul`` branches on neither.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from .._core.tensor import Operand
from ._cublaslt_plan import MatmulAlgorithm
from ._options import MatmulPlanPreferences
from ._problem import MatmulProblem

__all__ = ["MatmulSpace", "DirectRun"]

DirectRun = tuple[Callable[[Any], Any], Callable[[Any], Any]]
"""``(run, streams)``: ``run(streams(stream))`` is ``execute(stream=stream)`` with every other argument
at its default, with no check left to make (see :meth:`MatmulSpace.direct`)."""


class MatmulSpace(Protocol):
    """One Matmul's operands, plan and values in one execution space.

    Constructed as ``Space(operands, given, execution=, options=, stream=)``: ``operands`` maps
    ``"a"``, ``"b"``, ``"c"`` to the checked Operands (``c`` may be None) of the arrays ``given``
    (the same keys); a space that takes no ``stream`` raises OptionsError naming it. Operands and
    epilog inputs reach a space already checked against the planned layout; a space checks only
    what is its own (the CPU refuses ``algorithms`` and ``stream``, the GPU holds operands to the
    pointer alignment it planned for).
    """

    def plan(self, problem: MatmulProblem, inputs: dict[str, Operand], given: dict[str, Any], *,
             preferences: MatmulPlanPreferences, algorithms: list[MatmulAlgorithm] | None, alpha: Any, beta: Any,
             scales: dict, keep: int | None) -> list[MatmulAlgorithm]:
        """Plan ``problem`` for the operands held, the epilog ``inputs`` (Operands of the arrays
        ``given``, by input name) and the checked ``alpha``, ``beta`` and float8 ``scales``; keep at
        most the best ``keep`` candidates (all when None). Returns the candidates, best first.
        Replaces an earlier plan only once the new one is complete: on failure the earlier plan
        stays as it was."""
        ...

    def direct(self) -> DirectRun | None:
        """The planned fast path of ``execute()`` (see :data:`DirectRun`), or None where every call
        goes through :meth:`execute`."""
        ...

    @property
    def algorithms(self) -> list[MatmulAlgorithm]:
        """The planned candidates, in the order :meth:`execute` prefers them (a new list)."""
        ...

    def autotune(self, iterations: int, keep: int | None = None) -> list[tuple[float, MatmulAlgorithm]]:
        """Time the planned candidates (at least ``iterations`` runs each) and reorder them fastest
        first, keeping the best ``keep`` (all when None); ``[(milliseconds, algorithm), ...]``,
        fastest first (empty where there is nothing to time)."""
        ...

    def execute(self, algorithm: MatmulAlgorithm | None, stream: Any, release_workspace: bool) -> Any:
        """The result (or ``(result, aux)``) of the planned product on the operands held."""
        ...

    def check_alignment(self, operand: Operand, name: str) -> None:
        """Raise OperandError naming ``name`` when ``operand`` cannot replace the one it was planned
        with for a reason of this space's own (a device pointer less aligned than planned)."""
        ...

    def reset_held(self, a: Any, b: Any, c: Any, epilog_inputs: Any) -> bool:
        """Take new arrays of exactly the signatures of those held, without a full check (the loop
        of a caller that multiplies new arrays of one layout); False, changing nothing, where any
        array needs the full check of ``Matmul.reset_operands``."""
        ...

    def reset(self, operands: dict[str, tuple[Operand, Any]], inputs: dict[str, tuple[Operand, Any]], *,
              scalars: tuple[Any, Any] | None, scales: dict) -> None:
        """Swap in checked ``operands`` and epilog ``inputs`` (by name: ``(Operand, array given)``),
        the new checked ``(alpha, beta)`` (None: unchanged) and the float8 ``scales`` that changed."""
        ...

    def free(self) -> None:
        """Release what the space holds (plan, workspace, device copies); called once."""
        ...
