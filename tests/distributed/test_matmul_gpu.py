"""The distributed matmul on a GPU, in a world of one process (a gloo group of one rank and
``initialize(device_id=0)``), through cuBLASMp on a 1 x 1 grid (``force_distributed``): every
combination of distributions that a world of one rank allows, against single-GPU
nvmathx.linalg.matmul and numpy in float64; torch and cupy operands; a cuda.core stream; the
stateful Matmul and the function form's cache."""

import itertools
import socket

import numpy as np
import pytest

from nvmathx import InvalidStateError, LibraryNotFoundError
from nvmathx.distributed import BlockCyclic, Replicated, Slab

pytestmark = pytest.mark.gpu

SHAPE = (33, 17, 24)  # (M, K, N)
EPILOGS = [None, "BIAS", "RELU_BIAS", "GELU_BIAS", "RELU", "GELU"]
_KINDS = {"X": Slab.X, "Y": Slab.Y, "R": Replicated(), "B": BlockCyclic((1, 1), (8, 8))}
COMBINATIONS = ["".join(kinds) for kinds in itertools.product("XYRB", repeat=3)]
FORCED = {"force_distributed": True}


@pytest.fixture(scope="module")
def world():
    """A distributed context of one rank on GPU 0 (skipped where NCCL or cuBLASMp is missing)."""
    pytest.importorskip("torch")
    import torch.distributed as dist

    import nvmathx.distributed as distributed
    from nvmathx._bindings import cublasmp

    try:
        cublasmp.version()
    except LibraryNotFoundError as error:
        pytest.skip(f"cuBLASMp not available: pip install {error.pip_package}")
    created = not dist.is_initialized()
    if created:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
    if distributed.is_initialized():
        distributed.finalize()
    try:
        distributed.initialize(device_id=0)
    except LibraryNotFoundError as error:
        pytest.skip(f"NCCL not available: pip install {error.pip_package}")
    yield
    distributed.finalize()
    if created:
        dist.destroy_process_group()


def _operands(rng, dtype, with_c):
    m, k, n = SHAPE
    complex_ = np.dtype(dtype).kind == "c"

    def make(shape):
        x = rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if complex_ else 0)
        return x.astype(dtype)

    return make((m, k)), make((k, n)), make((m, n)) if with_c else None, make((n,))


def _reference(a, b, c, alpha, beta, epilog, bias):
    wide = np.complex128 if np.iscomplexobj(a) else np.float64
    d = alpha * (a.astype(wide) @ b.astype(wide)) + (beta * c.astype(wide) if c is not None else 0)
    if epilog and "BIAS" in epilog:
        d = d + bias
    if epilog and epilog.startswith("RELU"):
        d = np.maximum(d, 0)
    if epilog and epilog.startswith("GELU"):
        d = 0.5 * d * (1 + np.tanh(np.sqrt(2 / np.pi) * (d + 0.044715 * d**3)))
    return d


def _close(result, expected, dtype, tolerance=None):
    if tolerance is None:
        tolerance = 1e-12 if np.dtype(dtype) in (np.float64, np.complex128) else 2e-5
    scale = max(float(np.abs(expected).max()), 1.0)
    error = float(np.abs(np.asarray(result, dtype=expected.dtype) - expected).max()) / scale
    assert error < tolerance, f"relative error {error:.2e}"


def _torch(x):
    import torch

    return None if x is None else torch.from_numpy(np.ascontiguousarray(x)).cuda()


def _host(x):
    return x.cpu().numpy() if hasattr(x, "cpu") else x.get()


@pytest.mark.parametrize("kinds", COMBINATIONS)
def test_every_combination_against_linalg(world, rng, kinds):
    import nvmathx.linalg
    from nvmathx.distributed import linalg as dlinalg

    number = COMBINATIONS.index(kinds)
    dtype = (np.float32, np.float64, np.complex128)[number % 3]
    epilog = None if dtype == np.complex128 else EPILOGS[number % len(EPILOGS)]
    with_c = number % 2 == 0
    alpha, beta = (1.25, -0.5) if with_c else (0.5, 0)
    a, b, c, bias = _operands(rng, dtype, with_c)
    inputs = {"bias": _torch(bias)} if epilog and "BIAS" in epilog else None
    distributions = tuple(_KINDS[kind] for kind in kinds)
    result = dlinalg.matmul(_torch(a), _torch(b), _torch(c), alpha=alpha, beta=beta, distributions=distributions,
                            epilog=epilog, epilog_inputs=inputs, options=FORCED)
    single = nvmathx.linalg.matmul(_torch(a), _torch(b), _torch(c), alpha=alpha, beta=beta, epilog=epilog,
                                   epilog_inputs=inputs)
    assert result.device == single.device and result.dtype == single.dtype and result.shape == single.shape
    expected = _reference(a, b, c, alpha, beta, epilog, bias)
    _close(_host(result), expected, dtype)
    # cuBLASLt's fused epilogs may evaluate GELU in single precision
    _close(_host(result), _host(single).astype(expected.dtype), dtype, tolerance=2e-5)


