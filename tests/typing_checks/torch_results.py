"""What a type checker infers for nvmathx calls on torch tensors: read by mypy in tests/test_types.py
where torch is installed, never run. Each ``assert_type`` is an error there when the inferred type
differs: an array type in gives that type out."""

from __future__ import annotations

import torch
from typing_extensions import assert_type

import nvmathx.fft
import nvmathx.linalg
import nvmathx.sparse
from nvmathx.linalg import MatmulEpilog, matmul
from nvmathx.typing import ArrayT

t = torch.ones(4, 4)
name: str = "RELU_AUX"
Aux = tuple[torch.Tensor, dict[str, torch.Tensor]]
# torch's own types are seen (were torch.Tensor Any here, every check below would pass vacuously).
not_any: int = t  # type: ignore[assignment]

assert_type(matmul(t, t), torch.Tensor)
assert_type(matmul(t, t, t, beta=1.0, epilog="RELU"), torch.Tensor)
assert_type(matmul(t, t, epilog=MatmulEpilog.BIAS, epilog_inputs={"bias": t[0]}), torch.Tensor)
assert_type(matmul(t, t, epilog="RELU_AUX"), Aux)
assert_type(matmul(t, t, epilog="GELU_AUX_BIAS", epilog_inputs={"bias": t[0]}), Aux)
assert_type(matmul(t, t, epilog=MatmulEpilog.DGELU_BGRAD, epilog_inputs={"gelu_aux": t}), Aux)
assert_type(matmul(t, t, epilog=name), torch.Tensor | Aux)
z, outputs = matmul(t, t, epilog="GELU_AUX")
assert_type(matmul(z, t, epilog="DGELU_BGRAD", epilog_inputs=outputs), Aux)

assert_type(nvmathx.fft.fft(t), torch.Tensor)
assert_type(nvmathx.fft.ifft(t), torch.Tensor)
assert_type(nvmathx.fft.rfft(t), torch.Tensor)
assert_type(nvmathx.fft.irfft(t), torch.Tensor)
assert_type(nvmathx.fft.hfft(t), torch.Tensor)
assert_type(nvmathx.fft.ihfft(t), torch.Tensor)
assert_type(nvmathx.fft.fft2(t), torch.Tensor)
assert_type(nvmathx.fft.ifft2(t), torch.Tensor)
assert_type(nvmathx.fft.fftn(t), torch.Tensor)
assert_type(nvmathx.fft.ifftn(t), torch.Tensor)
assert_type(nvmathx.fft.rfft2(t), torch.Tensor)
assert_type(nvmathx.fft.irfft2(t), torch.Tensor)
assert_type(nvmathx.fft.rfftn(t), torch.Tensor)
assert_type(nvmathx.fft.irfftn(t), torch.Tensor)
assert_type(nvmathx.fft.hfft2(t), torch.Tensor)
assert_type(nvmathx.fft.ihfft2(t), torch.Tensor)
assert_type(nvmathx.fft.hfftn(t), torch.Tensor)
assert_type(nvmathx.fft.ihfftn(t), torch.Tensor)
assert_type(nvmathx.fft.fftn(t, axes=(0, 1), execution="cpu"), torch.Tensor)
assert_type(nvmathx.fft.fftshift(t), torch.Tensor)
assert_type(nvmathx.fft.ifftshift(t, axes=(0,)), torch.Tensor)

assert_type(nvmathx.linalg.solve(t, t[0]), torch.Tensor)
assert_type(nvmathx.linalg.direct_solver(t, t), torch.Tensor)

s = t.to_sparse_csr()
assert_type(nvmathx.sparse.matmul(s, t), torch.Tensor)
assert_type(nvmathx.sparse.spsolve(s, t[0]), torch.Tensor)


def spectrum(x: ArrayT) -> ArrayT:
    """A caller's wrapper keeps its operand's type with ArrayT."""
    return nvmathx.fft.rfft(x)


assert_type(spectrum(t), torch.Tensor)
