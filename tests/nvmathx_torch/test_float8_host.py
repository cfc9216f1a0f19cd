"""Float8 training of FusedLinear / FusedMLP through their GPU code path, run on the host: torch CPU
tensors presented as device tensors, cuBLASLt replaced by its numpy model (tests/linalg), the
float8 kernels compiled as host C++. Against an independent float64 model of the recipe
(helpers.float8_reference) computed from the same quantised values."""

import copy

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("ml_dtypes")

from helpers.fake_torch_device import present_torch_as_device  # noqa: E402
from helpers.float8_reference import Float8Model  # noqa: E402
from helpers.host_kernels import HostKernels  # noqa: E402
from helpers.torch_layers import generator, randn  # noqa: E402
from linalg._fake_cublaslt import install  # noqa: E402
from nvmathx.linalg import plan_cache  # noqa: E402
from nvmathx.torch import Float8Recipe, Float8State, FusedLinear, FusedMLP, fused_linear, fused_mlp  # noqa: E402
from nvmathx.torch import _gemm_calls as gemm_calls  # noqa: E402
from nvmathx.torch._float8 import dispatch, gemms, kernels  # noqa: E402
from nvmathx.torch._float8.state import SCALE_STRIDE  # noqa: E402

HOST = HostKernels(kernels.KERNEL_SOURCE, kernels.KERNEL_NAMES, "float8")


@pytest.fixture
def fake_gpu(monkeypatch):
    install(monkeypatch)
    present_torch_as_device(monkeypatch)
    monkeypatch.setattr(gemms, "device_id", lambda device: 0)
    monkeypatch.setattr(gemms, "current_stream_handle", lambda device: 7)
    monkeypatch.setattr(gemms, "capturing", lambda: False)
    monkeypatch.setattr(kernels, "launch", HOST.launch)
    monkeypatch.setattr(dispatch, "device_reason", lambda x: None)
    yield
    plan_cache.clear()


def _error(result, expected):
    result, expected = result.detach().double(), expected.detach().double()
    return float((result - expected).norm() / expected.norm())


def _mlp(seed, d_model, hidden, recipe, activation="gelu", dtype=torch.bfloat16):
    torch.manual_seed(seed)
    block = FusedMLP(d_model, hidden, activation=activation, dtype=dtype, fp8=recipe)
    with torch.no_grad():  # biases of order one, so that their gradients and sums matter
        block.fc1.bias.normal_()
        block.fc2.bias.normal_()
    return block


def _params(block):
    return [p.detach().clone() for p in (block.fc1.weight, block.fc1.bias, block.fc2.weight, block.fc2.bias)]


def _mlp_step(block, x, grad):
    x = x.detach().clone().requires_grad_(True)
    block.zero_grad(set_to_none=True)
    out = block(x)
    out.backward(grad)
    return out, x.grad, block.fc1.weight.grad, block.fc1.bias.grad, block.fc2.weight.grad, block.fc2.bias.grad


TOLERANCE = 5e-3  # the layer's dtype rounding of each GEMM result, and the rare float8 code that flips with it


@pytest.mark.parametrize("activation", ["gelu", "relu"])
@pytest.mark.parametrize("scaling", ["delayed", "dynamic"])
def test_mlp_steps_match_the_float8_model(fake_gpu, seed, activation, scaling):
    """Four training steps (with SGD between them): every output and gradient is the model's, and the
    scales the state records are the model's (the first step scales dynamically in both recipes)."""
    recipe = Float8Recipe(scaling=scaling, amax_history_len=3)
    block = _mlp(seed, 32, 48, recipe, activation)
    model = Float8Model("mlp", scaling=scaling, history_len=3)
    gen = generator(seed)
    for step in range(4):
        x = randn(gen, (64, 32), torch.bfloat16, scale=1.0 + step)
        grad = randn(gen, (64, 32), torch.bfloat16, scale=1e-3)
        w1, b1, w2, b2 = _params(block)
        results = _mlp_step(block, x, grad)
        expected = model.mlp(x, w1, b1, w2, b2, activation, grad)
        for name, result, want in zip(("out", "dx", "dw1", "db1", "dw2", "db2"), results, expected):
            assert result.dtype == torch.bfloat16 and result.shape == want.shape, name
            assert _error(result, want) < TOLERANCE, (step, name, _error(result, want))
        torch.testing.assert_close(block.fp8_state.scale.double(), torch.tensor(model.scales(), dtype=torch.float64),
                                   rtol=1e-5, atol=0)
        with torch.no_grad():
            for p in block.parameters():
                p -= 0.5 * p.grad


