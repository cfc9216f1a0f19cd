"""What numpy and scipy users rely on, on both execution spaces: dtypes (half precision computed in
single precision, unsupported dtypes refused naming ``x``), scipy.fft's ``workers`` rules, and the
stateful FFT's argument checks. Values are checked against an explicit float64 DFT."""

import os

import numpy as np
import pytest
import scipy.fft

import nvmathx.fft as nfft
from helpers.dft import dft_reference, relative_error
from nvmathx import OperandError, OptionsError, UnsupportedOperandError

REAL_TO_COMPLEX = ["rfft", "rfft2", "rfftn", "ihfft", "ihfft2", "ihfftn"]


def _torch():
    return pytest.importorskip("torch")


def _gpu_torch():
    torch = _torch()
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA")
    return torch


def _to_gpu(host):
    """A GPU copy of a host array: cupy where installed, else torch CUDA."""
    try:
        import cupy
    except ImportError:
        torch = _gpu_torch()
        return torch.from_numpy(np.ascontiguousarray(host)).cuda()
    return cupy.asarray(host)


def _to_host(array):
    if hasattr(array, "get"):
        return array.get()
    if hasattr(array, "cpu"):
        return array.cpu().numpy()
    return np.asarray(array)


# -- float16 and bfloat16: single precision, complex64 results, on every space ------------------------

HALF_SPACES = [
    "numpy",
    "torch-cpu",
    pytest.param("gpu", marks=pytest.mark.gpu),
    pytest.param("torch-cuda", marks=pytest.mark.gpu),
]


def _half_operand(space, dtype_name, values):
    if space in ("numpy", "gpu"):
        import ml_dtypes

        host = values.astype(ml_dtypes.bfloat16 if dtype_name == "bfloat16" else np.float16)
        if space == "gpu":
            if dtype_name == "bfloat16":  # cupy has no bfloat16: torch is the GPU array library here
                torch = _gpu_torch()
                return host, torch.from_numpy(values.astype(np.float32)).to("cuda", torch.bfloat16)
            return host, _to_gpu(host)
        return host, host
    torch = _torch() if space == "torch-cpu" else _gpu_torch()
    tensor = torch.from_numpy(values.astype(np.float32)).to(getattr(torch, dtype_name))
    if space == "torch-cuda":
        tensor = tensor.cuda()
    return tensor.float().cpu().numpy(), tensor


@pytest.mark.parametrize("space", HALF_SPACES)
@pytest.mark.parametrize("dtype_name", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", ["fft", "rfft", "fftn", "rfft2", "ihfft"])
def test_half_precision_computes_in_single_precision(rng, space, dtype_name, name):
    exact, x = _half_operand(space, dtype_name, rng.standard_normal((6, 16)))
    result = getattr(nfft, name)(x)
    assert type(result).__module__.partition(".")[0] == type(x).__module__.partition(".")[0]
    host = _to_host(result)
    assert host.dtype == np.complex64
    # The reference transforms the values the operand holds (already rounded to half precision).
    expected = dft_reference(name, np.asarray(exact, np.float64))
    assert relative_error(host, expected) < 1e-5


@pytest.mark.parametrize("space", ["numpy", "torch-cpu"])
@pytest.mark.parametrize("dtype_name", ["float16", "bfloat16"])
def test_stateful_half_precision(rng, space, dtype_name):
    exact, x = _half_operand(space, dtype_name, rng.standard_normal((4, 10)))
    with nfft.FFT(x, axes=[1]) as f:
        f.plan()
        result = _to_host(f.execute())
    assert result.dtype == np.complex64
    assert relative_error(result, dft_reference("rfftn", np.asarray(exact, np.float64), axes=(1,))) < 1e-5


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint16, np.int32, np.int64])
def test_bool_and_integers_compute_in_double_precision(rng, dtype):
    x = (rng.standard_normal((3, 12)) * 4).astype(dtype)
    for name in ("fft", "rfft"):
        result = getattr(nfft, name)(x)
        assert result.dtype == np.complex128
        assert relative_error(result, dft_reference(name, x.astype(np.float64))) < 1e-12


# -- unsupported dtypes: UnsupportedOperandError naming x, never scipy's own errors ---------------------


def _unsupported_host_arrays():
    import ml_dtypes

    values = np.arange(1, 9)
    return {
        "object": values.astype(object),
        "str": values.astype(str),
        "bytes": values.astype(bytes),
        "longdouble": values.astype(np.longdouble),
        "clongdouble": values.astype(np.clongdouble),
        "datetime64": values.astype("datetime64[s]"),
        "float8_e4m3fn": values.astype(ml_dtypes.float8_e4m3fn),
    }


