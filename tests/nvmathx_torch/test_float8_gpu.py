"""Float8 training and CUDA graphs of nvmathx.torch on the GPU: outputs and gradients against the
float64 float8 model (same quantised values) and against the bfloat16 layer, amaxes and scales
against torch, the history across steps, state_dict, torch.compile, graph capture and replay of
whole training steps, no host synchronisation, and peak memory."""

import copy

import pytest

torch = pytest.importorskip("torch")

from helpers.float8_reference import Float8Model  # noqa: E402
from helpers.torch_layers import generator, randn, relative_error  # noqa: E402
from nvmathx.torch import Float8Recipe, FusedLinear, FusedMLP  # noqa: E402

pytestmark = pytest.mark.gpu

DEVICE = "cuda"
# Against the float64 model of the same float8 values: the GEMMs accumulate in float32 (the forward
# in cuBLASLt's fast float8 mode) and round to bfloat16; a rounding that moves a value across a
# float8 boundary flips one code. Against the unquantised bfloat16 layer: float8's 3 (e4m3) and
# 2 (e5m2) mantissa bits; with ReLU also the derivative's mask, which flips for pre-activations
# near zero that float8 rounds across it (on the H100: input gradients 0.155 to 0.24 from the
# bfloat16 layer's while matching the float8 model to 2e-2).
TOLERANCE_MODEL, TOLERANCE_BF16 = 2e-2, {"gelu": 0.15, "relu": 0.3}


@pytest.fixture(autouse=True)
def _float8_capable():
    if torch.cuda.get_device_capability() < (8, 9):
        pytest.skip("float8 GEMMs need compute capability 8.9 or newer")


def _block(seed, d_model, hidden, recipe, activation="gelu"):
    torch.manual_seed(seed)
    block = FusedMLP(d_model, hidden, activation=activation, device=DEVICE, dtype=torch.bfloat16, fp8=recipe)
    with torch.no_grad():
        block.fc1.bias.normal_()
        block.fc2.bias.normal_()
    return block


def _step(block, x, grad):
    x = x.detach().clone().requires_grad_(True)
    block.zero_grad(set_to_none=True)
    out = block(x)
    out.backward(grad)
    return [out, x.grad] + [block.fc1.weight.grad, block.fc1.bias.grad, block.fc2.weight.grad, block.fc2.bias.grad]


@pytest.mark.parametrize("activation", ["gelu", "relu"])
@pytest.mark.parametrize("scaling", ["delayed", "dynamic"])
@pytest.mark.parametrize("shape", [(256, 128, 512), (1024, 256, 1024)])
def test_steps_match_the_float8_model_and_the_bf16_layer(seed, activation, scaling, shape):
    tokens, d_model, hidden = shape
    recipe = Float8Recipe(scaling=scaling, amax_history_len=8)
    block = _block(seed, d_model, hidden, recipe, activation)
    bf16 = copy.deepcopy(block)
    bf16.fp8, bf16.fp8_state = None, None
    model = Float8Model("mlp", scaling=scaling, history_len=8)
    gen = generator(seed)
    for step in range(3):
        x = randn(gen, (tokens, d_model), torch.bfloat16, DEVICE, scale=1.0 + step)
        grad = randn(gen, (tokens, d_model), torch.bfloat16, DEVICE, scale=1e-3)
        params = [p.detach().clone() for p in (block.fc1.weight, block.fc1.bias, block.fc2.weight, block.fc2.bias)]
        results = _step(block, x, grad)
        expected = model.mlp(x, *params, activation, grad)
        unquantised = _step(bf16, x, grad)
        for index, (got, want, loose) in enumerate(zip(results, expected, unquantised)):
            assert got.dtype == torch.bfloat16 and got.is_cuda, index
            assert relative_error(got, want) < TOLERANCE_MODEL, (step, index, relative_error(got, want))
            assert relative_error(got, loose) < TOLERANCE_BF16[activation], (step, index, relative_error(got, loose))
        # Scales from the operands' amaxes are the model's; those of the hidden activation and its
        # gradient follow GEMM results, which the GPU accumulates in float32 (the model in float64).
        state, scales = block.fp8_state, model.scales()
        for name in state.slots:
            rtol = 2e-2 if name in ("hidden", "grad_hidden") else 1e-6
            assert float(state.scale[state.slot(name)]) == pytest.approx(scales[state.slot(name)], rel=rtol), name
        with torch.no_grad():
            for p, q in zip(block.parameters(), bf16.parameters()):
                p -= 0.1 * p.grad
                q.copy_(p)


