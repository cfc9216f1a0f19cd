"""Train the same small network twice, with nvmathx.torch layers and with torch's own, and check
that the losses agree within bfloat16 tolerance.

    embed = Linear + GELU, block = x + MLP(x) (Linear, GELU, Linear), head = Linear

Both networks start from the same weights (the nvmathx one loads the torch one's state_dict) and
train with AdamW under ``torch.autocast(dtype=torch.bfloat16)`` on the same batches. On a GPU the
nvmathx layers run forward and backward on cuBLASLt with fused epilogs; on a CPU they run the same
computation as torch ops (so the two runs agree almost exactly there).

With ``--fp8`` it instead trains the nvmathx network twice, in bfloat16 and with a
``Float8Recipe`` (delayed scaling, e4m3 forward, e5m2 gradients), and checks that the final loss
of the float8 run is within 2% of the bfloat16 run's. There the target carries noise of standard
deviation 0.5 (a loss floor of 0.25), as real training data do: the comparison is of training,
not of how closely 3-bit mantissas can fit a noise-free function. On the noise-free target, fitted
to 1.5% of its starting loss in 300 steps, float8 ends 27-33% above bfloat16 (H100, and the same
for a plain torch simulation of per-tensor float8 scaling on the CPU): the rounding is the floor.
Float8 needs a GPU of compute capability 8.9 or newer; elsewhere (and for the one-output head,
whose 1 feature is no multiple of 16) the layers run unquantised and say so once at INFO on the ``nvmathx`` logger.
"""

import argparse
import math

import torch
import torch.nn.functional as F
from torch import nn

from nvmathx.torch import Float8Recipe, FusedLinear, FusedMLP

FEATURES, D_MODEL, HIDDEN, BATCH = 16, 64, 256, 256


class TorchMLP(nn.Module):
    def __init__(self, d_model, hidden):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(d_model, hidden), nn.Linear(hidden, d_model)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x), approximate="tanh"))


class TorchNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed, self.block = nn.Linear(FEATURES, D_MODEL), TorchMLP(D_MODEL, HIDDEN)
        self.head = nn.Linear(D_MODEL, 1)

    def forward(self, x):
        h = F.gelu(self.embed(x), approximate="tanh")
        return self.head(h + self.block(h))


class FusedNet(nn.Module):
    def __init__(self, fp8=None):
        super().__init__()
        self.embed = FusedLinear(FEATURES, D_MODEL, activation="gelu", fp8=fp8)
        self.block = FusedMLP(D_MODEL, HIDDEN, activation="gelu", fp8=fp8)
        self.head = FusedLinear(D_MODEL, 1, fp8=fp8)

    def forward(self, x):
        h = self.embed(x)
        return self.head(h + self.block(h))


def batches(steps, device, seed, noise=0.0):
    """A smooth regression target of random inputs (plus noise of standard deviation ``noise``),
    the same sequence for both runs."""
    gen = torch.Generator().manual_seed(seed)
    directions = torch.randn(FEATURES, 4, generator=gen) / math.sqrt(FEATURES)
    for _ in range(steps):
        x = torch.randn(BATCH, FEATURES, generator=gen)
        y = torch.sin(x @ directions).sum(1, keepdim=True)
        if noise:
            y = y + noise * torch.randn(y.shape, generator=gen)
        yield x.to(device), y.to(device)


def train(model, steps, device, seed, noise=0.0):
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    losses = []
    for x, y in batches(steps, device, seed, noise):
        with torch.autocast(device_type=device, dtype=torch.bfloat16):
            loss = F.mse_loss(model(x).float(), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def smoothed(losses, window=20):
    """Means of consecutive ``window``-step blocks: single bfloat16 steps differ by rounding."""
    return [sum(losses[i:i + window]) / window for i in range(0, len(losses) - window + 1, window)]


def main_fp8(device, steps, seed=0, noise=0.5, **recipe):
    torch.manual_seed(seed)
    bf16 = FusedNet().to(device)
    fp8 = FusedNet(fp8=Float8Recipe(**recipe)).to(device)
    fp8.load_state_dict(bf16.state_dict(), strict=False)  # the scaling state starts fresh
    bf16_losses = smoothed(train(bf16, steps, device, seed, noise))
    fp8_losses = smoothed(train(fp8, steps, device, seed, noise))
    difference = abs(fp8_losses[-1] - bf16_losses[-1]) / bf16_losses[-1]
    floor = noise ** 2  # what no model can fit: the noise's variance
    print(f"{device}: final mean loss bfloat16 {bf16_losses[-1]:.5f}, float8 {fp8_losses[-1]:.5f} "
          f"(first {bf16_losses[0]:.4f}, noise floor {floor:.4f}): {100 * difference:.2f}% apart")
    assert all(math.isfinite(loss) for loss in fp8_losses)
    assert fp8_losses[-1] - floor < (fp8_losses[0] - floor) / 4, "float8 training did not converge"
    assert difference <= 0.02, difference
    print("float8 final loss within 2% of bfloat16")


def main(device, steps, seed=0):
    torch.manual_seed(seed)
    reference = TorchNet().to(device)
    fused = FusedNet().to(device)
    fused.load_state_dict(reference.state_dict())  # the same checkpoint loads into either
    fused_losses = train(fused, steps, device, seed)
    torch_losses = train(reference, steps, device, seed)

    window = 20
    ours, theirs = smoothed(fused_losses, window), smoothed(torch_losses, window)
    # Within 5% of torch's loss, or 0.5% of where training started once the losses are small.
    worst = max(abs(a - b) / (0.05 * b + 0.005 * theirs[0]) for a, b in zip(ours, theirs))
    print(f"{device}: mean loss of the first {window} steps {theirs[0]:.4f}, of the last: torch {theirs[-1]:.4f}, "
          f"nvmathx {ours[-1]:.4f}; largest difference of {window}-step means {worst:.2f} of the tolerance")
    assert all(math.isfinite(loss) for loss in fused_losses)
    assert ours[-1] < ours[0] / 4 and theirs[-1] < theirs[0] / 4, "training did not converge"
    assert worst <= 1, worst
    print("nvmathx.torch and torch losses agree within bfloat16 tolerance")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--fp8", action="store_true", help="compare float8 training with bfloat16 instead")
    parser.add_argument("--scaling", choices=("delayed", "dynamic"), default="delayed", help="the float8 recipe's")
    parser.add_argument("--exact-accumulation", action="store_true",
                        help="float8 forward GEMMs without Hopper's fast accumulation")
    parser.add_argument("--noise", type=float, default=0.5, help="standard deviation of the float8 run's target noise")
    arguments = parser.parse_args()
    if arguments.fp8:
        main_fp8(arguments.device, arguments.steps, noise=arguments.noise, scaling=arguments.scaling,
                 fast_accumulation=not arguments.exact_accumulation)
    else:
        main(arguments.device, arguments.steps)