def test_delayed_history_holds_each_steps_amax(fake_gpu, seed):
    """Row 0 holds this step's amaxes (folded in before the next pass), older rows the earlier steps'."""
    block = _mlp(seed, 16, 32, Float8Recipe(amax_history_len=4))
    gen = generator(seed)
    amaxes = []
    for step in range(3):
        x = randn(gen, (32, 16), torch.bfloat16, scale=2.0 ** step)
        _mlp_step(block, x, randn(gen, (32, 16), torch.bfloat16))
        amaxes.append(float(x.float().abs().max()))
    history = block.fp8_state.amax_history[:, block.fp8_state.slot("input")]
    assert history.tolist() == [amaxes[2], amaxes[1], amaxes[0], 0.0]
    assert float(block.fp8_state.scale[0]) == pytest.approx(448.0 / amaxes[1], rel=1e-6)


@pytest.mark.parametrize("scaling", ["delayed", "dynamic"])
def test_scales_stay_finite_and_normal_at_the_largest_margin_and_amax(fake_gpu, seed, scaling):
    """An amax near bfloat16's largest with the largest margin would make the scale subnormal and its
    inverse infinite: both stay finite (the scale is held at float32's smallest normal)."""
    layer = FusedLinear(16, 16, dtype=torch.bfloat16, fp8=Float8Recipe(scaling=scaling, margin=16))
    x = randn(generator(seed), (16, 16), torch.bfloat16)
    x[0, 0] = 3.0e38
    for _ in range(2):
        layer(x)
    state = layer.fp8_state
    slot = state.slot("input")
    assert float(state.scale[slot]) == pytest.approx(torch.finfo(torch.float32).tiny)
    for values in (state.scale, state.scale_inv):
        assert bool(torch.isfinite(values).all()) and bool((values > 0).all())


@pytest.mark.parametrize("activation", [None, "relu", "gelu"])
def test_linear_step_matches_the_float8_model(fake_gpu, seed, activation):
    torch.manual_seed(seed)
    layer = FusedLinear(32, 48, activation=activation, dtype=torch.bfloat16, fp8=Float8Recipe())
    model = Float8Model("linear")
    gen = generator(seed)
    for _ in range(2):
        x = randn(gen, (16, 32), torch.bfloat16, requires_grad=True)
        grad = randn(gen, (16, 48), torch.bfloat16, scale=1e-2)
        w, b = layer.weight.detach().clone(), layer.bias.detach().clone()
        layer.zero_grad(set_to_none=True)
        y = layer(x)
        y.backward(grad)
        expected = model.linear(x.detach(), w, b, activation or "none", grad)
        for result, want in zip((y, x.grad, layer.weight.grad, layer.bias.grad), expected):
            assert _error(result, want) < TOLERANCE


def test_state_dict_round_trip_continues_identically(fake_gpu, seed):
    """A block saved after two steps and loaded into a fresh one computes the next step bit for bit
    the same; the scaling state is in the state_dict, an nn.Linear checkpoint loads non-strictly."""
    recipe = Float8Recipe(amax_history_len=5)
    block = _mlp(seed, 16, 32, recipe)
    gen = generator(seed)
    batches = [(randn(gen, (32, 16), torch.bfloat16), randn(gen, (32, 16), torch.bfloat16)) for _ in range(3)]
    for x, grad in batches[:2]:
        _mlp_step(block, x, grad)
    saved = block.state_dict()
    assert {"fp8_state.amax_history", "fp8_state.scale", "fp8_state.scale_inv"} <= set(saved)
    twin = _mlp(seed + 1, 16, 32, recipe)
    twin.load_state_dict(saved)
    for a, b in zip(_mlp_step(block, *batches[2]), _mlp_step(twin, *batches[2])):
        assert torch.equal(a, b)
    plain = torch.nn.Module()
    plain.fc1, plain.fc2 = torch.nn.Linear(16, 32), torch.nn.Linear(32, 16)
    with pytest.raises(RuntimeError, match="fp8_state"):
        twin.load_state_dict(plain.state_dict())
    report = twin.load_state_dict(plain.state_dict(), strict=False)
    assert sorted(report.missing_keys) == ["fp8_state.amax_history", "fp8_state.scale", "fp8_state.scale_inv"]
    report = plain.load_state_dict(saved, strict=False)
    assert len(report.unexpected_keys) == 3


@pytest.mark.parametrize("dtype, features, reason", [(torch.bfloat16, 24, "multiples of 16"),
                                                     (torch.float32, 32, "float16 or bfloat16")])