def test_amaxes_and_scales_are_torchs(seed):
    """Row 0 of the history holds this step's amaxes as torch computes them; scale = 448 / amax for
    the first (dynamic) step of e4m3 tensors, 57344 / amax for e5m2 gradients; scale_inv = 1 / scale."""
    block = _block(seed, 128, 256, Float8Recipe())
    gen = generator(seed)
    x, grad = randn(gen, (64, 128), torch.bfloat16, DEVICE), randn(gen, (64, 128), torch.bfloat16, DEVICE)
    _step(block, x, grad)
    state = block.fp8_state
    row = state.amax_history[0]
    z = torch.nn.functional.linear(x.float(), block.fc1.weight.float(), block.fc1.bias.float())
    expected = {"input": x.float().abs().max(), "fc1.weight": block.fc1.weight.float().abs().max(),
                "fc2.weight": block.fc2.weight.float().abs().max(), "grad_output": grad.float().abs().max()}
    for name, amax in expected.items():
        assert float(row[state.slot(name)]) == pytest.approx(float(amax), rel=1e-6), name
        largest = 57344.0 if name.startswith("grad") else 448.0
        assert float(state.scale[state.slot(name)]) == pytest.approx(largest / float(amax), rel=1e-6), name
    hidden_amax = torch.nn.functional.gelu(z, approximate="tanh").abs().max()
    assert float(row[state.slot("hidden")]) == pytest.approx(float(hidden_amax), rel=2e-2)
    torch.testing.assert_close(state.scale_inv, 1 / state.scale)


def test_a_zero_batch_gives_finite_scales_and_results(seed):
    """An all-zero batch: amax 0 never makes a scale infinite or NaN; outputs and gradients are finite."""
    block = _block(seed, 128, 256, Float8Recipe())
    zeros = torch.zeros(64, 128, dtype=torch.bfloat16, device=DEVICE)
    for _ in range(2):
        results = _step(block, zeros, zeros)
        assert all(bool(t.isfinite().all()) for t in results)
    assert bool(block.fp8_state.scale.isfinite().all()) and bool((block.fp8_state.scale > 0).all())


def test_history_rolls_across_steps(seed):
    block = _block(seed, 128, 256, Float8Recipe(amax_history_len=4))
    gen = generator(seed)
    amaxes = []
    for step in range(5):
        x = randn(gen, (64, 128), torch.bfloat16, DEVICE, scale=2.0 ** step)
        _step(block, x, randn(gen, (64, 128), torch.bfloat16, DEVICE))
        amaxes.append(float(x.float().abs().max()))
    column = block.fp8_state.amax_history[:, block.fp8_state.slot("input")].tolist()
    assert column == [amaxes[4], amaxes[3], amaxes[2], amaxes[1]]
    assert float(block.fp8_state.scale[0]) == pytest.approx(448.0 / max(amaxes[1:4]), rel=1e-6)


def test_state_dict_round_trip(seed):
    block = _block(seed, 128, 256, Float8Recipe(amax_history_len=6))
    gen = generator(seed)
    batches = [(randn(gen, (64, 128), torch.bfloat16, DEVICE), randn(gen, (64, 128), torch.bfloat16, DEVICE))
               for _ in range(3)]
    for batch in batches[:2]:
        _step(block, *batch)
    twin = _block(seed + 1, 128, 256, Float8Recipe(amax_history_len=6))
    twin.load_state_dict(block.state_dict())
    for a, b in zip(_step(block, *batches[2]), _step(twin, *batches[2])):
        assert torch.equal(a, b)


