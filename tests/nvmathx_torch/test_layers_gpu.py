"""nvmathx.torch on the GPU: cuBLASLt results and gradients against torch's unfused layers in
float64, the fused path taken (nothing refused) for float16 and bfloat16, layouts, autocast,
torch.compile, host synchronisation and memory. (gradcheck, gradgradcheck and double backward on
CUDA: test_double_backward.py; empty problems: test_empty_and_meta.py.)"""

import pytest

torch = pytest.importorskip("torch")

from helpers.torch_layers import (  # noqa: E402
    TorchMLP,
    float64_reference,
    generator,
    layer_tensors,
    randn,
    reference_linear,
    reference_mlp,
    reference_mlp_with_mask,
    relative_error,
    training_step,
)
from nvmathx.torch import FusedMLP, _dispatch, fused_linear, fused_mlp  # noqa: E402
from nvmathx.torch._reference import unpack_positive  # noqa: E402

pytestmark = pytest.mark.gpu

DEVICE = "cuda"
# Norm-wise relative tolerances against float64: cuBLASLt accumulates in float32; the result, the
# hidden activation and the epilog's pre-activation are rounded to the dtype.
TOLERANCE = {torch.float32: 1e-4, torch.float16: 1e-2, torch.bfloat16: 3e-2}
DTYPES = [torch.float32, torch.float16, torch.bfloat16]


@pytest.fixture
def refused(monkeypatch):
    """A fresh record of the problems cuBLASLt refused during the test."""
    fresh = set()
    monkeypatch.setattr(_dispatch, "refused", fresh)
    return fresh


def _assert_fused(refused, dtype):
    """float16 and bfloat16 must run entirely on cuBLASLt (sm_90 supports every epilog used);
    float32 may fall back for the backward epilogs, correctly."""
    if dtype != torch.float32:
        assert not refused, refused


def _mlp_params(gen, d_model, hidden, dtype, bias=True):
    t = layer_tensors(gen, {"w1": (hidden, d_model), "b1": (hidden,), "w2": (d_model, hidden), "b2": (d_model,)},
                      dtype, DEVICE)
    return t["w1"], t["b1"] if bias else None, t["w2"], t["b2"] if bias else None


def _check(out, grads, expected, expected_grads, dtype):
    assert out.dtype == dtype and out.is_cuda
    assert relative_error(out, expected) < TOLERANCE[dtype]
    for index, (got, want) in enumerate(zip(grads, expected_grads)):
        assert got.dtype == dtype and got.shape == want.shape, index
        assert relative_error(got, want) < TOLERANCE[dtype], index


