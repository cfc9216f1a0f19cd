"""beta == 0 never reads c (BLAS and cuBLAS semantics): NaN and Inf in c must not reach the result,
with or without epilogs, on the CPU space and (``gpu`` marker) on the GPU."""

import numpy as np
import pytest

from nvmathx.linalg import Matmul, matmul

from ._reference import gelu, random, reference, relative_error, tolerance

M, N, K = 24, 20, 12
REAL = ["float16", "bfloat16", "float32", "float64"]
COMPLEX = ["complex64", "complex128"]
EPILOGS = [None, "RELU", "BIAS", "GELU_AUX_BIAS"]
CASES = [(dtype, epilog) for dtype in REAL for epilog in EPILOGS] + [(dtype, None) for dtype in COMPLEX]


def _poisoned(rng, shape, dtype):
    """c full of NaN and +-Inf (and no finite value at all)."""
    from nvmathx._core.dtypes import numpy_dtype

    poison = np.array([np.nan, np.inf, -np.inf])
    values = np.empty(shape, numpy_dtype(dtype))
    values.real = rng.choice(poison, size=shape)
    if dtype in COMPLEX:
        values.imag = rng.choice(poison, size=shape)
    return values


def _zeros(dtype):
    return [0, 0.0, 0j, np.float32(0)] if dtype in COMPLEX else [0, 0.0, -0.0, np.float64(0)]


def _expected(a, b, epilog, bias):
    d = reference(a, b)
    if epilog and "BIAS" in epilog:
        d = d + np.asarray(bias).astype(np.float64)
    if epilog and "RELU" in epilog:
        d = np.maximum(d, 0)
    if epilog and "GELU" in epilog:
        d = gelu(d)
    return d


def _operands(rng, dtype, epilog, batch=(2,)):
    a, b = random(rng, batch + (M, K), dtype), random(rng, (K, N), dtype)
    bias = random(rng, (N,), dtype) if epilog and "BIAS" in epilog else None
    return a, b, _poisoned(rng, batch + (M, N), dtype), bias


def _first(out):
    return out[0] if isinstance(out, tuple) else out


@pytest.mark.parametrize("dtype, epilog", CASES)
def test_cpu_function_never_reads_c(rng, dtype, epilog):
    a, b, c, bias = _operands(rng, dtype, epilog)
    expected = _expected(a, b, epilog, bias)
    for beta in _zeros(dtype):
        inputs = {"bias": bias} if bias is not None else None
        result = _first(matmul(a, b, c, beta=beta, epilog=epilog, epilog_inputs=inputs))
        assert np.isfinite(np.asarray(result, np.complex128)).all(), beta
        assert relative_error(result, expected) < tolerance(dtype), beta


@pytest.mark.parametrize("dtype", ["float32", "complex128"])
def test_cpu_stateful_never_reads_c(rng, dtype):
    a, b, c, _ = _operands(rng, dtype, None)
    c_broadcast = _poisoned(rng, (M, N), dtype)  # broadcast over the batch
    for addend in (c, c_broadcast):
        with Matmul(a, b, addend, alpha=2.0, beta=1.0) as mm:
            mm.plan()
            assert not np.isfinite(np.asarray(mm.execute(), np.complex128)).any()  # beta 1 reads c
            for beta in _zeros(dtype):
                mm.reset_operands(beta=beta)
                result = mm.execute()
                assert relative_error(result, reference(a, b, alpha=2.0)) < tolerance(dtype), beta


# -- GPU -----------------------------------------------------------------------------------------


def _torch(array):
    from ._gpu import to_torch

    return to_torch(array)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype, epilog", CASES)
def test_gpu_never_reads_c(rng, dtype, epilog):
    from ._gpu import to_numpy

    a, b, c, bias = _operands(rng, dtype, epilog)
    expected = _expected(a, b, epilog, bias)
    inputs = {"bias": _torch(bias)} if bias is not None else None
    ta, tb, tc = _torch(a), _torch(b), _torch(c)
    for beta in _zeros(dtype):
        result = to_numpy(_first(matmul(ta, tb, tc, beta=beta, epilog=epilog, epilog_inputs=inputs)))
        assert np.isfinite(np.asarray(result, np.complex128)).all(), beta
        assert relative_error(result, expected) < max(tolerance(dtype), 1e-4 if epilog else 0), beta
    with Matmul(ta, tb, tc, beta=1.0) as mm:
        mm.plan(epilog=epilog, epilog_inputs=inputs)
        if epilog in (None, "BIAS"):  # (cuBLASLt's ReLU maps NaN to 0)
            assert not np.isfinite(np.asarray(to_numpy(_first(mm.execute())), np.complex128)).all()  # beta 1 reads c
        mm.reset_operands(beta=0)
        result = to_numpy(_first(mm.execute()))
        assert relative_error(result, expected) < max(tolerance(dtype), 1e-4 if epilog else 0)


@pytest.mark.gpu
def test_gpu_cupy_and_staged_never_read_c(rng):
    cupy = pytest.importorskip("cupy")
    a, b, c, _ = _operands(rng, "float64", None)
    expected = reference(a, b)
    result = matmul(cupy.asarray(a), cupy.asarray(b), cupy.asarray(c), beta=0.0)
    assert relative_error(cupy.asnumpy(result), expected) < 1e-12
    staged = matmul(a, b, c, beta=0, execution="cuda")  # numpy operands copied to the GPU and back
    assert relative_error(staged, expected) < 1e-12