@pytest.mark.parametrize("fp8", [False, True])
def test_graph_replay_of_training_steps_equals_eager(seed, fp8):
    """Forward, backward and an SGD step captured once in a CUDA graph and replayed on new batches
    give the eager steps' parameters bit for bit."""
    recipe = Float8Recipe() if fp8 else None
    torch.manual_seed(seed)
    eager_block = FusedMLP(128, 512, device=DEVICE, dtype=torch.bfloat16, fp8=recipe)
    graphed_block = copy.deepcopy(eager_block)
    eager_opt = torch.optim.SGD(eager_block.parameters(), lr=0.1)
    graphed_opt = torch.optim.SGD(graphed_block.parameters(), lr=0.1)  # no step counter: capturable as it is
    gen = generator(seed)
    batches = [(randn(gen, (256, 128), torch.bfloat16, DEVICE), randn(gen, (256, 128), torch.bfloat16, DEVICE))
               for _ in range(6)]
    static_x, static_grad = batches[0][0].clone(), batches[0][1].clone()

    def step(block, optimizer, x, grad):
        optimizer.zero_grad(set_to_none=False)
        block(x).backward(grad)
        optimizer.step()

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up as torch's documentation does: plans, workspaces, grads
        for x, grad in batches[:3]:
            static_x.copy_(x)
            static_grad.copy_(grad)
            step(graphed_block, graphed_opt, static_x, static_grad)
    torch.cuda.current_stream().wait_stream(side)
    for x, grad in batches[:3]:
        step(eager_block, eager_opt, x, grad)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step(graphed_block, graphed_opt, static_x, static_grad)
    for x, grad in batches[3:]:
        static_x.copy_(x)
        static_grad.copy_(grad)
        graph.replay()
        step(eager_block, eager_opt, x, grad)
        for a, b in zip(graphed_block.parameters(), eager_block.parameters()):
            assert torch.equal(a, b)
    if fp8:
        assert torch.equal(graphed_block.fp8_state.amax_history, eager_block.fp8_state.amax_history)


def test_make_graphed_callables(seed):
    torch.manual_seed(seed)
    layer = FusedLinear(128, 256, activation="gelu", device=DEVICE, dtype=torch.bfloat16, fp8=Float8Recipe())
    reference = copy.deepcopy(layer)
    sample = torch.randn(64, 128, device=DEVICE, dtype=torch.bfloat16, requires_grad=True)
    graphed = torch.cuda.make_graphed_callables(layer, (sample,))
    x = torch.randn(64, 128, device=DEVICE, dtype=torch.bfloat16, requires_grad=True)
    out = graphed(x)
    out.sum().backward()
    assert out.shape == (64, 256) and bool(out.isfinite().all()) and x.grad is not None
    expected = reference(x.detach())
    assert relative_error(out, expected) < TOLERANCE_BF16["gelu"]


def test_a_float8_step_does_not_synchronise(seed):
    block = _block(seed, 128, 256, Float8Recipe())
    gen = generator(seed)
    batch = (randn(gen, (64, 128), torch.bfloat16, DEVICE), randn(gen, (64, 128), torch.bfloat16, DEVICE))
    _step(block, *batch)  # plans, kernels compiled, first (dynamic) step
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        _step(block, *batch)
    finally:
        torch.cuda.set_sync_debug_mode("default")


# fc2's weight gradient after the hidden gradient's cast (the first shape), and before it
@pytest.mark.parametrize("tokens, d_model, hidden", [(4096, 1024, 4096), (16384, 768, 3072)])
def test_peak_memory_is_at_most_torch_eager_bf16(seed, tokens, d_model, hidden):
    block = _block(seed, d_model, hidden, Float8Recipe())
    torch_block = torch.nn.Sequential(torch.nn.Linear(d_model, hidden), torch.nn.GELU(approximate="tanh"),
                                      torch.nn.Linear(hidden, d_model)).to(DEVICE, torch.bfloat16)
    x = torch.randn(tokens, d_model, device=DEVICE, dtype=torch.bfloat16, requires_grad=True)
    grad = torch.randn(tokens, d_model, device=DEVICE, dtype=torch.bfloat16)

    def peak(module):
        for _ in range(2):
            module.zero_grad(set_to_none=True)
            x.grad = None
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
            module(x).backward(grad)
            torch.cuda.synchronize()
        return torch.cuda.max_memory_allocated() - base

    assert peak(block) <= peak(torch_block)