def test_problems_float8_cannot_take_run_unquantised(fake_gpu, seed, caplog, monkeypatch, dtype, features, reason):
    """24 features (not a multiple of 16), or float32 operands: the layer's unquantised path runs
    (logged once, with the reason, whatever the number of tokens: they vary from call to call); the
    scaling state is untouched."""
    monkeypatch.setattr(dispatch, "_logged", set())
    gen = generator(seed)
    w, b = randn(gen, (32, features), dtype), randn(gen, (32,), dtype)
    state = Float8State(Float8Recipe(), "linear")
    with caplog.at_level("INFO", logger="nvmathx"):
        for tokens in (16, 24, 40):
            x = randn(gen, (tokens, features), dtype)
            y = fused_linear(x, w, b, "relu", fp8=Float8Recipe(), fp8_state=state)
            torch.testing.assert_close(y, torch.relu(torch.nn.functional.linear(x, w, b)))
    assert reason in caplog.text and caplog.text.count("float8 recipe not applied") == 1
    assert not state.amax_history.any() and bool((state.scale == 1).all())


def test_the_weight_cast_is_cached_until_the_weight_changes(fake_gpu, seed, monkeypatch):
    """Gradient accumulation: the float8 weights are cast once while the weights stay; an in-place
    update (an optimizer step) recasts them."""
    block = _mlp(seed, 16, 32, Float8Recipe())
    gen = generator(seed)
    casts = []
    original = gemms.Pass.cast

    def counting(self, t, slot, **kwargs):
        casts.append(self.state.slots[slot])
        return original(self, t, slot, **kwargs)

    monkeypatch.setattr(gemms.Pass, "cast", counting)
    for _ in range(3):
        block(randn(gen, (16, 16), torch.bfloat16))
    assert casts.count("fc1.weight") == 1 and casts.count("input") == 3
    with torch.no_grad():
        block.fc1.weight.mul_(0.5)
    block(randn(gen, (16, 16), torch.bfloat16))
    assert casts.count("fc1.weight") == 2 and casts.count("fc2.weight") == 1


def test_double_backward_is_refused(fake_gpu, seed):
    block = _mlp(seed, 16, 32, Float8Recipe())
    x = randn(generator(seed), (16, 16), torch.bfloat16, requires_grad=True)
    (grad,) = torch.autograd.grad(block(x).sum(), x, create_graph=False)
    assert grad.shape == x.shape
    with pytest.raises(RuntimeError, match="double backward"):
        torch.autograd.grad(block(x).sum(), x, create_graph=True)


def test_functional_forms_take_a_state_of_their_kind(fake_gpu, seed):
    gen = generator(seed)
    x, w1, w2 = randn(gen, (16, 16), torch.bfloat16), randn(gen, (32, 16), torch.bfloat16), randn(gen, (16, 32),
                                                                                                 torch.bfloat16)
    recipe = Float8Recipe(scaling="dynamic")
    out = fused_mlp(x, w1, None, w2, None, fp8=recipe)  # dynamic scaling: no state needed
    model = Float8Model("mlp", scaling="dynamic")
    assert _error(out, model.mlp(x, w1, None, w2, None, "gelu", torch.ones(16, 16))[0]) < TOLERANCE
    with pytest.raises(Exception, match="fp8_state"):
        fused_mlp(x, w1, None, w2, None, fp8=Float8Recipe())
    with pytest.raises(Exception, match="kind"):
        fused_mlp(x, w1, None, w2, None, fp8=recipe, fp8_state=Float8State(recipe, "linear"))


def test_a_deep_copy_trains_as_the_original(fake_gpu, seed):
    """copy.deepcopy (as graph and compile helpers do) gives a block with its own state that computes the same."""
    import copy

    block = _mlp(seed, 16, 32, Float8Recipe())
    gen = generator(seed)
    batch = (randn(gen, (32, 16), torch.bfloat16), randn(gen, (32, 16), torch.bfloat16))
    _mlp_step(block, *batch)
    twin = copy.deepcopy(block)
    assert twin.fp8_state is not block.fp8_state
    for a, b in zip(_mlp_step(block, *batch), _mlp_step(twin, *batch)):
        assert torch.equal(a, b)


def test_amaxes_are_max_reduced_over_the_process_group(seed):
    """Two gloo ranks with different batches: after the first (dynamic) step every rank holds the
    largest amax of each tensor, and from the second step on every rank scales alike."""
    from helpers.distributed import run_world
    from helpers.float8_world import rank_input

    results = run_world(2, "helpers.float8_world:train_two_steps", seed=seed, timeout=240)
    first = [r[0] for r in results]
    assert first[0]["row0"] == first[1]["row0"]
    largest_input = max(float(rank_input(seed, rank).float().abs().max()) for rank in range(2))
    assert first[0]["row0"][0] == largest_input
    assert first[0]["scale"] == first[1]["scale"]
    assert results[0][1]["scale"] == results[1][1]["scale"]
    # The backward pass's reduction (before its scale update) covers the forward tensors' amaxes too;
    # the gradients' amaxes of this step stay local until the next pass reduces them.
    assert results[0][1]["row0"][:4] == results[1][1]["row0"][:4]
    assert results[0][1]["row0"][4:] != results[1][1]["row0"][4:]
    assert all(r["micro_batches"] for r in results)