@pytest.mark.parametrize("kind", ["object", "str", "bytes", "longdouble", "clongdouble", "datetime64", "float8_e4m3fn"])
@pytest.mark.parametrize("call", ["fft", "rfft", "irfft", "hfft", "fftn", "FFT"])
def test_unsupported_dtypes_name_x(kind, call):
    x = _unsupported_host_arrays()[kind]
    if np.dtype(x.dtype).itemsize == np.dtype(np.float64).itemsize and kind == "longdouble":
        pytest.skip("long double is double precision on this platform")
    with pytest.raises(UnsupportedOperandError) as info:
        nfft.FFT(x).plan() if call == "FFT" else getattr(nfft, call)(x)
    assert info.value.argument == "x" and str(info.value).startswith("x: dtype ")


@pytest.mark.parametrize("name", REAL_TO_COMPLEX)
@pytest.mark.parametrize("space", ["numpy", "torch-cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
def test_real_to_complex_of_a_complex_array_names_x(rng, name, space):
    host = (rng.standard_normal((4, 8)) + 1j * rng.standard_normal((4, 8))).astype(np.complex64)
    x = {"numpy": lambda: host, "torch-cpu": lambda: _torch().from_numpy(host), "gpu": lambda: _to_gpu(host)}[space]()
    with pytest.raises(UnsupportedOperandError, match="^x: a real-to-complex transform needs a real operand") as info:
        getattr(nfft, name)(x)
    assert isinstance(info.value, TypeError)


@pytest.mark.gpu
def test_gpu_unsupported_dtype_names_x():
    torch = _gpu_torch()
    with pytest.raises(UnsupportedOperandError, match="^x: "):
        nfft.fft(torch.ones(8, device="cuda").to(torch.float8_e4m3fn))


# -- workers: scipy.fft's rules --------------------------------------------------------------------------


@pytest.mark.parametrize("workers", [None, 1, 2, -1, -(os.cpu_count() or 1)])
def test_valid_workers_on_host_arrays(rng, workers):
    x = rng.standard_normal((4, 16)) + 1j * rng.standard_normal((4, 16))
    assert relative_error(nfft.fft(x, workers=workers), dft_reference("fft", x)) < 1e-12
    assert relative_error(nfft.rfftn(x.real, workers=workers), dft_reference("rfftn", x.real)) < 1e-12


@pytest.mark.parametrize("workers", [0, -(os.cpu_count() or 1) - 1, "x", 1.5, True, [2]])
@pytest.mark.parametrize("name", ["fft", "irfft", "hfftn"])
def test_invalid_workers_on_host_arrays_name_workers(workers, name):
    with pytest.raises(OptionsError, match="^workers: ") as info:
        getattr(nfft, name)(np.ones((4, 8), complex), workers=workers)
    assert info.value.argument == "workers" and isinstance(info.value, ValueError)


@pytest.mark.gpu
@pytest.mark.parametrize("workers", [1, -1, 4])
@pytest.mark.parametrize("name", ["fft", "rfftn", "irfft"])
def test_workers_with_a_gpu_array_is_a_value_error_as_in_scipy(rng, name, workers):
    x = _to_gpu(rng.standard_normal((4, 8)) + (0 if name == "rfftn" else 1j))
    with pytest.raises(ValueError, match="^workers: ") as info:
        getattr(nfft, name)(x, workers=workers)
    assert isinstance(info.value, OptionsError)
    with scipy.fft.set_backend(nfft.backend), pytest.raises(ValueError, match="^workers: "):
        getattr(scipy.fft, name)(x, workers=workers)
    assert _to_host(getattr(nfft, name)(x, workers=None)).size  # None is fine


# -- the stateful FFT's arguments ------------------------------------------------------------------------


def test_stream_is_refused_on_the_cpu_execution_space(rng):
    x = rng.standard_normal(16) + 0j
    with pytest.raises(OptionsError, match="^stream: CPU execution takes no stream"):
        nfft.FFT(x, stream=0)
    with nfft.FFT(x) as f:
        f.plan()
        with pytest.raises(OptionsError, match="^stream: "):
            f.execute(stream=0)
        assert relative_error(f.execute(), dft_reference("fft", x)) < 1e-12


@pytest.mark.parametrize("value", [np.array(1 + 0j), np.array(2.0)])
def test_a_0d_operand_names_x(value):
    with pytest.raises(OperandError, match="^x: .*0-d") as info:
        nfft.FFT(value)
    assert info.value.argument == "x"
    with pytest.raises(OptionsError, match="^x: .*0-d"):
        nfft.fft(value)


def test_an_inplace_fft_of_a_read_only_array_fails_at_construction(rng):
    x = rng.standard_normal(16) + 1j * rng.standard_normal(16)
    original = x.copy()
    x.flags.writeable = False
    with pytest.raises(OperandError, match="^x: is read-only"):
        nfft.FFT(x, options={"inplace": True})
    with nfft.FFT(x) as f:  # out of place, a read-only operand is fine
        f.plan()
        assert relative_error(f.execute(), dft_reference("fft", x)) < 1e-12
    writeable = x.copy()
    with nfft.FFT(writeable, options={"inplace": True}) as f:
        f.plan()
        with pytest.raises(OperandError, match="^x: is read-only"):
            f.reset_operand(x)
        assert f.execute() is writeable
    np.testing.assert_array_equal(x, original)  # never written
