"""The distributed bad-input catalogue, run on every rank of a test world: each row is a call that
must raise, on every rank, the same typed error whose message starts with the argument's name;
none may hang (the world's deadline) or return. Rows marked "one rank" are wrong on one rank only:
the others must raise the same error instead of going on into a collective."""

from __future__ import annotations

import pickle
import traceback

import numpy as np

import nvmathx.distributed as dist
from nvmathx import (
    InvalidStateError,
    NvmathxError,
    OperandError,
    OptionsError,
    UnsupportedLayoutError,
    UnsupportedOperandError,
)
from nvmathx.distributed import BlockCyclic, Box, Replicated, Slab
from nvmathx.distributed import fft as dfft
from nvmathx.distributed import linalg as dlinalg


def _ctx():
    from nvmathx.distributed._context import current

    return current()


def _piece(global_shape=(8, 6), dtype=np.complex128, distribution=Slab.X, axes=None):
    shape = dist.local_shape(global_shape, distribution, axes=axes)
    return np.arange(np.prod(shape), dtype=np.float64).reshape(shape).astype(dtype) + 1


def _on_rank(rank, bad, good):
    """``bad`` on rank ``rank`` (the last rank when -1), ``good`` elsewhere."""
    context = _ctx()
    target = context.world_size - 1 if rank == -1 else rank
    return bad() if context.rank == target else good()


def _force():
    return {"force_distributed": True} if _ctx().world_size == 1 else {}


def _freed_fft():
    plan = dfft.FFT(_piece(), options=_force())
    plan.free()
    plan.execute()


def _unplanned_fft():
    with dfft.FFT(_piece(), options=_force()) as plan:
        plan.execute()


def _reset_wrong_shape_one_rank():
    with dfft.FFT(_piece(), options=_force()) as plan:
        plan.plan()
        good = _piece()
        plan.reset_operand(_on_rank(-1, lambda: np.zeros((1, 6), np.complex128), lambda: good))


def _wrong_slab_extent_one_rank():
    """The last rank holds two planes too many along the split axis."""
    good = _piece((8, 6))
    bad = np.ones((good.shape[0] + 2, 6), np.complex128)
    dfft.fft(_on_rank(-1, lambda: bad, lambda: good), options=_force())


def _boxes_overlap():
    context = _ctx()
    # every rank claims the whole array as its input box
    dfft.fft(np.ones((4, 4), np.complex128), (Box((0, 0), (4, 4)), Box((0, 0), (4, 4))), options=_force()) \
        if context.world_size > 1 else dfft.fft(np.ones((4, 4), np.complex128),
                                                (Box((0, 0), (4, 4)), Box((0, 0), (4, 3))), options=_force())


def _planned_fft():
    plan = dfft.FFT(_piece(), options=_force())
    plan.plan()
    return plan


def _freed_fft_one_rank():
    """The last rank frees its plan, then every rank executes: all raise, none waits."""
    with _planned_fft() as plan:
        _on_rank(-1, plan.free, lambda: None)
        plan.execute()


def _direction_differs_one_rank():
    with _planned_fft() as plan:
        plan.execute(_on_rank(-1, lambda: "inverse", lambda: "forward"))


def _stream_on_cpu_one_rank():
    with _planned_fft() as plan:
        plan.execute(stream=_on_rank(0, lambda: 0, lambda: None))


def _reshape_plan():
    context = _ctx()
    box = Box((2 * context.rank, 0), (2 * context.rank + 2, 3))
    return dist.Reshape(np.ones((2, 3)), box, box), box


def _freed_reshape_one_rank():
    plan, _ = _reshape_plan()
    with plan:
        plan.plan()
        _on_rank(-1, plan.free, lambda: None)
        plan.execute()


def _reshape_options_differ_one_rank():
    context = _ctx()
    box = Box((2 * context.rank, 0), (2 * context.rank + 2, 3))
    dist.reshape(np.ones((2, 3)), box, box, options={"loopback": _on_rank(0, lambda: True, lambda: False)})