def test_compile_fullgraph_of_a_float8_block_on_cpu_runs_unquantised(seed):
    """CPU tensors: the recipe does not apply, and torch.compile(fullgraph=True) traces the fallback
    (its log line is skipped while compiling) to the unquantised block's results."""
    torch.manual_seed(seed)
    block = FusedMLP(16, 32, fp8=Float8Recipe())
    plain = FusedMLP(16, 32)
    plain.load_state_dict(block.state_dict(), strict=False)
    x = randn(generator(seed), (8, 16))
    torch.testing.assert_close(torch.compile(block, fullgraph=True)(x), plain(x))


@pytest.mark.parametrize("kind", ["linear", "mlp"])
def test_a_float8_layer_on_cpu_tensors_warns_once(seed, kind):
    """Asking for float8 where it cannot run is visible: one UserWarning per layer, not per call, and
    the layer's results are the unquantised layer's."""
    import warnings

    torch.manual_seed(seed)
    make = (lambda **kw: FusedLinear(16, 32, **kw)) if kind == "linear" else (lambda **kw: FusedMLP(16, 32, **kw))
    layer, other, plain = make(fp8=Float8Recipe()), make(fp8=Float8Recipe()), make()
    plain.load_state_dict(layer.state_dict(), strict=False)
    x = randn(generator(seed), (8, 16))
    with pytest.warns(UserWarning, match="float8 GEMMs cannot run on cpu tensors") as caught:
        for _ in range(3):
            torch.testing.assert_close(layer(x), plain(x))
        other(x)
    assert len([w for w in caught if "float8" in str(w.message)]) == 2  # one per layer
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plain(x)


def test_copies_and_pickles_find_their_own_state(seed):
    import copy
    import pickle

    from nvmathx.torch._float8.state import state_by_id

    block = FusedMLP(16, 32, fp8=Float8Recipe())
    for twin in (copy.deepcopy(block), pickle.loads(pickle.dumps(block))):
        assert state_by_id(id(twin.fp8_state)) is twin.fp8_state is not block.fp8_state


def test_the_scaling_state_stays_float32_when_the_layer_changes_dtype():
    block = FusedMLP(16, 32, fp8=Float8Recipe(amax_history_len=3)).to(torch.bfloat16)
    assert block.fc1.weight.dtype == torch.bfloat16
    state = block.fp8_state
    assert {state.amax_history.dtype, state.scale.dtype, state.scale_inv.dtype} == {torch.float32}
    assert tuple(state.amax_history.shape) == (3, 6)
    assert "fp8_state.amax_history" in block.half().state_dict()


def test_the_scales_stay_16_byte_aligned_per_slot():
    """cuBLASLt refuses (CUBLAS_STATUS_NOT_SUPPORTED at launch) a float8 scale pointer that is not
    16-byte aligned: each slot's scale sits 16 bytes after the previous one, through moves,
    copies and loads."""
    from nvmathx.torch._float8.state import is_padded

    block = FusedMLP(16, 32, fp8=Float8Recipe(amax_history_len=3))
    states = [block.fp8_state, block.to(torch.bfloat16).fp8_state, copy.deepcopy(block).fp8_state]
    loaded = FusedMLP(16, 32, fp8=Float8Recipe(amax_history_len=3))
    loaded.load_state_dict(block.state_dict())
    states.append(loaded.fp8_state)
    for state in states:
        for scales in (state.scale, state.scale_inv):
            assert is_padded(scales) and scales.stride(0) == SCALE_STRIDE and tuple(scales.shape) == (6,)
            assert all(scales[slot:slot + 1].data_ptr() % 16 == 0 for slot in range(6))


def _record_gemms(monkeypatch, record):
    """Call ``record(a, b, preferences)`` (the two Casts) for every float8 GEMM of the step."""
    real = gemms._gemm

    def recording(work, a, a_matrix, b, b_matrix, dtype, fast, preferences, bias=None):
        record(a, b, preferences)
        return real(work, a, a_matrix, b, b_matrix, dtype, fast, preferences, bias)

    monkeypatch.setattr(gemms, "_gemm", recording)


def test_every_float8_gemm_reads_aligned_scales(fake_gpu, seed, monkeypatch):
    """Forward and backward (whose scales are the forward pass's snapshot): all six GEMMs."""
    seen = []
    _record_gemms(monkeypatch, lambda a, b, preferences: seen.extend((a.scale_ptr, b.scale_ptr)))
    block = _mlp(seed, 16, 32, Float8Recipe())
    _mlp_step(block, *(randn(generator(seed), (16, 16), torch.bfloat16) for _ in range(2)))
    assert len(seen) == 12 and all(pointer % 16 == 0 for pointer in seen)  # read in place, no copies
    assert all(cast.scale_inv.data_ptr() == cast.scale_ptr for cast in _casts_of_a_step(seed, monkeypatch))


