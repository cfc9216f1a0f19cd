"""MLP suite: forward + backward of the transformer feed-forward block (Linear, tanh GELU, Linear) in
bfloat16, nvmathx.torch's fused layers beside torch's.

Cases ``mlp_fwd_bwd_{tokens}x{d_model}x{hidden}_bf16``. Every column times one training step of the
block: the previous step's gradients dropped (``grad = None``, as ``optimizer.zero_grad()`` does, so
no accumulation kernel runs), ``out = block(x)`` with ``x.requires_grad``, then
``out.backward(grad)`` with a fixed random bfloat16 ``grad``. Columns:

- ``nvmathx``: :class:`nvmathx.torch.FusedMLP` (six cuBLASLt GEMMs with fused epilogs).
- ``nvmathx.autotuned``: the same with :func:`nvmathx.torch.set_autotune` on (each GEMM's
  candidates timed on its first call, during setup; the fastest kept).
- ``torch``: ``nn.Linear``, ``F.gelu(approximate="tanh")``, ``nn.Linear`` in eager mode.
- ``torch.compile``: that torch block under ``torch.compile`` (default mode; compiled during
  setup, untimed).
- ``torch.gemm_only``: the block's six GEMMs alone (no bias, no activation, no autograd), the
  floor of any fused version.
- ``nvmathx.fp8``: ``FusedMLP(..., fp8=Float8Recipe())`` (delayed scaling, e4m3 forward, e5m2
  gradients, eager: not graphed); the recipe's first (dynamic) step runs during setup.
- ``nvmathx.graphed`` and ``torch.graphed``: ``nvmathx`` and ``torch``'s blocks through
  ``torch.cuda.make_graphed_callables`` (forward and backward each one CUDA graph replay).
- ``nvmathx.fp8.graphed``: the ``nvmathx.fp8`` block the same way (delayed scaling: the scale
  updates are kernels the graphs replay). Where the eager float8 step is host-bound (the smaller
  shapes), this is its GPU time.
- ``torchao.float8`` (where torchao is installed): torch's block converted by
  ``torchao.float8.convert_to_float8_training`` (tensorwise dynamic scaling) under ``torch.compile``.

Memory, in the case's ``params``: ``peak_bytes[column]`` is ``torch.cuda.max_memory_allocated()``
over one step (statistics reset before it, after a warm-up step) minus what was allocated when it
started (for the graphed columns, whose replays allocate nothing, the peak over
``make_graphed_callables``' warm-up and capture: the memory the graphs keep);
``retained_bytes[column]`` is what a column's step leaves allocated beyond its own parameters,
inputs and (dropped) gradients. Both count torch's caching allocator only (cuBLASLt
workspaces of nvmathx come from cuda.core's memory resource). ``host_us[column]`` is the median
host time of one step's calls (``time.perf_counter`` around ``step()`` for 20 steps queued without
synchronising: what the step costs the CPU while the GPU is busy). The setups fill these dicts,
which the runner's record shares with the case.
"""

from __future__ import annotations

import statistics
import time

from benchmarks import Case, import_or_skip, tflops

__all__ = ["cases"]

# (tokens, d_model, hidden)
_SHAPES = ((16384, 1024, 4096), (32768, 768, 3072), (8192, 4096, 16384))



def _torch_mlp(torch, d_model, hidden, device):
    """torch's block: nn.GELU(approximate="tanh") is F.gelu(x, approximate="tanh")."""
    nn = torch.nn
    return nn.Sequential(nn.Linear(d_model, hidden, device=device, dtype=torch.bfloat16),
                         nn.GELU(approximate="tanh"),
                         nn.Linear(hidden, d_model, device=device, dtype=torch.bfloat16))


def _inputs(torch, ctx, tokens, d_model, device):
    gen = torch.Generator(device=device).manual_seed(int(ctx.rng.integers(1 << 31)))
    x = torch.randn(tokens, d_model, device=device, dtype=torch.bfloat16, generator=gen).requires_grad_()
    grad = torch.randn(tokens, d_model, device=device, dtype=torch.bfloat16, generator=gen)
    return x, grad


def _training_step(block, x, grad, params=None):
    params = list(block.parameters()) if params is None else params

    def step():
        for param in params:
            param.grad = None
        x.grad = None
        block(x).backward(grad)

    return step, params


def _record_memory(torch, step, drop_gradients, column, memory):
    """Run a warm-up step, then measure one step's peak (and what a step leaves behind)."""
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    step()
    drop_gradients()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    start = torch.cuda.memory_allocated()
    step()
    torch.cuda.synchronize()
    memory["peak_bytes"][column] = torch.cuda.max_memory_allocated() - start
    drop_gradients()
    torch.cuda.synchronize()
    memory["retained_bytes"][column] = torch.cuda.memory_allocated() - before


def _record_host_time(torch, step, column, memory, steps=20):
    """The median host time of one step's calls, 20 steps queued back to back."""
    torch.cuda.synchronize()
    durations = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        durations.append(time.perf_counter() - start)
    torch.cuda.synchronize()
    memory["host_us"][column] = round(statistics.median(durations) * 1e6, 1)