def _initialize_with(timeout):
    """initialize() with this timeout, on a process that is (for the call) not initialised."""
    from nvmathx.distributed import _context

    saved = _context._context
    _context._context = None
    try:
        dist.initialize(timeout=timeout)
    finally:
        _context._context = saved


def _finalized_call():
    """Every distributed call after finalize() raises; initialize() again restores the world."""
    from nvmathx.distributed import _context

    group = _ctx().group
    saved = _context._context
    _context._context = None
    try:
        dfft.fft(_piece())
    finally:
        _context._context = saved
        del group


FFT_ROWS = [
    ("fft: 1-D operand", OperandError, "x", lambda: dfft.fft(np.ones(8, np.complex128))),
    ("fft: real operand for C2C", UnsupportedOperandError, "x", lambda: dfft.fft(_piece(dtype=np.float64))),
    ("fft: complex operand for R2C", UnsupportedOperandError, "x", lambda: dfft.rfft(_piece())),
    ("fft: int operand", UnsupportedOperandError, "x", lambda: dfft.fft(_piece(dtype=np.int64))),
    ("fft: not C-contiguous", OperandError, "x",
     lambda: dfft.fft(np.asfortranarray(_piece((8, 6), distribution=Slab.X)).T.copy().T)),
    ("fft: bad norm", OptionsError, "norm", lambda: dfft.fft(_piece(), norm="sideways")),
    ("fft: bad distribution", OptionsError, "distribution", lambda: dfft.fft(_piece(), "Z")),
    ("fft: distribution of one box", OptionsError, "distribution", lambda: dfft.fft(_piece(), Box((0, 0), (8, 6)))),
    ("fft: axes not the last ones", OptionsError, "axes", lambda: dfft.fft(_piece((2, 8, 6)), axes=(0, 1))),
    ("fft: one axis", OptionsError, "axes", lambda: dfft.fft(_piece(), axes=(1,))),
    ("fft: 4-D without axes", OptionsError, "axes", lambda: dfft.fft(np.ones((2, 2, 2, 2), np.complex128))),
    ("fft: reshape not a bool", OptionsError, "reshape", lambda: dfft.fft(_piece(), reshape="yes")),
    ("fft: unknown option", OptionsError, "options", lambda: dfft.fft(_piece(), options={"speed": 11})),
    ("fft: bad option value", OptionsError, "options.loopback", lambda: dfft.fft(_piece(), options={"loopback": 2})),
    ("fft: fft_type against the function", OptionsError, "options.fft_type",
     lambda: dfft.fft(_piece(), options={"fft_type": "R2C"})),
    ("fft: stream on the CPU", OptionsError, "stream", lambda: dfft.fft(_piece(), stream=0)),
    ("fft: reshape=False with boxes", OptionsError, "options.reshape",
     lambda: dfft.fft(_piece(), (Box((0, 0), _piece().shape), Box((0, 0), _piece().shape)), reshape=False)),
    ("irfft: s of the wrong length", OptionsError, "s", lambda: dfft.irfft(_piece(), s=(8,))),
    ("irfft: s changes a complex axis", OptionsError, "s", lambda: dfft.irfft(_piece(), s=(9, 10), options=_force())),
    ("fft: freed plan", InvalidStateError, None, _freed_fft),
    ("fft: execute before plan", InvalidStateError, None, _unplanned_fft),
    ("fft: direction", OptionsError, "direction",
     lambda: dfft.FFT(_piece(dtype=np.float64), options=_force()).execute("inverse")),
    ("one rank: dtype differs", OperandError, "x",
     lambda: dfft.fft(_on_rank(0, lambda: _piece(dtype=np.complex64), _piece), options=_force())),
    ("one rank: axes differ", OperandError, "axes",
     lambda: dfft.fft(_piece((2, 8, 6), axes=(1, 2)), axes=_on_rank(0, lambda: (0, 1, 2), lambda: (1, 2)),
                      options=_force())),
    ("one rank: norm differs", OptionsError, "norm",
     lambda: dfft.fft(_piece(), norm=_on_rank(-1, lambda: "ortho", lambda: "forward"), options=_force())),
    ("one rank: ifft norm differs", OptionsError, "norm",
     lambda: dfft.ifft(_piece(), norm=_on_rank(0, lambda: "backward", lambda: "forward"), options=_force())),
    ("one rank: FFT.execute direction differs", OptionsError, "direction", _direction_differs_one_rank),
    ("one rank: FFT.execute stream on the CPU", OptionsError, "stream", _stream_on_cpu_one_rank),
    ("one rank: FFT freed, then execute", InvalidStateError, None, _freed_fft_one_rank),
    ("one rank: fft reshape differs", OptionsError, "reshape",
     lambda: dfft.fft(_piece(), reshape=_on_rank(-1, lambda: False, lambda: True))),
    ("one rank: fft options differ", OperandError, "options",
     lambda: dfft.fft(_piece(), options={"loopback": _on_rank(0, lambda: True, lambda: False)})),
    ("one rank: irfft last_axis_parity differs", OperandError, "options",
     lambda: dfft.irfft(_piece(), options={"last_axis_parity": _on_rank(-1, lambda: "odd", lambda: "even")})),
    ("one rank: reshape options differ", OperandError, "options", _reshape_options_differ_one_rank),
    ("one rank: Reshape freed, then execute", InvalidStateError, None, _freed_reshape_one_rank),
    ("initialize: timeout 0", OptionsError, "timeout", lambda: _initialize_with(0)),
    ("initialize: timeout NaN", OptionsError, "timeout", lambda: _initialize_with(float("nan"))),
    ("initialize: timeout True", OptionsError, "timeout", lambda: _initialize_with(True)),
    ("initialize: timeout a string", OptionsError, "timeout", lambda: _initialize_with("60")),
    ("one rank: norm bad", OptionsError, "norm",
     lambda: dfft.fft(_piece(), norm=_on_rank(-1, lambda: "bad", lambda: "ortho"), options=_force())),
    ("one rank: wrong slab extent", OperandError, "x", _wrong_slab_extent_one_rank),
    ("one rank: reset_operand shape", OperandError, "x", _reset_wrong_shape_one_rank),
    ("one rank: distribution differs", OperandError, "distribution",
     lambda: dfft.fft(_piece(), _on_rank(0, lambda: Slab.Y, lambda: Slab.X), options=_force())),
    ("boxes overlap or miss", OptionsError, "distribution", _boxes_overlap),
    ("more ranks than planes", OperandError, "x",
     lambda: dfft.fft(_piece((1, 8) if _ctx().world_size > 1 else (0, 8)), options=_force())),
    ("after finalize", InvalidStateError, None, _finalized_call),
    ("reshape: box of another shape", OperandError, "x",
     lambda: dist.reshape(np.ones((2, 2)), Box((0, 0), (3, 3)), Box((0, 0), (3, 3)))),
    ("reshape: boxes do not tile", OptionsError, "input_box",
     lambda: dist.reshape(np.ones((2, 2)), Box((0, 0), (2, 2)), Box((0, 0), (2, 2)))
     if _ctx().world_size > 1 else dist.reshape(np.ones((2, 2)), Box((1, 0), (3, 2)), Box((0, 0), (2, 2)))),
    ("reshape: not a box", OptionsError, "output_box", lambda: dist.reshape(np.ones((2, 2)), Box((0, 0), (2, 2)), 5)),
    ("Box: upper below lower", OptionsError, "upper", lambda: Box((2, 2), (1, 3))),
    ("local_shape: rank out of range", OptionsError, "rank",
     lambda: dist.local_shape((8, 8), Slab.X, rank=5, world_size=2)),
]


