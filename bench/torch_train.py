#!/usr/bin/python3
"""The same training steps in PyTorch CPU eager, for bench/compare.sh train.

Run with Debian's /usr/bin/python3 (python3-torch) and OpenBLAS's OpenMP
build on the library path; torch.set_num_threads(2). A step is zero_grad,
forward, CrossEntropyLoss, backward and optimizer.step(), as in the seed
programs; ResNet-18 is examples/models' (CIFAR variant, BatchNorm in
training mode, SGD with weight decay). Prints `name batch median_us` per model: the median of 7
repetitions, each the mean over enough steps to take ~0.05 s, after a
warm-up.
"""
import os
import statistics
import sys
import time

import torch
import torch.nn as nn

# The model example's ResNet-18 (its module sets float64 for its own
# reference runs: back to float32 here).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "examples", "models"))
from torch_models import ResNet18  # noqa: E402

torch.set_default_dtype(torch.float32)
torch.set_num_threads(2)
torch.manual_seed(0)


def seed_cnn():
    return nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(16 * 7 * 7, 10))


def mlp():
    return nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024),
                         nn.ReLU(), nn.Linear(1024, 10))


def time_training(model, optimizer, x, y):
    criterion = nn.CrossEntropyLoss()

    def step():
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    for _ in range(5):
        step()
    start = time.perf_counter()
    n = 0
    while time.perf_counter() - start < 0.05:
        step()
        n += 1
    reps = []
    for _ in range(7):
        start = time.perf_counter()
        for _ in range(n):
            step()
        reps.append((time.perf_counter() - start) / n * 1e6)
    return statistics.median(reps)


def main():
    cnn = seed_cnn()
    x = torch.randn(16, 3, 14, 14)
    y = torch.randint(0, 10, (16,))
    print("seed_cnn_adam 16 %.1f" % time_training(
        cnn, torch.optim.Adam(cnn.parameters(), lr=1e-3), x, y))
    net = mlp()
    x = torch.randn(256, 784)
    y = torch.randint(0, 10, (256,))
    print("mlp_sgd 256 %.1f" % time_training(
        net, torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9), x, y))
    for batch in (8, 32):
        net = ResNet18()
        x = torch.randn(batch, 3, 32, 32)
        y = torch.randint(0, 10, (batch,))
        print("resnet18_sgd %d %.1f" % (batch, time_training(
            net, torch.optim.SGD(net.parameters(), lr=1e-4, weight_decay=5e-4),
            x, y)))
    fc = nn.Linear(10, 2)
    x = torch.randn(100, 10)
    y = torch.randint(0, 2, (100,))
    print("linear_sgd 100 %.2f" % time_training(
        fc, torch.optim.SGD(fc.parameters(), lr=0.01), x, y))


main()