@pytest.mark.parametrize("kinds", ["YXR", "YXX", "XYY", "RYY", "XRX", "BBB"])
def test_cupy_operands(world, rng, kinds):
    cupy = pytest.importorskip("cupy")
    from nvmathx.distributed import linalg as dlinalg

    a, b, c, bias = _operands(rng, np.float64, True)
    distributions = tuple(_KINDS[kind] for kind in kinds)
    result = dlinalg.matmul(cupy.asarray(a), cupy.asarray(b), cupy.asarray(c), alpha=2.0, beta=1.0,
                            distributions=distributions, epilog="RELU_BIAS",
                            epilog_inputs={"bias": cupy.asarray(bias)}, options=FORCED)
    assert isinstance(result, cupy.ndarray)
    _close(result.get(), _reference(a, b, c, 2.0, 1.0, "RELU_BIAS", bias), np.float64)


def test_cuda_core_stream(world, rng):
    import torch
    from cuda.core import Device

    from nvmathx.distributed import linalg as dlinalg

    stream = Device(0).create_stream()
    a, b, _, bias = _operands(rng, np.float32, False)
    ta, tb, tbias = _torch(a), _torch(b), _torch(bias)
    torch.cuda.synchronize()  # the copies above ran on torch's stream
    result = dlinalg.matmul(ta, tb, distributions=(Slab.Y, Slab.X, Replicated()), epilog="GELU_BIAS",
                            epilog_inputs={"bias": tbias}, options=FORCED, stream=stream)
    stream.sync()
    _close(_host(result), _reference(a, b, None, 1, 0, "GELU_BIAS", bias), np.float32)


def test_stateful_plan_execute_reset_free(world, rng):
    from nvmathx.distributed import linalg as dlinalg

    a, b, c, bias = _operands(rng, np.float64, True)
    mm = dlinalg.Matmul(_torch(a), _torch(b), _torch(c), alpha=1.5, beta=0.5,
                        distributions=(Slab.Y, Slab.X, Slab.X), options={**FORCED, "blocking": True})
    with mm:
        assert mm.strategy == "distributed" and mm.shape == SHAPE and mm.result_shape == SHAPE[::2]
        mm.plan(epilog="RELU_BIAS", epilog_inputs={"bias": _torch(bias)})
        _close(_host(mm.execute()), _reference(a, b, c, 1.5, 0.5, "RELU_BIAS", bias), np.float64)
        a2, _, c2, bias2 = _operands(rng, np.float64, True)
        mm.reset_operands(a=_torch(a2), c=_torch(c2), alpha=-1.0, epilog_inputs={"bias": _torch(bias2)})
        _close(_host(mm.execute()), _reference(a2, b, c2, -1.0, 0.5, "RELU_BIAS", bias2), np.float64)
    with pytest.raises(InvalidStateError):
        mm.execute()
    mm.free()  # twice is fine


def test_local_and_distributed_paths_agree(world, rng):
    from nvmathx.distributed import linalg as dlinalg

    a, b, _, bias = _operands(rng, np.float32, False)
    arguments = dict(distributions=(Slab.X, Replicated(), Slab.X), epilog="BIAS", epilog_inputs={"bias": _torch(bias)})
    with dlinalg.Matmul(_torch(a), _torch(b), distributions=arguments["distributions"]) as mm:
        assert mm.strategy == "local"  # one rank: nvmathx.linalg
    local = dlinalg.matmul(_torch(a), _torch(b), **arguments)
    distributed = dlinalg.matmul(_torch(a), _torch(b), options=FORCED, **arguments)
    _close(_host(distributed), _host(local).astype(np.float64), np.float32)


def test_function_form_serves_repeated_calls_with_new_values(world, rng):
    from nvmathx.distributed import linalg as dlinalg

    distributions = (BlockCyclic((1, 1), (4, 4)),) * 3
    for alpha in (0.5, -2.0, 3.0):  # the cached plan takes each call's operands, alpha and beta
        a, b, c, _ = _operands(rng, np.float64, True)
        result = dlinalg.matmul(_torch(a), _torch(b), _torch(c), alpha=alpha, beta=2.0, distributions=distributions,
                                options=FORCED)
        _close(_host(result), _reference(a, b, c, alpha, 2.0, None, None), np.float64)


def test_half_precision_without_epilog(world, rng):
    import torch

    from nvmathx.distributed import linalg as dlinalg

    a, b, _, _ = _operands(rng, np.float32, False)
    result = dlinalg.matmul(_torch(a).to(torch.bfloat16), _torch(b).to(torch.bfloat16),
                            distributions=(Slab.Y, Slab.X, Replicated()), options=FORCED)
    assert result.dtype == torch.bfloat16
    expected = _reference(a.astype(np.float64), b, None, 1, 0, None, None)
    wide = result.float().cpu().numpy()
    assert np.abs(wide - expected).max() / np.abs(expected).max() < 3e-2
