#!/usr/bin/env python3
"""PyTorch's training curves for the seed examples, from the same numbers.

Reproduces, in Python, the runtime's counter-based generator
(locus_init_fill: splitmix64 of seed + (i + 1) * golden, 24 bits, f32) and
Graph::seedFor (FNV-1a of the parameter's name, then splitmix64's
finaliser), so PyTorch starts from Locus's initial weights (PyTorch's own
default bounds, 1/sqrt(fan_in)) and trains on the same data in the same
order (examples/seeds/seed_common.h). Then it runs the seed programs'
loops with torch.optim, and writes every loss to reference.json, which
tests/seeds/check_seeds.py compares with the examples' output.

Made with Debian's python3-torch (1.13.1), on the CPU:

  /usr/bin/python3 tests/seeds/torch_reference.py > tests/seeds/reference.json
"""
import json
import struct
import sys

import torch

MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


def mix(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def uniform(n, low, high, seed):
    """locus_init_fill(LOCUS_INIT_UNIFORM, low, high, seed, n)."""
    top = f32(high)
    out = []
    for i in range(n):
        bits = mix((seed + (i + 1) * GOLDEN) & MASK)
        u = (bits >> 40) * 2.0 ** -24
        v = f32(low + (high - low) * u)
        if v >= top and low < high:
            v = struct.unpack("f", struct.pack("I", struct.unpack("I", struct.pack("f", top))[0] - 1))[0]
        out.append(v)
    return out


def seed_for(name, base=0):
    """Graph::seedFor."""
    h = 0xCBF29CE484222325
    for c in name.encode():
        h = ((h ^ c) * 0x100000001B3) & MASK
    return mix((base + h * GOLDEN) & MASK)


def init_like(param, name, fan_in):
    bound = 1.0 / fan_in ** 0.5
    values = uniform(param.numel(), -bound, bound, seed_for(name))
    with torch.no_grad():
        param.copy_(torch.tensor(values, dtype=torch.float32).reshape(param.shape))


def labels(n, classes, seed):
    return [min(int(v), classes - 1) for v in uniform(n, 0.0, classes, seed)]


def shuffled(n, epoch_seed):
    key = uniform(n, 0.0, 1.0, epoch_seed)
    return sorted(range(n), key=lambda i: (key[i], i))


def linear_model(data_seed):
    """Linear(10, 2) as nn::Linear(g, 10, 2, {.name = "model"}) makes it, and
    100 samples of x and y drawn from `data_seed` and the next seed."""
    model = torch.nn.Linear(10, 2)
    init_like(model.weight, "model.weight", 10)
    init_like(model.bias, "model.bias", 10)
    x = torch.tensor(uniform(1000, -2.0, 2.0, data_seed)).reshape(100, 10)
    y = torch.tensor(uniform(200, -2.0, 2.0, data_seed + 1)).reshape(100, 2)
    return model, x, y


def linear_mse():
    """seed 000: Linear(10, 2), MSELoss, SGD(lr=0.01), 10 full-batch epochs."""
    model, x, y = linear_model(1001)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = torch.nn.MSELoss()
    losses = []
    for _ in range(10):
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def dataloader():
    """seed 001: Linear(10, 2), batches of 10 in order, SGD(lr=0.01), 5 epochs."""
    model, x, y = linear_model(2001)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    losses = []
    for _ in range(5):
        for b in range(10):
            optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x[b * 10:(b + 1) * 10]),
                                                y[b * 10:(b + 1) * 10])
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    return losses


class SimpleCNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 16, kernel_size=3, padding=1)
        self.relu = torch.nn.ReLU()
        self.pool = torch.nn.MaxPool2d(kernel_size=2, stride=2)
        self.fc = torch.nn.Linear(16 * 7 * 7, 10)

    def forward(self, x):
        x = self.pool(self.relu(self.conv1(x)))
        x = x.view(x.size(0), -1)
        return self.fc(x)


def cnn_adam():
    """seed 004: SimpleCNN, CrossEntropyLoss, Adam(lr=0.001), batches of 16
    shuffled each epoch, 50 epochs."""
    model = SimpleCNN()
    init_like(model.conv1.weight, "conv1.weight", 3 * 3 * 3)
    init_like(model.conv1.bias, "conv1.bias", 3 * 3 * 3)
    init_like(model.fc.weight, "fc.weight", 16 * 7 * 7)
    init_like(model.fc.bias, "fc.bias", 16 * 7 * 7)
    x = torch.tensor(uniform(32 * 3 * 14 * 14, -2.0, 2.0, 3001)).reshape(32, 3, 14, 14)
    y = torch.tensor(labels(32, 10, 3002), dtype=torch.int64)
    criterion = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.001)
    losses = []
    for epoch in range(50):
        order = shuffled(32, 5000 + epoch)
        for b in range(2):
            idx = torch.tensor(order[b * 16:(b + 1) * 16])
            optimizer.zero_grad()
            loss = criterion(model(x[idx]), y[idx])
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    return losses


def main():
    torch.set_num_threads(1)
    out = {
        "made_by": "tests/seeds/torch_reference.py with torch %s" % torch.__version__,
        "linear_mse": linear_mse(),
        "dataloader": dataloader(),
        "cnn_adam": cnn_adam(),
    }
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