def _matrix(global_shape=(6, 4), distribution=Slab.X, dtype=np.float64):
    """This rank's piece of a matmul operand (cuBLASMp's slab rule)."""
    shape = dlinalg.local_shape(global_shape, distribution)
    return np.arange(np.prod(shape), dtype=np.float64).reshape(shape).astype(dtype) + 1


def _mm(a=None, b=None, c=None, **kwargs):
    """A valid (6, 4) @ (4, 5) call over the world's row slabs, with ``kwargs`` overriding it."""
    kwargs.setdefault("distributions", (Slab.X, Replicated(), Slab.X))
    kwargs.setdefault("options", {"force_distributed": True})
    a = _matrix() if a is None else a
    b = _matrix((4, 5), Replicated()) if b is None else b
    return dlinalg.matmul(a, b, c, **kwargs)


def _matmul_plan():
    return dlinalg.Matmul(_matrix(), _matrix((4, 5), Replicated()), distributions=(Slab.X, Replicated(), Slab.X),
                          options=_force())


def _freed_matmul():
    plan = _matmul_plan()
    plan.free()
    plan.plan()


def _unplanned_matmul():
    with _matmul_plan() as plan:
        plan.execute()


def _reset_c_not_given():
    with _matmul_plan() as plan:
        plan.reset_operands(c=_matrix((6, 5)))