@pytest.mark.parametrize("shape", [(300, 192), (4, 75, 192)], ids=["2d", "3d"])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no_bias"])
@pytest.mark.parametrize("activation", [None, "relu", "gelu"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_linear_matches_torch_float64(seed, refused, dtype, activation, bias, shape):
    gen = generator(seed)
    x = randn(gen, shape, dtype, DEVICE, requires_grad=True)
    t = layer_tensors(gen, {"weight": (256, 192), "bias": (256,)}, dtype, DEVICE)
    weight, b = t["weight"], t["bias"] if bias else None
    y = fused_linear(x, weight, b, activation)
    grad = randn(gen, y.shape, dtype, DEVICE)
    tensors = [v for v in (x, weight, b) if v is not None]
    grads = torch.autograd.grad(y, tensors, grad)
    expected, expected_grads = float64_reference(reference_linear, (x, weight, b), grad, activation)
    _check(y, grads, expected, expected_grads, dtype)
    _assert_fused(refused, dtype)


@pytest.mark.parametrize("hidden", [1024, 100], ids=["hidden_1024", "hidden_100_padded_aux"])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no_bias"])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_mlp_matches_torch_float64(seed, refused, dtype, activation, bias, hidden):
    gen = generator(seed)
    x = randn(gen, (3, 77, 256), dtype, DEVICE, requires_grad=True)
    params = _mlp_params(gen, 256, hidden, dtype, bias)
    out = fused_mlp(x, *params, activation=activation)
    grad = randn(gen, out.shape, dtype, DEVICE)
    tensors = [v for v in (x, *params) if v is not None]
    grads = torch.autograd.grad(out, tensors, grad)
    expected, expected_grads = float64_reference(reference_mlp, (x, *params), grad, activation)
    if activation == "relu":
        # Gradients of the function the forward computed: its ReLU mask (cuBLASLt's kernels for a
        # hidden size that is no multiple of 8 round the product to the dtype before the bias, so a
        # few pre-activations near 0 change sign against float64; a flipped mask entry moves a
        # whole gradient entry). The output is still checked against the float64 block.
        weights = (p.detach() if p is not None else None for p in params)
        _, _, aux = torch.ops.nvmathx.mlp(x.detach().reshape(-1, x.shape[-1]), *weights, activation)
        positive = unpack_positive(aux, hidden).reshape(*x.shape[:-1], hidden).cpu()
        _, expected_grads = float64_reference(reference_mlp_with_mask, (x, *params), grad, positive)
    _check(out, grads, expected, expected_grads, dtype)
    if hidden % 8 == 0:  # rows of h not 16-byte aligned may take the torch composition for some GEMMs
        _assert_fused(refused, dtype)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=str)
def test_non_contiguous_inputs(seed, refused, dtype):
    gen = generator(seed)
    params = _mlp_params(gen, 128, 512, dtype)
    cases = {
        "sliced 3-D (a view)": randn(gen, (4, 50, 160), dtype, DEVICE)[:, :, 16:144],
        "permuted 3-D (one copy)": randn(gen, (50, 128, 4), dtype, DEVICE).permute(2, 0, 1),
        "transposed 2-D (column-major)": randn(gen, (128, 200), dtype, DEVICE).T,
        "every other row": randn(gen, (400, 128), dtype, DEVICE)[::2],
    }
    for name, x in cases.items():
        x = x.detach().requires_grad_()
        out = fused_mlp(x, *params)
        grad = randn(gen, out.shape, dtype, DEVICE)
        grads = torch.autograd.grad(out, (x, *params), grad)
        expected, expected_grads = float64_reference(reference_mlp, (x, *params), grad, "gelu")
        assert relative_error(out, expected) < TOLERANCE[dtype], name
        for got, want in zip(grads, expected_grads):
            assert relative_error(got, want) < TOLERANCE[dtype], name
    _assert_fused(refused, dtype)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_autocast_matches_torch_block(seed, refused, dtype):
    torch.manual_seed(seed)
    expected = TorchMLP(256, 1024).to(DEVICE)
    block = FusedMLP(256, 1024, device=DEVICE)
    block.load_state_dict(expected.state_dict())
    gen = generator(seed)
    x = randn(gen, (2, 100, 256), torch.float32, DEVICE)
    with torch.autocast("cuda", dtype=dtype):
        out, want = block(x), expected(x)
    assert out.dtype == want.dtype == dtype
    assert relative_error(out, want.double()) < TOLERANCE[dtype]
    grad = randn(gen, out.shape, dtype, DEVICE)
    out.backward(grad)
    want.backward(grad)
    for (name, param), (_, reference) in zip(block.named_parameters(), expected.named_parameters()):
        assert param.grad.dtype == torch.float32, name
        assert relative_error(param.grad, reference.grad.double()) < TOLERANCE[dtype], name
    _assert_fused(refused, dtype)


def test_compile_equals_eager(seed, refused):
    torch.manual_seed(seed)
    block = FusedMLP(256, 1024, device=DEVICE, dtype=torch.bfloat16)
    gen = generator(seed)
    x = randn(gen, (4, 64, 256), torch.bfloat16, DEVICE, requires_grad=True)
    grad = randn(gen, x.shape, torch.bfloat16, DEVICE)
    compiled = torch.compile(block, fullgraph=True)
    out, grads = training_step(compiled, x, grad)
    expected, expected_grads = training_step(block, x, grad)
    assert relative_error(out, expected.double()) < 1e-3
    for got, want in zip(grads, expected_grads):
        assert relative_error(got, want.double()) < 1e-3
    with torch.autocast("cuda", dtype=torch.bfloat16):
        block32 = FusedMLP(256, 1024, device=DEVICE)
        out = torch.compile(block32, fullgraph=True)(x.float())
    assert out.dtype == torch.bfloat16
    _assert_fused(refused, torch.bfloat16)


def test_training_step_does_not_synchronise(seed, refused):
    """No host synchronisation in forward or backward once the plans exist (torch's sync debug mode
    raises on any synchronising torch call)."""
    gen = generator(seed)
    x = randn(gen, (512, 256), torch.bfloat16, DEVICE, requires_grad=True)
    block = FusedMLP(256, 1024, device=DEVICE, dtype=torch.bfloat16)
    grad = randn(gen, x.shape, torch.bfloat16, DEVICE)
    training_step(block, x, grad)  # plans are built here
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        training_step(block, x, grad)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    _assert_fused(refused, torch.bfloat16)


def _peak_bytes(module, x, grad):
    """Peak memory above what was allocated before one forward + backward (after a warm-up step)."""
    training_step(module, x, grad)
    for param in module.parameters():
        param.grad = None
    x.grad = None
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    start = torch.cuda.memory_allocated()
    training_step(module, x, grad)
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated() - start


def _block_pair(seed):
    torch.manual_seed(seed)
    expected = TorchMLP(1024, 4096, device=DEVICE, dtype=torch.bfloat16)
    block = FusedMLP(1024, 4096, device=DEVICE, dtype=torch.bfloat16)
    gen = generator(seed)
    x = randn(gen, (4096, 1024), torch.bfloat16, DEVICE, requires_grad=True)
    return expected, block, x, randn(gen, x.shape, torch.bfloat16, DEVICE)


def test_peak_memory_not_above_torch(seed):
    expected, block, x, grad = _block_pair(seed)
    assert _peak_bytes(block, x, grad) <= _peak_bytes(expected, x, grad)


def test_nothing_held_after_a_training_step(seed):
    """No plan of matmul()'s cache keeps the step's hidden activation or gelu_aux alive."""
    from nvmathx.linalg import plan_cache

    _, block, x, grad = _block_pair(seed)
    plan_cache.clear()  # no plan holds tensors of earlier tests
    torch.cuda.synchronize()
    start = torch.cuda.memory_allocated()
    training_step(block, x, grad)
    for param in block.parameters():
        param.grad = None
    x.grad = None
    torch.cuda.synchronize()
    assert torch.cuda.memory_allocated() - start < x.numel() * x.element_size()


@pytest.mark.parametrize("shape", [(16384, 1024), (4096, 4100), (20000, 4096)], ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_column_sums_equal_float64_sums(seed, dtype, shape):
    """The column-sum pass that gives large layers their bias gradient, against float64 sums (a
    padded row stride: the scalar-load path)."""
    from nvmathx.torch import _column_sums

    rows, cols = shape
    t = (randn(generator(seed), (rows, cols + 8), dtype, DEVICE) + 0.25)[:, :cols]
    result = _column_sums.column_sums(t)
    expected = t.double().sum(0)
    assert result.dtype == dtype
    assert relative_error(result, expected) < {torch.float32: 1e-6, torch.float16: 1e-3, torch.bfloat16: 8e-3}[dtype]


def test_column_sums_run_on_torchs_current_stream(seed):
    """The layers' own kernels are queued on torch's current stream (a side stream here): the
    handle they take is that stream's, and the sums are right once it has run."""
    from nvmathx.torch import _column_sums

    side = torch.cuda.Stream()
    index = torch.cuda.current_device()
    assert _column_sums.current_stream_handle(index) == torch.cuda.current_stream().cuda_stream
    t = randn(generator(seed), (16384, 1024), torch.float32, DEVICE) + 0.25
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        assert _column_sums.current_stream_handle(index) == side.cuda_stream
        assert _column_sums.torch_stream(t.device)[0].handle == side.cuda_stream
        result = _column_sums.column_sums(t)
    side.synchronize()
    assert relative_error(result, t.double().sum(0)) < 1e-6


@pytest.mark.parametrize("activation", ["gelu", "relu"])
def test_mlp_bias_gradients_of_large_layers_match_bgrada(seed, monkeypatch, refused, activation):
    """Above the column-sum threshold (16384 tokens x 1024 features), the block's gradients equal
    those of the BGRADA path (the threshold out of reach) to the dtype's rounding; the GEMMs' own
    results are the same bits."""
    from nvmathx.torch import _column_sums

    gen = generator(seed)
    dtype = torch.bfloat16
    x = randn(gen, (16384, 1024), dtype, DEVICE)
    w1, b1, w2, b2 = _mlp_params(gen, 1024, 1024, dtype)
    grad = randn(gen, (16384, 1024), dtype, DEVICE)
    assert _column_sums.in_kernel(16384, 1024, 1, "bfloat16")
    steps = {}
    for name, threshold in (("kernel", _column_sums.MIN_ELEMENTS), ("bgrada", 1 << 62)):
        monkeypatch.setattr(_column_sums, "MIN_ELEMENTS", threshold)
        out = fused_mlp(x, w1, b1, w2, b2, activation=activation)
        steps[name] = torch.autograd.grad(out, (w1, b1, w2, b2), grad)
    for index in (0, 2):
        assert torch.equal(steps["kernel"][index], steps["bgrada"][index]), index
    for index in (1, 3):
        assert relative_error(steps["kernel"][index], steps["bgrada"][index].double()) < 1e-2, index
    _assert_fused(refused, dtype)