def _casts_of_a_step(seed, monkeypatch):
    casts = []
    _record_gemms(monkeypatch, lambda a, b, preferences: casts.extend((a, b)))
    _mlp_step(_mlp(seed, 16, 32, Float8Recipe()), *(randn(generator(seed), (16, 16), torch.bfloat16)
                                                   for _ in range(2)))
    return casts


def _aligned(values: torch.Tensor) -> torch.Tensor:
    """A copy of ``values`` at a 256-byte aligned address (the alignment is part of a GEMM's plan)."""
    nbytes = values.numel() * values.element_size()
    storage = torch.empty(nbytes + 256, dtype=torch.uint8)
    offset = -storage.data_ptr() % 256
    result = storage[offset:offset + nbytes].view(values.dtype).view(values.shape)
    result.copy_(values)
    return result


def test_repeated_float8_gemms_run_their_cached_plans_by_address(fake_gpu, seed, monkeypatch):
    """A float8 GEMM of layouts seen before makes no plan key and calls no matmul(): its cached plan
    runs with the new addresses (operands, scales, bias); an evicted plan is planned again by
    matmul(), from the key already made."""
    from nvmathx._core.streams import resolve_stream

    keys, plans = [], []
    real_plan_key, real_matmul = gemm_calls.plan_key, gemm_calls.matmul
    monkeypatch.setattr(gemm_calls, "plan_key",
                        lambda *args, **kwargs: keys.append(1) or real_plan_key(*args, **kwargs))
    monkeypatch.setattr(gemm_calls, "matmul", lambda *args, **kwargs: plans.append(1) or real_matmul(*args, **kwargs))
    monkeypatch.setattr(gemm_calls, "_PLAN_KEYS", {})
    work = type("Work", (), {"device_id": 0, "stream": resolve_stream(7, 0)})()
    gen = generator(seed)

    def product(m, n, k, clear=False):
        a8 = _aligned(randn(gen, (m, k), scale=4.0).to(torch.float8_e4m3fn))
        b8 = _aligned(randn(gen, (n, k), scale=4.0).to(torch.float8_e4m3fn))
        scales = _aligned(torch.rand(2 * SCALE_STRIDE, generator=gen) + 0.5)
        bias = _aligned(randn(gen, (n,), torch.bfloat16))
        a = gemms.Cast(a8, None, None, scales, 0, scales.data_ptr())
        b = gemms.Cast(b8, None, None, scales, SCALE_STRIDE, scales.data_ptr() + 4 * SCALE_STRIDE)
        if clear:
            plan_cache.clear()
        result = gemms._gemm(work, a, a8, b, b8.T, torch.bfloat16, False, None, bias)
        expected = (a8.double() * float(scales[0])) @ (b8.double() * float(scales[SCALE_STRIDE])).T + bias.double()
        assert result.dtype == torch.bfloat16 and _error(result, expected) < 1e-2
        return len(keys), len(plans)

    assert product(32, 16, 48) == (1, 1)
    assert product(32, 16, 48) == (1, 1)  # new operands, scales and bias: the same plan
    assert product(32, 16, 48, clear=True) == (1, 2)  # evicted: planned again, from the key made
    assert product(64, 16, 48) == (2, 3)  # new layouts
    assert len(gemm_calls._PLAN_KEYS) == 2


@pytest.mark.parametrize("autotune", [None, True])
def test_autotune_reaches_the_float8_gemms(fake_gpu, seed, monkeypatch, autotune):
    """The block's autotune setting is each of its six float8 GEMMs' plan preferences."""
    seen = []
    _record_gemms(monkeypatch, lambda a, b, preferences: seen.append(preferences))
    real_matmul = gemm_calls.matmul
    # planned without autotuning: the fake device has no clock
    monkeypatch.setattr(gemm_calls, "matmul", lambda *args, preferences=None, **kwargs: real_matmul(*args, **kwargs))
    torch.manual_seed(seed)
    block = FusedMLP(16, 32, dtype=torch.bfloat16, fp8=Float8Recipe(), autotune=autotune)
    _mlp_step(block, *(randn(generator(seed), (16, 16), torch.bfloat16) for _ in range(2)))
    assert len(seen) == 6
    assert all((p is not None and p.autotune) if autotune else p is None for p in seen)


