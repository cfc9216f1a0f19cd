"""Shared helpers of the linalg tests: random operands and float64 references."""

import numpy as np

from nvmathx._matmulcore.epilogs import gelu, gelu_derivative, pack_relu_mask, relu_mask

__all__ = ["random", "reference", "tolerance", "epilog_operands", "gelu", "gelu_derivative", "pack_relu_mask",
           "relu_mask", "FORWARD", "BACKWARD"]

FORWARD = ["RELU", "GELU", "BIAS", "RELU_BIAS", "GELU_BIAS", "RELU_AUX", "RELU_AUX_BIAS", "GELU_AUX", "GELU_AUX_BIAS"]
BACKWARD = ["DRELU", "DRELU_BGRAD", "DGELU", "DGELU_BGRAD", "BGRADA", "BGRADB"]

_TOLERANCES = {"float16": 2e-2, "bfloat16": 5e-2, "float32": 1e-5, "float64": 1e-12, "complex64": 1e-5,
               "complex128": 1e-12, "float8_e4m3fn": 1.5e-1, "float8_e5m2": 3e-1}


def tolerance(dtype_name: str) -> float:
    """Relative (norm-wise) tolerance for a result of ``dtype_name``."""
    return _TOLERANCES[dtype_name]


def random(rng, shape, dtype="float32"):
    """Fresh standard-normal data of ``dtype`` (complex gets a random imaginary part too)."""
    from nvmathx._core.dtypes import numpy_dtype

    dtype = numpy_dtype(dtype)
    values = rng.standard_normal(shape)
    if dtype.kind == "c":
        values = values + 1j * rng.standard_normal(shape)
    return np.asarray(values).astype(dtype)


def reference(a, b, c=None, alpha=1.0, beta=0.0):
    """alpha * a @ b + beta * c in float64 / complex128."""
    wide = np.complex128 if np.iscomplexobj(a) else np.float64
    d = alpha * np.matmul(np.asarray(a).astype(wide), np.asarray(b).astype(wide))
    if c is not None:
        d = d + beta * np.asarray(c).astype(wide)
    return d


def relative_error(result, expected) -> float:
    result = np.asarray(result).astype(np.complex128 if np.iscomplexobj(expected) else np.float64)
    scale = np.linalg.norm(np.ravel(expected)) or 1.0
    return float(np.linalg.norm(np.ravel(result - expected)) / scale)


def epilog_operands(rng, dtype, epilog, batch, m, n, k, gelu_aux_ld=None):
    """(a, b, epilog_inputs) for an epilog: a column-major ``a`` for BGRADA (as cuBLASLt needs),
    a bias of shape (N,), or a forward pass's relu_aux / gelu_aux (the latter a view of a buffer
    with leading dimension ``gelu_aux_ld`` when given)."""
    if epilog == "BGRADA":
        a = random(rng, batch + (k, m), dtype).swapaxes(-1, -2)
    else:
        a = random(rng, batch + (m, k), dtype)
    b = random(rng, (k, n), dtype)
    inputs = {}
    if epilog and "BIAS" in epilog and "BGRAD" not in epilog:
        inputs["bias"] = random(rng, (n,), dtype)
    z = random(rng, batch + (m, n), dtype)
    if epilog in ("DRELU", "DRELU_BGRAD"):
        inputs["relu_aux"] = pack_relu_mask(np.asarray(z, np.float32) > 0)
    if epilog in ("DGELU", "DGELU_BGRAD"):
        padded = np.zeros(batch + (m, gelu_aux_ld or n), z.dtype)
        padded[..., :n] = z
        inputs["gelu_aux"] = padded[..., :n]
    return a, b, inputs
