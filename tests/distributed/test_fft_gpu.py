"""The distributed FFT and reshape on an H200 at world size 1, on the forced distributed path (cuFFT
passes, moves, NCCL with ``loopback``), against single-GPU nvmathx.fft and numpy in float64."""

import numpy as np
import pytest

from nvmathx.distributed import Box, Slab

pytestmark = pytest.mark.gpu

CASES = [  # kind, global shape, axes
    ("fft", (32, 48), None), ("ifft", (17, 12, 10), None), ("rfft", (24, 30), None), ("rfft", (9, 16, 12), None),
    ("irfft", (16, 13), None), ("irfft", (8, 10, 9), None), ("fft", (3, 16, 20), (1, 2)),
    ("rfft", (2, 8, 6, 10), (1, 2, 3)),
]


def _operand(rng, kind, shape, axes, dtype):
    transformed = axes or tuple(range(len(shape)))
    if kind == "rfft":
        return rng.standard_normal(shape).astype(dtype)
    complex_dtype = np.complex64 if dtype == np.float32 else np.complex128
    if kind == "irfft":
        return np.fft.rfftn(rng.standard_normal(shape), axes=transformed).astype(complex_dtype)
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(complex_dtype)


def _to(library, host):
    if library == "cupy":
        cupy = pytest.importorskip("cupy")
        return cupy.asarray(host)
    torch = pytest.importorskip("torch")
    return torch.from_numpy(host).cuda()


def _host(array):
    return array.get() if hasattr(array, "get") else array.cpu().numpy()


def _error(result, expected):
    return np.linalg.norm(result - expected) / np.linalg.norm(expected)


@pytest.mark.parametrize("library", ["torch", "cupy"])
@pytest.mark.parametrize("loopback", [False, True])
@pytest.mark.parametrize("distribution", [Slab.X, Slab.Y])
@pytest.mark.parametrize("reshape", [True, False])
@pytest.mark.parametrize("precision", [np.float32, np.float64])
@pytest.mark.parametrize("kind, shape, axes", CASES)
def test_against_single_gpu_and_numpy(gpu_world, rng, kind, shape, axes, precision, reshape, distribution, loopback,
                                      library):
    import nvmathx.fft as single
    from nvmathx.distributed import fft as dfft

    host = _operand(rng, kind, shape, axes, precision)
    x = _to(library, host)
    options = {"force_distributed": True, "loopback": loopback}
    result = getattr(dfft, kind)(x, distribution, axes=axes, norm="ortho", reshape=reshape, options=options)
    assert type(result) is type(x)
    transformed = axes or tuple(range(len(shape)))
    wide = host.astype(np.complex128 if host.dtype.kind == "c" else np.float64)
    expected = getattr(np.fft, kind + "n")(wide, axes=transformed, norm="ortho")
    reference = getattr(single, kind + "n")(x, axes=transformed, norm="ortho")
    tolerance = 1e-5 if precision == np.float32 else 1e-12
    assert _error(_host(result), expected) < tolerance
    assert _error(_host(result), _host(reference)) < tolerance
    assert str(result.dtype) == str(reference.dtype)


@pytest.mark.parametrize("loopback", [False, True])
def test_stateful_both_directions_on_a_cuda_core_stream(gpu_world, rng, loopback):
    from cuda.core import Device

    torch = pytest.importorskip("torch")
    from nvmathx.distributed.fft import FFT

    host = (rng.standard_normal((16, 12, 10)) + 1j * rng.standard_normal((16, 12, 10))).astype(np.complex64)
    x = torch.from_numpy(host).cuda()
    stream = Device(0).create_stream()
    with FFT(x, Slab.X, options={"force_distributed": True, "loopback": loopback}) as plan:
        plan.plan()
        forward = plan.execute(stream=stream)
        inverse = plan.execute("inverse", stream=stream)
        stream.sync()
        assert _error(forward.cpu().numpy(), np.fft.fftn(host.astype(np.complex128))) < 1e-5
        assert _error(inverse.cpu().numpy(), np.fft.ifftn(host.astype(np.complex128)) * host.size) < 1e-5
        replacement = torch.from_numpy(host[::-1].copy()).cuda()
        plan.reset_operand(replacement)
        again = plan.execute(stream=stream)
        stream.sync()
        assert _error(again.cpu().numpy(), np.fft.fftn(host[::-1].astype(np.complex128))) < 1e-5


@pytest.mark.parametrize("loopback", [False, True])
def test_execute_is_captured_in_a_cuda_graph(gpu_world, rng, loopback):
    torch = pytest.importorskip("torch")
    from nvmathx.distributed.fft import FFT

    host = (rng.standard_normal((32, 24, 16)) + 1j * rng.standard_normal((32, 24, 16))).astype(np.complex64)
    x = torch.from_numpy(host).cuda()
    plan = FFT(x, Slab.X, options={"force_distributed": True, "loopback": loopback, "reshape": False})
    plan.plan()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        plan.execute()  # buffers made before capture
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = plan.execute()
    fresh = (rng.standard_normal(host.shape) + 1j * rng.standard_normal(host.shape)).astype(np.complex64)
    x.copy_(torch.from_numpy(fresh).cuda())
    graph.replay()
    torch.cuda.synchronize()
    assert _error(captured.cpu().numpy(), np.fft.fftn(fresh.astype(np.complex128))) < 1e-5
    plan.free()


def test_reshape_round_trip_is_exact(gpu_world, rng):
    import cupy

    from nvmathx.distributed import Reshape, reshape

    host = rng.standard_normal((7, 9, 5)).astype(np.float32)
    whole = Box((0, 0, 0), host.shape)
    x = cupy.asarray(host)
    moved = reshape(x, whole, whole, options={"loopback": True})
    assert isinstance(moved, cupy.ndarray) and np.array_equal(moved.get(), host)
    with Reshape(x, whole, whole, options={"loopback": True}) as plan:
        plan.plan()
        assert np.array_equal(plan.execute().get(), host)


def test_world_size_one_default_is_the_single_gpu_path(gpu_world, rng):
    import cupy

    from nvmathx.distributed import fft as dfft

    host = (rng.standard_normal((16, 16)) + 1j * rng.standard_normal((16, 16))).astype(np.complex128)
    result = dfft.fft(cupy.asarray(host))
    assert _error(result.get(), np.fft.fft2(host)) < 1e-12
    with dfft.FFT(cupy.asarray(host)) as plan:
        assert not plan.runs_distributed