def test_a_problem_cublaslt_refuses_runs_unquantised_from_then_on(fake_gpu, seed, monkeypatch, caplog):
    """cuBLASLt's NOT_SUPPORTED for a float8 GEMM: the call runs unquantised (logged once, the
    problem remembered, so the next call does not try again); other errors propagate."""
    from nvmathx._core.errors import CudaLibraryError

    attempts = []

    def refusing(*args, **kwargs):
        attempts.append(1)
        raise CudaLibraryError(15, "CUBLAS_STATUS_NOT_SUPPORTED", "cublasLtMatmul")

    monkeypatch.setattr(gemm_calls, "matmul", refusing)
    monkeypatch.setattr(dispatch, "refused", set())
    gen = generator(seed)
    x, w, b = (randn(gen, s, torch.bfloat16) for s in ((16, 32), (16, 32), (16,)))
    state = Float8State(Float8Recipe(), "linear")
    with caplog.at_level("INFO", logger="nvmathx"):
        for _ in range(2):
            y = fused_linear(x, w, b, fp8=Float8Recipe(), fp8_state=state)
            torch.testing.assert_close(y, torch.nn.functional.linear(x, w, b))
    assert len(attempts) == 1 and "refused" in caplog.text

    def failing(*args, **kwargs):
        raise CudaLibraryError(13, "CUBLAS_STATUS_EXECUTION_FAILED", "cublasLtMatmul")

    monkeypatch.setattr(gemm_calls, "matmul", failing)
    with pytest.raises(CudaLibraryError, match="EXECUTION_FAILED"):
        fused_linear(x[:, :16], w[:, :16], b, fp8=Float8Recipe(), fp8_state=state)


def test_bias_gradient_of_many_tokens(fake_gpu, seed):
    """800 tokens: 13 rows of partial sums (the last of 32 rows) added by add_rows; the bias gradient is the model's."""
    torch.manual_seed(seed)
    layer = FusedLinear(16, 32, activation="relu", dtype=torch.bfloat16, fp8=Float8Recipe())
    gen = generator(seed)
    x = randn(gen, (800, 16), torch.bfloat16, requires_grad=True)
    grad = randn(gen, (800, 32), torch.bfloat16)
    w, b = layer.weight.detach().clone(), layer.bias.detach().clone()
    layer(x).backward(grad)
    *_, db = Float8Model("linear").linear(x.detach(), w, b, "relu", grad)
    assert _error(layer.bias.grad, db) < TOLERANCE


def test_a_loaded_history_decides_which_slots_scale_from_it(fake_gpu, seed):
    """After a load, slots whose loaded history has an amax scale from it (delayed); slots without
    one (a state saved before training) scale by their own amax first, as a fresh state does."""
    block = _mlp(seed, 16, 32, Float8Recipe(amax_history_len=4))
    fresh = {name: t.clone() for name, t in block.state_dict().items()}  # before any step: an empty history
    gen = generator(seed)
    batch = (randn(gen, (32, 16), torch.bfloat16), randn(gen, (32, 16), torch.bfloat16))
    _mlp_step(block, *batch)
    block.load_state_dict(fresh)
    assert block.fp8_state.measured == set()
    trained = _mlp(seed, 16, 32, Float8Recipe(amax_history_len=4))
    with torch.no_grad():
        trained(batch[0])  # forward only: the forward slots have an amax, the gradients none
    block.load_state_dict(trained.state_dict())
    state = block.fp8_state
    assert state.measured == {state.slot(name) for name in ("input", "fc1.weight", "hidden", "fc2.weight")}


@pytest.mark.parametrize("kind", ["linear", "mlp"])
def test_layers_without_bias(fake_gpu, seed, kind):
    """bias=False: no bias epilog, no bias gradient; outputs and gradients still the model's."""
    torch.manual_seed(seed)
    gen = generator(seed)
    x = randn(gen, (32, 16), torch.bfloat16, requires_grad=True)
    if kind == "linear":
        layer = FusedLinear(16, 32, bias=False, activation="gelu", dtype=torch.bfloat16, fp8=Float8Recipe())
        grad = randn(gen, (32, 32), torch.bfloat16, scale=1e-2)
        w = layer.weight.detach().clone()
        y = layer(x)
        y.backward(grad)
        expected = Float8Model("linear").linear(x.detach(), w, None, "gelu", grad)
        results = (y, x.grad, layer.weight.grad)
    else:
        layer = FusedMLP(16, 32, bias=False, dtype=torch.bfloat16, fp8=Float8Recipe())
        grad = randn(gen, (32, 16), torch.bfloat16, scale=1e-2)
        w1, w2 = layer.fc1.weight.detach().clone(), layer.fc2.weight.detach().clone()
        y = layer(x)
        y.backward(grad)
        out, dx, dw1, _, dw2, _ = Float8Model("mlp").mlp(x.detach(), w1, None, w2, None, "gelu", grad)
        expected = (out, dx, dw1, dw2)
        results = (y, x.grad, layer.fc1.weight.grad, layer.fc2.weight.grad)
    for result, want in zip(results, expected):
        assert _error(result, want) < TOLERANCE