@pytest.mark.parametrize("mode, fp8", [("default", True), ("reduce-overhead", False), ("reduce-overhead", True)])
def test_compile_fullgraph_equals_eager(seed, mode, fp8):
    """torch.compile(fullgraph=True) traces the layers as custom ops; with mode="reduce-overhead"
    (CUDA graph trees) it replays them. Outputs and gradients are eager's (dynamic scaling for
    float8, so both runs scale every step alike)."""
    eager_block = _block(seed, 128, 256, Float8Recipe(scaling="dynamic") if fp8 else None)
    compiled_block = copy.deepcopy(eager_block)
    compiled = torch.compile(compiled_block, mode=mode, fullgraph=True)
    gen = generator(seed)
    for _ in range(4):
        x, grad = randn(gen, (64, 128), torch.bfloat16, DEVICE), randn(gen, (64, 128), torch.bfloat16, DEVICE)
        expected = _step(eager_block, x, grad)
        x_compiled = x.clone().requires_grad_(True)
        compiled_block.zero_grad(set_to_none=True)
        out = compiled(x_compiled)
        out.backward(grad)
        got = [out.clone(), x_compiled.grad] + [p.grad for p in (compiled_block.fc1.weight, compiled_block.fc1.bias,
                                                                  compiled_block.fc2.weight, compiled_block.fc2.bias)]
        for a, b in zip(got, expected):
            torch.testing.assert_close(a, b, rtol=1e-2, atol=1e-3)


def test_a_long_history_rolls_across_the_lanes(seed):
    """The default 1024-step history: 40 steps cross the first lane's block of 32 rows; every row
    holds its step's amax, newest first, and the rest stay zero."""
    torch.manual_seed(seed)
    layer = FusedLinear(16, 16, device=DEVICE, dtype=torch.bfloat16, fp8=Float8Recipe())
    gen = generator(seed)
    amaxes = []
    for step in range(40):
        x = randn(gen, (16, 16), torch.bfloat16, DEVICE, scale=1.0 + step / 8)
        layer(x).sum().backward()
        amaxes.append(float(x.float().abs().max()))
    column = layer.fp8_state.amax_history[:, layer.fp8_state.slot("input")].tolist()
    assert column[:40] == amaxes[::-1] and not any(column[40:])
    assert float(layer.fp8_state.scale[0]) == pytest.approx(448.0 / max(amaxes[:39]), rel=1e-6)


