"""Forward and backward of an MLP layer with fused epilogs, checked against plain numpy.

    y = gelu(x @ w1 + b1) @ w2

Forward: GELU_AUX_BIAS returns y1 = gelu(z) and z (the "gelu_aux") for the backward pass.
Backward: DGELU_BGRAD turns dy1 = dout @ w2.T into dz = dy1 * gelu'(z) and db1 = dz.sum(0) in one
call; BGRADB gives dw1 = x.T @ dz together with db1 again (a check).

Runs on the CPU with numpy by default; pass --execution cuda to run the same code on the GPU.
"""

import argparse
import sys

import numpy as np

from nvmathx import DeviceUnavailableError
from nvmathx.linalg import matmul


def gelu_tanh(z):
    return 0.5 * z * (1 + np.tanh(np.sqrt(2 / np.pi) * (z + 0.044715 * z**3)))


def main(execution):
    rng = np.random.default_rng(0)
    tokens, features, hidden, outputs = 256, 64, 128, 32
    x = rng.standard_normal((tokens, features)).astype(np.float32)
    w1 = (rng.standard_normal((features, hidden)) / np.sqrt(features)).astype(np.float32)
    b1 = rng.standard_normal(hidden).astype(np.float32)
    w2 = (rng.standard_normal((hidden, outputs)) / np.sqrt(hidden)).astype(np.float32)
    dout = rng.standard_normal((tokens, outputs)).astype(np.float32)

    # Forward.
    y1, saved = matmul(x, w1, epilog="GELU_AUX_BIAS", epilog_inputs={"bias": b1}, execution=execution)
    y = matmul(y1, w2, execution=execution)
    # Backward.
    dz, grads = matmul(dout, w2.T, epilog="DGELU_BGRAD", epilog_inputs={"gelu_aux": saved["gelu_aux"]},
                       execution=execution)
    dw1, check = matmul(np.ascontiguousarray(x.T), dz, epilog="BGRADB", execution=execution)
    dw2 = matmul(np.ascontiguousarray(y1.T), dout, execution=execution)

    # The same in float64 numpy, by hand.
    z = x.astype(np.float64) @ w1 + b1
    t = np.tanh(np.sqrt(2 / np.pi) * (z + 0.044715 * z**3))
    gelu_grad = 0.5 * (1 + t) + 0.5 * z * (1 - t * t) * np.sqrt(2 / np.pi) * (1 + 3 * 0.044715 * z * z)
    ref_dz = (dout.astype(np.float64) @ w2.T) * gelu_grad
    expected = {
        "y": gelu_tanh(z) @ w2, "dz": ref_dz, "db1": ref_dz.sum(0), "dw1": x.T.astype(np.float64) @ ref_dz,
        "dw2": gelu_tanh(z).T @ dout, "db1 (BGRADB)": ref_dz.sum(0),
    }
    got = {"y": y, "dz": dz, "db1": grads["dgelu_bgrad"], "dw1": dw1, "dw2": dw2, "db1 (BGRADB)": check["bgradb"]}
    worst = 0.0
    for name, reference in expected.items():
        error = np.linalg.norm(got[name] - reference) / np.linalg.norm(reference)
        worst = max(worst, error)
        print(f"{name:>14}: relative error {error:.2e}")
    assert worst < 1e-4, worst
    print(f"MLP layer forward + backward ({execution}) matches numpy")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--execution", choices=("cpu", "cuda"), default="cpu")
    try:
        main(parser.parse_args().execution)
    except DeviceUnavailableError as error:  # --execution cuda on a machine without a GPU
        sys.exit(f"{parser.prog}: {error}")
