"""Train the same small network twice, with nvmathx.torch layers and with torch's own, and check
that the losses agree within bfloat16 tolerance.

    embed = Linear + GELU, block = x + MLP(x) (Linear, GELU, Linear), head = Linear

Both networks start from the same weights (the nvmathx one loads the torch one's state_dict) and
train with AdamW under ``torch.autocast(dtype=torch.bfloat16)`` on the same batches. On a GPU the
nvmathx layers run forward and backward on cuBLASLt with fused epilogs; on a CPU they run the same
computation as torch ops (so the two runs agree almost exactly there).
"""

import argparse
import math

import torch
import torch.nn.functional as F
from torch import nn

from nvmathx.torch import FusedLinear, FusedMLP

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
    def __init__(self):
        super().__init__()
        self.embed = FusedLinear(FEATURES, D_MODEL, activation="gelu")
        self.block, self.head = FusedMLP(D_MODEL, HIDDEN, activation="gelu"), FusedLinear(D_MODEL, 1)

    def forward(self, x):
        h = self.embed(x)
        return self.head(h + self.block(h))


def batches(steps, device, seed):
    """A smooth regression target of random inputs, the same sequence for both runs."""
    gen = torch.Generator().manual_seed(seed)
    directions = torch.randn(FEATURES, 4, generator=gen) / math.sqrt(FEATURES)
    for _ in range(steps):
        x = torch.randn(BATCH, FEATURES, generator=gen)
        y = torch.sin(x @ directions).sum(1, keepdim=True)
        yield x.to(device), y.to(device)


def train(model, steps, device, seed):
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    losses = []
    for x, y in batches(steps, device, seed):
        with torch.autocast(device_type=device, dtype=torch.bfloat16):
            loss = F.mse_loss(model(x).float(), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def main(device, steps, seed=0):
    torch.manual_seed(seed)
    reference = TorchNet().to(device)
    fused = FusedNet().to(device)
    fused.load_state_dict(reference.state_dict())  # the same checkpoint loads into either
    fused_losses = train(fused, steps, device, seed)
    torch_losses = train(reference, steps, device, seed)

    window = 20  # compare smoothed curves: single bfloat16 steps differ by rounding
    ours = [sum(fused_losses[i:i + window]) / window for i in range(0, steps - window + 1, window)]
    theirs = [sum(torch_losses[i:i + window]) / window for i in range(0, steps - window + 1, window)]
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
    arguments = parser.parse_args()
    main(arguments.device, arguments.steps)