def _launch_cast(x, aux, op, flags, out_dtype, scale):
    """cast_transpose on the GPU: (out, out_t, amax, partials) of ``x`` (rows x cols, on the device)."""
    import numpy as np

    from nvmathx._core.streams import resolve_stream
    from nvmathx.torch._column_sums import vector_aligned
    from nvmathx.torch._float8 import kernels

    rows, cols = x.shape
    out = torch.full((rows, cols), 0xAB, dtype=torch.uint8, device=DEVICE)
    out_t = torch.full((cols, rows), 0xCD, dtype=torch.uint8, device=DEVICE)
    scales = torch.tensor([scale, 0.0], dtype=torch.float32, device=DEVICE)
    amax = torch.zeros(1, dtype=torch.int32, device=DEVICE)
    partials = torch.full((-(-rows // kernels.TILE_ROWS), cols), float("nan"), dtype=torch.float32, device=DEVICE)
    aligned = [t is not None and vector_aligned(t) for t in (x, aux)]
    stream = resolve_stream(torch.cuda.current_stream().cuda_stream, torch.cuda.current_device())
    name = kernels.cast_transpose_name(str(x.dtype).removeprefix("torch."), out_dtype)
    kernels.launch(stream, torch.cuda.current_device(), name, kernels.tile_count(rows, cols) * kernels.TILE_THREADS,
                   x.data_ptr(), np.int64(x.stride(0)), aux.data_ptr() if aux is not None else 0,
                   np.int64(aux.stride(0) if aux is not None else 0), np.int64(rows), np.int64(cols),
                   np.int32(kernels.OPS[op]), np.int32(flags), out.data_ptr(), out_t.data_ptr(), scales.data_ptr(),
                   scales.data_ptr() + 4, amax.data_ptr(), amax.data_ptr(), np.float32(1.0), partials.data_ptr(),
                   np.int32(int(aligned[0]) | (int(aligned[1]) << 1)))
    torch.cuda.synchronize()
    return out, out_t, amax.view(torch.float32)[0].item(), partials


@pytest.mark.parametrize("in_dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("op", ["none", "relu", "drelu"])
@pytest.mark.parametrize("shape", [(256, 16), (256, 64), (1024, 392), (4176, 1040)])
def test_cast_kernel_bytes_are_torchs_float8_casts(seed, in_dtype, op, shape):
    """Every byte of the GPU cast and its transpose is torch's saturated float8 cast of op(x) * scale,
    across whole and partial 64 x 128 tiles; amax and the bias-gradient partials against torch."""
    from nvmathx.torch._float8 import kernels

    gen = generator(seed)
    rows, cols = shape
    x = randn(gen, (rows, cols + 8), in_dtype, DEVICE, scale=3.0)[:, :cols]  # a row stride beyond cols
    aux = randn(gen, (rows, cols), in_dtype, DEVICE) if op == "drelu" else None
    scale = 37.5
    flags = kernels.WRITE | kernels.WRITE_T | kernels.AMAX | kernels.DBIAS
    for out_dtype, largest in (("float8_e4m3fn", 448.0), ("float8_e5m2", 57344.0)):
        out, out_t, amax, partials = _launch_cast(x, aux, op, flags, out_dtype, scale)
        values = x.double()
        if op == "relu":
            values = values.clamp(min=0)
        elif op == "drelu":
            values = torch.where(aux.double() > 0, values, 0.0)
        values = values.float()
        expected = (values * scale).clamp(-largest, largest).to(getattr(torch, out_dtype)).view(torch.uint8)
        assert torch.equal(out, expected), out_dtype
        assert torch.equal(out_t, expected.T), out_dtype
        assert amax == values.abs().max().item()
        blocks = values.double().reshape(-1, kernels.TILE_ROWS, cols).sum(1) if rows % kernels.TILE_ROWS == 0 \
            else torch.stack([b.sum(0) for b in values.double().split(kernels.TILE_ROWS)])
        assert torch.allclose(partials.double(), blocks, rtol=1e-4, atol=1e-3), out_dtype


def test_autocast_steps_use_the_updated_weights(seed):
    """float32 parameters under autocast, three optimizer steps: every step's float8 forward is the
    float8 model's of the current weights (torch's caching allocator puts autocast's per-call
    bfloat16 weight copies at the same address at version 0; a cache keyed by address served the
    first step's float8 weights ever after)."""
    torch.manual_seed(seed)
    block = FusedMLP(128, 256, device=DEVICE, fp8=Float8Recipe(scaling="dynamic"))
    optimizer = torch.optim.SGD(block.parameters(), lr=0.5)
    gen = generator(seed)
    for _ in range(3):
        x = randn(gen, (64, 128), torch.float32, DEVICE)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out = block(x)
        w1, b1, w2, b2 = (p.detach() for p in block.parameters())
        expected = Float8Model("mlp", scaling="dynamic").mlp(
            x.to(torch.bfloat16), w1, b1.to(torch.bfloat16), w2, b2.to(torch.bfloat16), "gelu",
            torch.zeros(64, 128, dtype=torch.bfloat16, device=DEVICE))[0]
        assert relative_error(out, expected) < TOLERANCE_MODEL
        optimizer.zero_grad()
        out.float().square().sum().backward()
        optimizer.step()
