"""numpy.matmul batch broadcasting on the GPU (cupy and torch CUDA operands): partly broadcast
batches as several cuBLASLt calls or with inputs copied to the full batch, against numpy in float64."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nvmathx._bindings.cublaslt import CublasLtError
from nvmathx.linalg import Matmul, matmul

from ._broadcast_cases import (
    POSITIVE_LAYOUTS,
    cases,
    expected_result,
    make_operand,
    make_operands,
    rounding_error,
    run_product,
)
from ._reference import random, relative_error, tolerance

pytestmark = pytest.mark.gpu

M, N, K = 24, 40, 16
# (a batch, b batch): several calls, inputs copied (many tiny calls), four batch axes, a permuted
# batch (no single stride), and a plain batch that stays one call.
SHAPES = [((2, 1), (3,)), ((48, 1), (48,)), ((2, 1, 3, 1), (4, 1, 2)), ((3, 2), (1,)), ((2, 3), ())]
LAYOUTS = {((3, 2), (1,)): "permuted"}


def _on_gpu(x, library):
    """A device copy of ``x`` with its exact strides (its whole base array is copied)."""
    root = x
    while isinstance(root.base, np.ndarray):
        root = root.base
    root = np.ascontiguousarray(root)
    offset = (x.__array_interface__["data"][0] - root.__array_interface__["data"][0]) // x.itemsize
    strides = tuple(s // x.itemsize for s in x.strides)
    if library == "torch":
        import torch

        from ._gpu import to_torch

        return torch.as_strided(to_torch(root), x.shape, strides, offset)
    import cupy

    base = cupy.asarray(root)
    return cupy.ndarray(x.shape, x.dtype, base.data + offset * x.itemsize, tuple(s * x.itemsize for s in strides))


def _to_numpy(x, dtype):
    if hasattr(x, "get"):
        return x.get()
    from ._gpu import to_numpy

    return to_numpy(x, dtype)


def _first(out):
    return out[0] if isinstance(out, tuple) else out


@pytest.mark.parametrize("extra", [None, "c", "bias"])
@pytest.mark.parametrize("form", ["function", "stateful"])
@pytest.mark.parametrize("a_batch, b_batch", SHAPES)
@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
@pytest.mark.parametrize("library", ["torch", "cupy"])
def test_broadcast_batches_match_numpy(rng, library, dtype, a_batch, b_batch, form, extra):
    pytest.importorskip(library)
    layout = LAYOUTS.get((a_batch, b_batch), "C")
    a = make_operand(rng, a_batch, M, K, layout, dtype)
    b = make_operand(rng, b_batch, K, N, "T", dtype)
    batch = np.broadcast_shapes(a_batch, b_batch)
    c = random(rng, batch[1:] + (M, N), dtype) if extra == "c" else None  # broadcast over the first axis
    epilog = "RELU_BIAS" if extra == "bias" else None
    inputs = {"bias": random(rng, batch[-1:] + (1, N), dtype)} if extra == "bias" else None
    alpha, beta = 0.5, (2.0 if c is not None else 0)
    expected = expected_result(a, b, c, alpha, beta, epilog, inputs)
    args = [_on_gpu(x, library) if x is not None else None for x in (a, b, c)]
    device_inputs = {name: _on_gpu(x, library) for name, x in inputs.items()} if inputs else None
    try:
        if form == "function":
            matmul(*args, alpha=alpha, beta=beta, epilog=epilog, epilog_inputs=device_inputs)  # then from the cache:
        result = run_product(*args, alpha, beta, epilog, device_inputs, form == "stateful")
    except CublasLtError as error:
        if dtype != "float64" or epilog is None or error.status_name != "CUBLAS_STATUS_NOT_SUPPORTED":
            raise
        pytest.skip(f"cuBLASLt does not support {epilog} for float64 on this device")
    result = _to_numpy(_first(result), dtype)
    assert result.shape == expected.shape
    assert rounding_error(result, expected, a, b, c, alpha, beta, inputs) < tolerance(dtype)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None, max_examples=60)
@given(case=cases(layouts=POSITIVE_LAYOUTS, extents=(1, 7, 33)), library=st.sampled_from(["torch", "cupy"]),
       draw=st.integers(0, 2**32 - 1))
def test_random_broadcasts_match_numpy(seed, case, library, draw):
    pytest.importorskip(library)
    rng = np.random.default_rng([seed, draw])
    a, b, c, inputs = make_operands(rng, case, "float32")  # (cuBLASLt's epilogs need not take float64)
    alpha, beta = -1.5, (0.5 if c is not None else 0)
    expected = expected_result(a, b, c, alpha, beta, case.epilog, inputs)
    device_inputs = {name: _on_gpu(x, library) for name, x in inputs.items()} if inputs else None
    result = matmul(_on_gpu(a, library), _on_gpu(b, library), _on_gpu(c, library) if c is not None else None,
                    alpha=alpha, beta=beta, epilog=case.epilog, epilog_inputs=device_inputs)
    assert rounding_error(_to_numpy(result, "float32"), expected, a, b, c, alpha, beta, inputs) < tolerance("float32")


def test_copies_are_refreshed_when_an_input_changes_in_place(rng):
    torch = pytest.importorskip("torch")
    a, b = random(rng, (48, 1, 4, 4), "float32"), random(rng, (48, 4, 4), "float32")
    ta, tb = _on_gpu(a, "torch"), _on_gpu(b, "torch")
    with Matmul(ta, tb) as mm:
        mm.plan()
        assert mm._runner.copies is not None and set(mm._runner.copies.names) == {"a", "b"}
        assert relative_error(_to_numpy(mm.execute(), "float32"), np.matmul(a, b)) < 1e-5
        ta.mul_(-2.0)
        assert relative_error(_to_numpy(mm.execute(), "float32"), np.matmul(-2.0 * a, b)) < 1e-5
        mm.autotune(iterations=2)
        assert relative_error(_to_numpy(mm.execute(), "float32"), np.matmul(-2.0 * a, b)) < 1e-5
    torch.cuda.synchronize()
