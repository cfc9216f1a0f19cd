"""An independent model of float8 training for the layers' tests: per-tensor scales (delayed or
dynamic, as TransformerEngine defines them), quantisation with torch's float8 dtypes (saturated
first: torch's casts overflow to NaN), and GEMMs in float64 from the quantised values.

It follows the documented semantics of nvmathx.torch.Float8Recipe, not the code: each tensor slot
keeps the amaxes of its casts; a slot's first cast scales by its own amax; later casts take
``fp8_max / amax / 2**margin`` with amax the largest of the last ``history_len`` casts' amaxes
(or the latest, ``most_recent``), keeping the previous scale for a zero or non-finite amax. The
GEMMs' results are rounded to the layers' dtype, as cuBLASLt writes them.
"""

import math

import numpy as np
import torch

__all__ = ["Float8Model", "gelu", "gelu_derivative"]

LARGEST = {torch.float8_e4m3fn: 448.0, torch.float8_e5m2: 57344.0}


def gelu(z):
    return 0.5 * z * (1 + torch.tanh(0.7978845608028654 * (z + 0.044715 * z ** 3)))


def gelu_derivative(z):
    t = torch.tanh(0.7978845608028654 * (z + 0.044715 * z ** 3))
    return 0.5 * (1 + t) + 0.5 * z * (1 - t * t) * 0.7978845608028654 * (1 + 3 * 0.044715 * z * z)


class _Slot:
    def __init__(self, dtype):
        self.dtype, self.amaxes, self.scale = dtype, [], 1.0


class Float8Model:
    """The float8 computation of a FusedLinear (``kind="linear"``) or FusedMLP (``"mlp"``), step by step."""

    def __init__(self, kind, scaling="delayed", fmt="hybrid", history_len=1024, algo="max", margin=0):
        gradient = torch.float8_e5m2 if fmt == "hybrid" else torch.float8_e4m3fn
        names = (("input", "weight", "grad_output") if kind == "linear" else
                 ("input", "fc1.weight", "hidden", "fc2.weight", "grad_output", "grad_hidden"))
        self.slots = {name: _Slot(gradient if name.startswith("grad") else torch.float8_e4m3fn) for name in names}
        self.scaling, self.history_len, self.algo, self.margin = scaling, history_len, algo, margin
        self.weight_seen = {}

    def _scale(self, slot, amax):
        """The scale of this cast (then records amax)."""
        factor = np.float32(2.0 ** -self.margin)
        largest = np.float32(LARGEST[slot.dtype])
        if self.scaling == "dynamic" or not slot.amaxes:
            basis, previous = amax, 1.0 if self.scaling == "dynamic" or not slot.amaxes else slot.scale
        else:
            recent = slot.amaxes[-self.history_len:]
            basis = recent[-1] if self.algo == "most_recent" else (math.nan if any(map(math.isnan, recent))
                                                                    else max(recent))
            previous = slot.scale
        if basis > 0 and math.isfinite(basis):
            with np.errstate(over="ignore"):
                scale = largest / np.float32(basis) * factor
                slot.scale = float(min(max(scale, np.finfo(np.float32).tiny), np.finfo(np.float32).max))
        else:
            slot.scale = float(previous)
        slot.amaxes.append(amax)
        return slot.scale

    def cast(self, name, values):
        """(float8 tensor, dequantisation factor) of ``values`` (float64) for slot ``name``."""
        slot = self.slots[name]
        amax = float(values.abs().max())
        scale = self._scale(slot, amax)
        largest = LARGEST[slot.dtype]
        quantised = (values.float() * np.float32(scale)).clamp(-largest, largest).to(slot.dtype)
        return quantised, float(np.float32(1.0) / np.float32(scale))

    def weight(self, name, w):
        """The weight's cast, redone only when its values changed (as the layers' cache)."""
        seen = self.weight_seen.get(name)
        if seen is None or not torch.equal(seen[0], w):
            self.weight_seen[name] = (w.clone(), self.cast(name, w.double()))
        return self.weight_seen[name][1]

    @staticmethod
    def gemm(a, a_factor, b, b_factor, dtype, bias=None):
        """``(a @ b) * a_factor * b_factor (+ bias)`` in float64 from the float8 values, rounded to ``dtype``."""
        result = (a.double() @ b.double()) * a_factor * b_factor
        if bias is not None:
            result = result + bias.double()
        return result.to(dtype)

    def linear(self, x, w, b, activation, grad):
        """(y, dx, dw, db) of ``act(x @ w.T + b)`` for the output gradient ``grad``."""
        x8, fx = self.cast("input", x.double())
        w8, fw = self.weight("weight", w)
        z = self.gemm(x8, fx, w8.T, fw, x.dtype, b)
        y = {"none": z, "relu": torch.relu(z), "gelu": gelu(z.double()).to(x.dtype)}[activation]
        g = grad.double()
        if activation == "relu":
            g = torch.where(z.double() > 0, g, 0.0)
        elif activation == "gelu":
            g = g * gelu_derivative(z.double())
        g8, fg = self.cast("grad_output", g)
        dx = self.gemm(g8, fg, w8, fw, x.dtype)
        dw = self.gemm(g8.T, fg, x8, fx, x.dtype)
        return y, dx, dw, g.sum(0).to(x.dtype)

    def mlp(self, x, w1, b1, w2, b2, activation, grad):
        """(out, dx, dw1, db1, dw2, db2) of the block for the output gradient ``grad``."""
        x8, fx = self.cast("input", x.double())
        w1_8, fw1 = self.weight("fc1.weight", w1)
        z = self.gemm(x8, fx, w1_8.T, fw1, x.dtype, b1)
        h = torch.relu(z.double()) if activation == "relu" else gelu(z.double())
        h8, fh = self.cast("hidden", h)
        w2_8, fw2 = self.weight("fc2.weight", w2)
        out = self.gemm(h8, fh, w2_8.T, fw2, x.dtype, b2)
        g = grad.double()
        g8, fg = self.cast("grad_output", g)
        dw2 = self.gemm(g8.T, fg, h8, fh, x.dtype)
        dh = self.gemm(g8, fg, w2_8, fw2, x.dtype).double()
        dz = torch.where(z.double() > 0, dh, 0.0) if activation == "relu" else dh * gelu_derivative(z.double())
        dz8, fdz = self.cast("grad_hidden", dz)
        dx = self.gemm(dz8, fdz, w1_8, fw1, x.dtype)
        dw1 = self.gemm(dz8.T, fdz, x8, fx, x.dtype)
        return out, dx, dw1, dz.sum(0).to(x.dtype), dw2, g.sum(0).to(x.dtype)

    def scales(self):
        """Each slot's latest scale, in slot order."""
        return [slot.scale for slot in self.slots.values()]