def _matmul_reset_wrong_shape_one_rank():
    with _matmul_plan() as plan:
        plan.plan()
        plan.reset_operands(a=_on_rank(-1, lambda: np.ones((9, 4)), _matrix))


def _freed_matmul_one_rank():
    with _matmul_plan() as plan:
        plan.plan()
        _on_rank(0, plan.free, lambda: None)
        plan.execute()


def _matmul_reset_alpha_differs_one_rank():
    with _matmul_plan() as plan:
        plan.plan()
        plan.reset_operands(alpha=_on_rank(-1, lambda: 3.0, lambda: 2.0))


def _matmul_wrong_slab_extent_one_rank():
    good = _matrix()
    _mm(a=_on_rank(-1, lambda: np.ones((good.shape[0] + 2, 4)), lambda: good))


MATMUL_ROWS = [
    ("matmul: 3-D operand", OperandError, "a", lambda: _mm(a=np.ones((2, 3, 4)))),
    ("matmul: int operand", UnsupportedOperandError, "a", lambda: _mm(a=_matrix(dtype=np.int64))),
    ("matmul: dtypes differ", OperandError, "b", lambda: _mm(b=_matrix((4, 5), Replicated(), np.float32))),
    ("matmul: not C-contiguous", UnsupportedLayoutError, "b", lambda: _mm(b=np.ones((5, 4)).T)),
    ("matmul: no distributions", OptionsError, "distributions", lambda: _mm(distributions=None)),
    ("matmul: two distributions", OptionsError, "distributions", lambda: _mm(distributions=(Slab.X, Slab.X))),
    ("matmul: unknown distribution", OptionsError, "distributions",
     lambda: _mm(distributions=(Slab.X, "Z", Slab.X))),
    ("matmul: grid of another size", OptionsError, "distributions",
     lambda: _mm(distributions=(Slab.X, Replicated(), BlockCyclic((5, 1), (1, 1))))),
    ("matmul: inner extents differ", OperandError, "b", lambda: _mm(b=_matrix((3, 5), Replicated()))),
    ("matmul: c of another global shape", OperandError, "c", lambda: _mm(c=_matrix((6, 6)), beta=1)),
    ("matmul: beta without c", OptionsError, "beta", lambda: _mm(beta=2.0)),
    ("matmul: complex alpha for real operands", OptionsError, "alpha", lambda: _mm(alpha=1j)),
    ("matmul: unknown epilog", OptionsError, "epilog", lambda: _mm(epilog="SWISH")),
    ("matmul: epilog it does not fuse", OptionsError, "epilog", lambda: _mm(epilog="DRELU")),
    ("matmul: epilog for complex operands", OptionsError, "epilog",
     lambda: _mm(a=_matrix(dtype=np.complex128), b=_matrix((4, 5), Replicated(), np.complex128), epilog="RELU")),
    ("matmul: bias missing", OptionsError, "epilog_inputs", lambda: _mm(epilog="BIAS")),
    ("matmul: bias of the wrong length", OperandError, "epilog_inputs['bias']",
     lambda: _mm(epilog="BIAS", epilog_inputs={"bias": np.ones(4)})),
    ("matmul: bias of another dtype", OperandError, "epilog_inputs['bias']",
     lambda: _mm(epilog="GELU_BIAS", epilog_inputs={"bias": np.ones(5, np.float32)})),
    ("matmul: unknown option", OptionsError, "options", lambda: _mm(options={"speed": 11})),
    ("matmul: bad option value", OptionsError, "options.algorithm", lambda: _mm(options={"algorithm": "fast"})),
    ("matmul: compute type of another precision", OptionsError, "options.compute_type",
     lambda: _mm(options={"compute_type": "32F"})),
    ("matmul: stream on the CPU", OptionsError, "stream", lambda: _mm(stream=0)),
    ("Matmul: execute before plan", InvalidStateError, None, _unplanned_matmul),
    ("Matmul: freed", InvalidStateError, None, _freed_matmul),
    ("Matmul: reset of a c not given", OperandError, "c", _reset_c_not_given),
    ("matmul local_shape: rank out of range", OptionsError, "rank",
     lambda: dlinalg.local_shape((8, 8), Slab.X, rank=5, world_size=2)),
    ("matmul local_shape: 3-D global shape", OptionsError, "global_shape",
     lambda: dlinalg.local_shape((8, 8, 8), Slab.X)),
    ("one rank: matmul distributions differ", OperandError, "distributions",
     lambda: _mm(distributions=_on_rank(0, lambda: (Slab.X, Replicated(), Replicated()),
                                        lambda: (Slab.X, Replicated(), Slab.X)))),
    ("one rank: matmul alpha differs", OperandError, "alpha", lambda: _mm(alpha=_on_rank(-1, lambda: 2, lambda: 1))),
    ("one rank: matmul wrong slab extent", OperandError, "a", _matmul_wrong_slab_extent_one_rank),
    ("one rank: matmul beta differs", OperandError, "beta",
     lambda: _mm(c=_matrix((6, 5)), beta=_on_rank(0, lambda: 0.5, lambda: 1.5))),
    ("one rank: matmul alpha NaN on one rank", OperandError, "alpha",
     lambda: _mm(alpha=_on_rank(-1, lambda: float("nan"), lambda: 1.0))),
    ("one rank: matmul options differ", OperandError, "options",
     lambda: _mm(options={"force_distributed": True,
                          "algorithm": _on_rank(0, lambda: "default", lambda: "no_overlap")})),
    ("one rank: Matmul.reset_operands alpha differs", OperandError, "alpha", _matmul_reset_alpha_differs_one_rank),
    ("one rank: Matmul freed, then execute", InvalidStateError, None, _freed_matmul_one_rank),
    ("one rank: matmul epilog differs", OperandError, "epilog",
     lambda: _mm(epilog=_on_rank(0, lambda: "RELU", lambda: "GELU"))),
    ("one rank: matmul bias of another dtype", OperandError, "epilog_inputs['bias']",
     lambda: _mm(epilog="BIAS", epilog_inputs={"bias": _on_rank(-1, lambda: np.ones(5, np.float32),
                                                                lambda: np.ones(5))})),
    ("one rank: Matmul reset_operands shape", OperandError, "a", _matmul_reset_wrong_shape_one_rank),
]

ROWS = FFT_ROWS + MATMUL_ROWS


def run(seed):
    """{row id: (type name, message) raised, or ("FAILED", why)} on this rank."""
    del seed  # the rows are fixed calls
    outcomes = {}
    for name, error_type, argument, call in ROWS:
        if name.startswith("one rank:") and _ctx().world_size == 1:
            outcomes[name] = ("SKIPPED", "needs two ranks")
            continue
        try:
            call()
        except NvmathxError as error:
            message = str(error)
            ok = isinstance(error, error_type) and (argument is None or message.startswith(f"{argument}:"))
            pickle.dumps(error)
            outcomes[name] = (type(error).__name__, message) if ok else ("FAILED", f"{type(error).__name__}: {message}")
        except Exception:  # noqa: BLE001
            outcomes[name] = ("FAILED", traceback.format_exc(limit=5))
        else:
            outcomes[name] = ("FAILED", "returned without raising")
    return outcomes