def test_inference_keeps_nothing_for_a_backward_pass(fake_gpu, seed, monkeypatch):
    """Under torch.no_grad the forward casts no transposed copies (nothing is saved) and computes the
    model's output."""
    block = _mlp(seed, 16, 32, Float8Recipe())
    transposed = []
    original = gemms.Pass.cast

    def recording(self, t, slot, **kwargs):
        transposed.append((self.state.slots[slot], kwargs.get("transposed", True)))
        return original(self, t, slot, **kwargs)

    monkeypatch.setattr(gemms.Pass, "cast", recording)
    x = randn(generator(seed), (32, 16), torch.bfloat16)
    w1, b1, w2, b2 = _params(block)
    with torch.no_grad():
        out = block(x)
    expected = Float8Model("mlp").mlp(x, w1, b1, w2, b2, "gelu", torch.zeros_like(x))[0]
    assert _error(out, expected) < TOLERANCE and not out.requires_grad
    assert dict(transposed) == {"input": False, "hidden": False, "fc1.weight": True, "fc2.weight": True}


def test_float32_layers_run_in_float8_under_autocast(fake_gpu, seed):
    """float32 parameters under torch.autocast(bfloat16): the operands are cast as for nn.Linear and
    the GEMMs run in float8 (the state records amaxes); gradients reach the float32 parameters."""
    torch.manual_seed(seed)
    block = FusedMLP(16, 32, fp8=Float8Recipe())
    x = randn(generator(seed), (32, 16))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = block(x)
    out.float().sum().backward()
    assert out.dtype == torch.bfloat16
    assert block.fp8_state.measured == set(range(6)) and bool(block.fp8_state.amax_history[0].all())
    assert block.fc1.weight.grad.dtype == torch.float32 and bool(block.fc1.weight.grad.isfinite().all())


def test_autocast_steps_cast_the_updated_master_weights(fake_gpu, seed):
    """Under autocast the float8 weights come from the float32 parameters themselves, cast again after
    each optimizer step (autocast's bfloat16 copies are new tensors, often at a freed one's address and
    version 0: keyed by address they made every step reuse the first step's float8 weights), and
    cached while the parameters are unchanged."""
    torch.manual_seed(seed)
    block = FusedMLP(16, 32, fp8=Float8Recipe(scaling="dynamic"))
    optimizer = torch.optim.SGD(block.parameters(), lr=0.5)
    gen = generator(seed)
    for _ in range(3):
        x = randn(gen, (32, 16))
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = block(x)
        w1, b1, w2, b2 = (p.detach() for p in block.parameters())  # the weights quantised from float32
        b1, b2 = b1.to(torch.bfloat16), b2.to(torch.bfloat16)
        expected = Float8Model("mlp", scaling="dynamic").mlp(x.to(torch.bfloat16), w1, b1, w2, b2, "gelu",
                                                             torch.zeros(32, 16, dtype=torch.bfloat16))[0]
        assert _error(out, expected) < TOLERANCE
        optimizer.zero_grad()
        out.float().square().sum().backward()
        optimizer.step()
    casts = []
    for _ in range(2):  # two micro-batches, no step between them: the second reuses the first's casts
        with torch.autocast("cpu", dtype=torch.bfloat16):
            block(randn(gen, (32, 16)))
        casts.append({slot: entry[2] for slot, entry in block.fp8_state.weight_cache.items()})
    assert len(casts[0]) == 2 and all(casts[1][slot] is cast for slot, cast in casts[0].items())


def test_a_new_weight_tensor_at_a_cached_address_is_cast_again(fake_gpu, seed):
    """Two tensor objects over the same memory at the same version, the values changed in between
    without a version bump (as when a freed copy's address is reused): the second is cast anew."""
    from nvmathx.torch import fused_linear

    torch.manual_seed(seed)
    recipe = Float8Recipe(scaling="dynamic")
    state = Float8State(recipe, kind="linear")
    storage = randn(generator(seed), (32 * 16,), torch.bfloat16)
    x = randn(generator(seed + 1), (16, 16), torch.bfloat16)
    first = fused_linear(x, storage.view(32, 16), fp8=recipe, fp8_state=state)
    storage.data.mul_(-2)  # .data: no version bump on storage
    second_weight = storage.view(32, 16)
    second = fused_linear(x, second_weight, fp8=recipe, fp8_state=state)
    assert _error(second, -2 * first) < 0.1  # the new values, not the cached cast of the old