def _module_setup(ctx, shape, memory, column, build, graphed=False):
    def setup():
        torch = import_or_skip("torch")
        tokens, d_model, hidden = shape
        device = f"cuda:{ctx.device_id}"
        torch.manual_seed(int(ctx.rng.integers(1 << 31)))
        block = build(torch, d_model, hidden, device)
        x, grad = _inputs(torch, ctx, tokens, d_model, device)
        params = list(block.parameters())
        capture_peak = 0
        if graphed:  # make_graphed_callables warms up (three iterations) and captures both passes
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            start = torch.cuda.memory_allocated()
            block = torch.cuda.make_graphed_callables(block, (x,))
            torch.cuda.synchronize()
            capture_peak = torch.cuda.max_memory_allocated() - start
        step, _ = _training_step(block, x, grad, params)

        def drop_gradients():
            for tensor in [*params, x]:
                tensor.grad = None

        _record_memory(torch, step, drop_gradients, column, memory)
        # a replay allocates nothing: a graphed step's memory is what its capture set aside
        memory["peak_bytes"][column] = max(memory["peak_bytes"][column], capture_peak)
        _record_host_time(torch, step, column, memory)
        return step

    return setup


def _nvmathx_block(torch, d_model, hidden, device):
    from nvmathx.torch import FusedMLP

    return FusedMLP(d_model, hidden, activation="gelu", device=device, dtype=torch.bfloat16)


def _autotuned_setup(ctx, shape, memory):
    """FusedMLP with nvmathx.torch.set_autotune on while its steps run (the first step times the
    candidates of its six GEMMs, during setup)."""
    setup = _module_setup(ctx, shape, memory, "nvmathx.autotuned", _nvmathx_block)

    def autotuned_setup():
        from nvmathx.torch import set_autotune

        previous = set_autotune(True)
        try:
            step = setup()
        finally:
            set_autotune(previous)

        def autotuned_step():
            previous = set_autotune(True)
            step()
            set_autotune(previous)

        return autotuned_step

    return autotuned_setup


def _fp8_block(torch, d_model, hidden, device):
    from nvmathx.torch import Float8Recipe, FusedMLP

    return FusedMLP(d_model, hidden, activation="gelu", device=device, dtype=torch.bfloat16, fp8=Float8Recipe())


def _torchao_block(torch, d_model, hidden, device):
    float8 = import_or_skip("torchao.float8")
    block = float8.convert_to_float8_training(_torch_mlp(torch, d_model, hidden, device))  # tensorwise dynamic
    return torch.compile(block)


def _compiled_block(torch, d_model, hidden, device):
    return torch.compile(_torch_mlp(torch, d_model, hidden, device))  # its parameters are the block's


def _gemm_only_setup(ctx, shape, memory):
    def setup():
        torch = import_or_skip("torch")
        tokens, d_model, hidden = shape
        device = f"cuda:{ctx.device_id}"
        gen = torch.Generator(device=device).manual_seed(int(ctx.rng.integers(1 << 31)))
        w1 = torch.randn(hidden, d_model, device=device, dtype=torch.bfloat16, generator=gen) * d_model**-0.5
        w2 = torch.randn(d_model, hidden, device=device, dtype=torch.bfloat16, generator=gen) * hidden**-0.5
        x, grad = _inputs(torch, ctx, tokens, d_model, device)
        x = x.detach()

        def step():  # nn.Linear's layouts: x @ w.T forward; grad @ w, grad.T @ input backward
            h = x @ w1.T
            h @ w2.T
            dh = grad @ w2
            grad.T @ h
            dh.T @ x
            dh @ w1

        _record_memory(torch, step, lambda: None, "torch.gemm_only", memory)
        return step

    return setup


def _case(ctx, tokens, d_model, hidden):
    if ctx.quick:
        tokens, d_model, hidden = tokens // 8, d_model // 8, hidden // 8
    shape = (tokens, d_model, hidden)
    memory = {"peak_bytes": {}, "retained_bytes": {}, "host_us": {}}
    setups = {
        "nvmathx": _module_setup(ctx, shape, memory, "nvmathx", _nvmathx_block),
        "nvmathx.autotuned": _autotuned_setup(ctx, shape, memory),
        "torch": _module_setup(ctx, shape, memory, "torch", _torch_mlp),
        "torch.compile": _module_setup(ctx, shape, memory, "torch.compile", _compiled_block),
        "torch.gemm_only": _gemm_only_setup(ctx, shape, memory),
        "nvmathx.fp8": _module_setup(ctx, shape, memory, "nvmathx.fp8", _fp8_block),
        "nvmathx.graphed": _module_setup(ctx, shape, memory, "nvmathx.graphed", _nvmathx_block, graphed=True),
        "torch.graphed": _module_setup(ctx, shape, memory, "torch.graphed", _torch_mlp, graphed=True),
        "nvmathx.fp8.graphed": _module_setup(ctx, shape, memory, "nvmathx.fp8.graphed", _fp8_block, graphed=True),
        "torchao.float8": _module_setup(ctx, shape, memory, "torchao.float8", _torchao_block),
    }
    params = {"tokens": tokens, "d_model": d_model, "hidden": hidden, "dtype": "bfloat16", "activation": "gelu_tanh",
              **memory}
    return Case(f"mlp_fwd_bwd_{tokens}x{d_model}x{hidden}_bf16", "ms", setups, params=params,
                derive=tflops(12 * tokens * d_model * hidden),
                note="one training step of Linear + GELU(tanh) + Linear: grads dropped, forward, backward(grad); "
                     "TFLOP/s count the six GEMMs")


def cases(ctx):
    return [_case(ctx, *shape) for shape in _SHAPES]
