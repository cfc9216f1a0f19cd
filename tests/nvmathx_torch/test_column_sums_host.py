"""Bias gradients from the column-sum pass (nvmathx.torch._column_sums) on the host: the float8 cast
kernel compiled as host C++ with its DBIAS pass only, against float64 sums; and the layers' backward
taking it (its threshold lowered) against the BGRADA path and torch in float64."""

import pytest

torch = pytest.importorskip("torch")

from helpers.fake_torch_device import present_torch_as_device  # noqa: E402
from helpers.host_kernels import HostKernels  # noqa: E402
from helpers.torch_layers import float64_reference, generator, layer_tensors, randn, reference_mlp  # noqa: E402
from linalg._fake_cublaslt import install  # noqa: E402
from nvmathx.linalg import plan_cache  # noqa: E402
from nvmathx.torch import _column_sums, _dispatch, _fused, _gemm_calls, fused_mlp  # noqa: E402
from nvmathx.torch._float8 import kernels  # noqa: E402

HOST = HostKernels(kernels.KERNEL_SOURCE, kernels.KERNEL_NAMES, "float8")


@pytest.fixture
def host_kernels(monkeypatch):
    monkeypatch.setattr(kernels, "launch", HOST.launch)
    monkeypatch.setattr(_column_sums, "torch_stream", lambda device: (None, 0))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32], ids=str)
@pytest.mark.parametrize("rows, cols, ld_extra",
                         [(64, 128, 0), (100, 136, 0), (4, 8, 0), (4160, 264, 8), (68, 40, 3), (1000, 520, 0),
                          (4163, 264, 0), (7, 16, 0)])
def test_column_sums_equal_float64_sums(seed, host_kernels, dtype, rows, cols, ld_extra):
    """A strip of columns cut at the right edge, 32 bands of rows (4160 rows), a last band shorter
    than the others (1000 rows in 7 bands; 4163, an odd count, in 32), padded rows (16-byte vector
    loads) and an odd row stride (scalar loads)."""
    base = randn(generator(seed), (rows, cols + ld_extra), dtype) + 0.5  # non-zero means: sums that matter
    t = base[:, :cols]
    result = _column_sums.column_sums(t)
    expected = t.double().sum(0)
    assert result.dtype == dtype and result.shape == (cols,)
    # float32 accumulation in a fixed order, one rounding to the dtype at the end
    rounding = {torch.float32: 1e-6, torch.float16: 1e-3, torch.bfloat16: 8e-3}[dtype]
    assert torch.allclose(result.double(), expected, rtol=rounding, atol=rounding * rows ** 0.5)


def test_column_sums_are_deterministic(seed, host_kernels):
    t = randn(generator(seed), (1024, 64), torch.bfloat16)
    assert torch.equal(_column_sums.column_sums(t), _column_sums.column_sums(t))


@pytest.mark.parametrize("rows, cols, column_stride, dtype, expected", [
    (16384, 1024, 1, "bfloat16", True),
    (32768, 768, 1, "float16", True),
    (16384, 1024, 2, "bfloat16", False),   # rows not of unit stride
    (16385, 1024, 1, "bfloat16", True),    # any number of rows
    (16384, 1020, 1, "bfloat16", False),   # not whole groups of eight columns
    (16384, 1024, 1, "float64", False),    # a format the kernel does not read
    (256, 4096, 1, "bfloat16", False),     # small: BGRADA costs no extra launch
])
def test_in_kernel_decision(rows, cols, column_stride, dtype, expected):
    assert _column_sums.in_kernel(rows, cols, column_stride, dtype) is expected


@pytest.mark.parametrize("activation", ["gelu", "relu"])
def test_mlp_backward_with_column_sums_matches_bgrada_and_float64(seed, monkeypatch, host_kernels, activation):
    """FusedMLP's bias gradients from the column-sum pass (threshold 0) against the same step with
    BGRADA (threshold out of reach) and against torch's block in float64."""
    install(monkeypatch)
    present_torch_as_device(monkeypatch)
    # the fused path for these CPU tensors (presented as device 0), its GEMMs counted
    monkeypatch.setattr(_dispatch, "fusable", lambda t: t.dtype in _dispatch.FUSED_DTYPES)
    monkeypatch.setattr(_gemm_calls, "current_stream_handle", lambda device_id: 7)
    epilogs = []
    real_gemm = _fused.gemm
    monkeypatch.setattr(_fused, "gemm", lambda *args, **kwargs: epilogs.append(kwargs.get("epilog"))
                        or real_gemm(*args, **kwargs))
    gen = generator(seed)
    dtype = torch.bfloat16
    x = randn(gen, (96, 64), dtype, requires_grad=True)
    t = layer_tensors(gen, {"w1": (128, 64), "b1": (128,), "w2": (64, 128), "b2": (64,)}, dtype)
    params = (t["w1"], t["b1"], t["w2"], t["b2"])
    grad = randn(gen, (96, 64), dtype)
    steps = {}
    try:
        for name, threshold in (("kernel", 0), ("bgrada", 1 << 62)):
            plan_cache.clear()  # each step plans (and its GEMMs pass through _fused) anew
            monkeypatch.setattr(_column_sums, "MIN_ELEMENTS", threshold)
            out = fused_mlp(x, *params, activation=activation)
            steps[name] = torch.autograd.grad(out, (x, *params), grad)
    finally:
        plan_cache.clear()
    forward, backward = (f"{activation.upper()}_AUX_BIAS", "BIAS"), f"D{activation.upper()}"
    # the bias gradients from the column-sum pass (plain GEMMs), then from cuBLASLt's BGRADA
    assert epilogs == [*forward, backward, None, None, None, *forward, backward, None, "BGRADA", "BGRADA"]
    _, expected = float64_reference(reference_mlp, (x, *params), grad, activation)
    for index in (2, 4):  # db1, db2
        kernel, bgrada, want = steps["kernel"][index], steps["bgrada"][index], expected[index]
        assert kernel.dtype == dtype and kernel.shape == want.shape
        assert float((kernel.double() - want).norm() / want.norm()) < 2e-2, index
        assert float((kernel.double() - bgrada.double()).norm() / want.norm()) < 1e-2, index
    for index in (0, 1, 3):  # the GEMMs' own results do not depend on where the bias gradient came from
        assert torch.equal(steps["kernel"][index], steps["bgrada"][index]), index
        want = expected[index]
        assert float((steps["kernel"][index].double() - want).norm() / want.norm()) < 2e-2, index
