"""What a type checker infers for nvmathx calls on numpy arrays and host array-likes (lists, tuples,
scalars): read by mypy in tests/test_types.py, never run. Each ``assert_type`` is an error there when
the inferred type differs, so a missing or wrong overload (a result typed Any) fails the test."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import scipy.sparse
from typing_extensions import assert_type

import nvmathx.fft
import nvmathx.linalg
import nvmathx.sparse
from nvmathx.linalg import MatmulEpilog, matmul

a = np.ones((4, 4), dtype=np.float32)
a64: np.ndarray = np.ones((4, 4))
v64: npt.NDArray[np.float64] = np.ones(4)
rows = [[1.0, 2.0], [3.0, 4.0]]
x = np.ones(8, dtype=np.complex64)
name: str = "RELU_AUX"
Aux = tuple[np.ndarray, dict[str, np.ndarray]]

# matmul: the operands' kind out, numpy.ndarray for numpy arrays and host array-likes.
assert_type(matmul(a, a), np.ndarray)
assert_type(matmul(a64, a64, a64, beta=1.0), np.ndarray)
assert_type(matmul(rows, rows), np.ndarray)
assert_type(matmul((1.0, 2.0), [1.0, 2.0]), np.ndarray)
assert_type(matmul(a, a, alpha=np.float32(2.0), execution="cpu"), np.ndarray)
# Epilogs without auxiliary outputs, by name, member or None: the array alone.
assert_type(matmul(a, a, epilog="RELU"), np.ndarray)
assert_type(matmul(a, a, epilog="GELU_BIAS", epilog_inputs={"bias": a[0]}), np.ndarray)
assert_type(matmul(a, a, epilog=MatmulEpilog.BIAS, epilog_inputs={"bias": a[0]}), np.ndarray)
assert_type(matmul(a, a, epilog=None), np.ndarray)
# Epilogs with auxiliary outputs: (array, dict).
assert_type(matmul(a, a, epilog="RELU_AUX"), Aux)
assert_type(matmul(a64, a64, epilog="RELU_AUX_BIAS", epilog_inputs={"bias": v64}), Aux)
assert_type(matmul(a, a, epilog="GELU_AUX"), Aux)
assert_type(matmul(a, a, epilog=MatmulEpilog.GELU_AUX_BIAS, epilog_inputs={"bias": a[0]}), Aux)
assert_type(matmul(rows, rows, epilog="DRELU_BGRAD", epilog_inputs={"relu_aux": a}), Aux)
assert_type(matmul(a, a, epilog=MatmulEpilog.DGELU_BGRAD, epilog_inputs={"gelu_aux": a}), Aux)
assert_type(matmul(a, a, epilog="BGRADA"), Aux)
assert_type(matmul(a, a, epilog=MatmulEpilog.BGRADB), Aux)
y, aux = matmul(a, a, epilog="RELU_AUX")
assert_type(aux["relu_aux"], np.ndarray)
# The backward pass takes the forward pass's outputs as they are (a dict[str, numpy.ndarray]).
assert_type(matmul(y, a, epilog="DRELU", epilog_inputs=aux), np.ndarray)
# Arrays whose type holds Any (np.ndarray, NDArray[...]) select one overload all the same.
assert_type(matmul(v64[None, :], a64, epilog="RELU"), np.ndarray)
assert_type(matmul(a64, a64, epilog="BGRADA"), Aux)
assert_type(matmul(np.asarray(rows), a64), np.ndarray)
# An epilog known only at run time, or named in another case: either form.
assert_type(matmul(a, a, epilog="Relu_Aux"), np.ndarray | Aux)
assert_type(matmul(a, a, epilog=name), np.ndarray | Aux)
assert_type(matmul(a, a, epilog=MatmulEpilog(130)), np.ndarray | Aux)
# An operand whose type is unknown (an untyped library's array): unknown result.
unknown: Any = object()
assert_type(matmul(unknown, unknown), Any)

# Every fft function form, on numpy arrays and on lists.
assert_type(nvmathx.fft.fft(x), np.ndarray)
assert_type(nvmathx.fft.ifft(x), np.ndarray)
assert_type(nvmathx.fft.rfft(x), np.ndarray)
assert_type(nvmathx.fft.irfft(x), np.ndarray)
assert_type(nvmathx.fft.hfft(x), np.ndarray)
assert_type(nvmathx.fft.ihfft(x), np.ndarray)
assert_type(nvmathx.fft.fft2(x), np.ndarray)
assert_type(nvmathx.fft.ifft2(x), np.ndarray)
assert_type(nvmathx.fft.fftn(x), np.ndarray)
assert_type(nvmathx.fft.ifftn(x), np.ndarray)
assert_type(nvmathx.fft.rfft2(x), np.ndarray)
assert_type(nvmathx.fft.irfft2(x), np.ndarray)
assert_type(nvmathx.fft.rfftn(x), np.ndarray)
assert_type(nvmathx.fft.irfftn(x), np.ndarray)
assert_type(nvmathx.fft.hfft2(x), np.ndarray)
assert_type(nvmathx.fft.ihfft2(x), np.ndarray)
assert_type(nvmathx.fft.hfftn(x), np.ndarray)
assert_type(nvmathx.fft.ihfftn(x), np.ndarray)
assert_type(nvmathx.fft.fft([1.0, 2.0, 3.0, 4.0]), np.ndarray)
scalar: np.float64 = np.float64(1.0)
assert_type(nvmathx.fft.fft(scalar), np.ndarray)  # numpy scalars are host array-likes, not arrays
assert_type(nvmathx.fft.rfft(v64), np.ndarray)  # numpy.ndarray, not NDArray[float64]: the result is complex
assert_type(nvmathx.fft.rfftn(rows, axes=(0, 1), execution="cpu"), np.ndarray)
assert_type(nvmathx.fft.ifft2(a64, s=(4, 4), norm="ortho"), np.ndarray)
assert_type(nvmathx.fft.fftshift(v64), np.ndarray)
assert_type(nvmathx.fft.ifftshift([0.0, 1.0, 2.0], axes=0), np.ndarray)

# The dense solvers.
assert_type(nvmathx.linalg.solve(a64, v64), np.ndarray)
assert_type(nvmathx.linalg.solve(rows, [1.0, 2.0], assume_a="pos"), np.ndarray)
assert_type(nvmathx.linalg.direct_solver(a64, a64), np.ndarray)

# The sparse function forms: a sparse a (typed loosely), the dense b's kind out.
csr = scipy.sparse.csr_array(a64)
assert_type(nvmathx.sparse.matmul(csr, a64), np.ndarray)
assert_type(nvmathx.sparse.matmul(csr, [1.0, 2.0, 3.0, 4.0], [0.0] * 4, beta=1.0), np.ndarray)
assert_type(nvmathx.sparse.spsolve(csr, v64), np.ndarray)