def test_the_custom_op_path_under_autocast_equals_the_eager_one(fake_gpu, monkeypatch, seed):
    """The ops torch.compile traces (taken here in eager mode) with float32 parameters under
    autocast: the float8 weights cast from float32, bfloat16 weight gradients cast back by autograd,
    the same values as the eager Function's."""
    from nvmathx.torch import _functional

    grads = []
    for compiled_path in (False, True):
        monkeypatch.setattr(_functional, "eager", (lambda x: False) if compiled_path else (lambda x: True))
        torch.manual_seed(seed)
        block = FusedMLP(16, 32, fp8=Float8Recipe())
        x = randn(generator(seed), (32, 16))
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = block(x)
        out.float().square().sum().backward()
        grads.append([p.grad for p in block.parameters()])
    for eager_grad, op_grad in zip(*grads):
        assert op_grad.dtype == torch.float32
        torch.testing.assert_close(op_grad, eager_grad)


def test_dtype_conversions_keep_the_scaling_state_exact():
    """.half() / .bfloat16() convert the parameters only: amaxes and scales beyond float16's range or
    precision come back as the float32 values they were, not rounded through the target dtype."""
    for convert in ("half", "bfloat16"):
        layer = FusedLinear(16, 32, fp8=Float8Recipe(amax_history_len=4))
        state = layer.fp8_state
        with torch.no_grad():
            state.amax_history[1] = torch.tensor([1e5, 1e-9, 3.14159265])
            state.scale.copy_(torch.tensor([448000.0, 448.0 / 3.14159265, 1e-7]))
            state.scale_inv.copy_(1 / state.scale)
        before = [t.clone() for t in (state.amax_history, state.scale, state.scale_inv)]
        getattr(layer, convert)()
        assert layer.weight.dtype != torch.float32
        for old, new in zip(before, (state.amax_history, state.scale, state.scale_inv)):
            assert new.dtype == torch.float32 and torch.equal(old, new), convert


class _FakeGroup:
    """Stands for a ProcessGroup: has a size, and cannot be copied (as torch's cannot)."""

    def size(self):
        return 1

    def __deepcopy__(self, memo):
        raise TypeError("cannot pickle 'ProcessGroup' object")


def test_a_layer_whose_recipe_has_a_process_group_deep_copies():
    group = _FakeGroup()
    block = FusedMLP(16, 32, fp8=Float8Recipe(process_group=group))
    twin = copy.deepcopy(block)
    assert twin.fp8_state is not block.fp8_state and twin.fp8_state.recipe.process_group is group



def test_a_trained_block_copies_and_moves(fake_gpu, seed):
    """After a step (the state holds its cached float8 weights and its scale vector), a deep copy
    and a moved copy train on from the same scales as the original."""
    block = _mlp(seed, 16, 32, Float8Recipe(amax_history_len=2))
    gen = generator(seed)
    x, grad = randn(gen, (32, 16), torch.bfloat16), randn(gen, (32, 16), torch.bfloat16)
    _mlp_step(block, x, grad)
    copied, moved = copy.deepcopy(block), copy.deepcopy(block).to(torch.bfloat16)
    results = [_mlp_step(b, x, grad) for b in (block, copied, moved)]
    for other in results[1:]:
        for result, expected in zip(other, results[0]):
            torch.testing.assert_close(result, expected, rtol=0, atol=0)
    assert copied.fp8_state.flat_scale_inv[0] is copied.fp8_state.scale_inv


def test_recast_weights_scale_in_the_pass_update(fake_gpu, seed, monkeypatch):
    """After an optimizer step both weights are recast: their scale updates join the forward pass's
    one update launch (a step makes two, forward and backward, whether or not the weights changed),
    and the step still matches the model. The two bias gradients are added up in one launch."""
    launched = []
    real_launch = kernels.launch
    monkeypatch.setattr(kernels, "launch", lambda stream, device, name, *args: launched.append(name)
                        or real_launch(stream, device, name, *args))
    recipe = Float8Recipe(amax_history_len=2)
    block = _mlp(seed, 32, 48, recipe)
    model = Float8Model("mlp", scaling="delayed", history_len=2)
    gen = generator(seed)
    for step in range(4):
        x, grad = randn(gen, (64, 32), torch.bfloat16), randn(gen, (64, 32), torch.bfloat16, scale=1e-3)
        w1, b1, w2, b2 = _params(block)
        launched.clear()
        results = _mlp_step(block, x, grad)
        assert launched.count("update_scaling") == 2 and launched.count("add_rows") == 1, (step, launched)
        casts = sum(name.startswith("cast_transpose") for name in launched)
        # step 0 scales dynamically (an amax pass before each cast); the weights are cast in steps 0 and 2
        assert casts == (12, 4, 6, 4)[step], (step, launched)
        for name, result, want in zip(("out", "dx", "dw1", "db1", "dw2", "db2"), results,
                                      model.mlp(x, w1, b1, w2, b2, "gelu", grad)):
            assert _error(result, want) < TOLERANCE, (step, name)
        if step == 1:
            with torch.no_grad():
                for p in block.parameters():
                    p -= 0.5 * p.grad
