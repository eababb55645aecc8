#!/usr/bin/python3
"""The same forward passes in PyTorch CPU eager, for bench/compare.sh.

Run with Debian's /usr/bin/python3 (python3-torch) and OpenBLAS's OpenMP
build on the library path; torch.set_num_threads(2). Prints
`name batch median_us` per model: the median of 7 repetitions, each the mean
over enough runs to take ~0.2 s, after a warm-up.
"""
import statistics
import time

import torch
import torch.nn as nn

torch.set_num_threads(2)
torch.manual_seed(0)


def mlp():
    return nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024),
                         nn.ReLU(), nn.Linear(1024, 10))


def lenet():
    return nn.Sequential(nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(400, 120), nn.ReLU(),
                         nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))


def seed_cnn():
    return nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(16 * 7 * 7, 10))


def time_model(model, x):
    with torch.no_grad():
        for _ in range(5):
            model(x)
        start = time.perf_counter()
        n = 0
        while time.perf_counter() - start < 0.05:
            model(x)
            n += 1
        reps = []
        for _ in range(7):
            start = time.perf_counter()
            for _ in range(n):
                model(x)
            reps.append((time.perf_counter() - start) / n * 1e6)
    return statistics.median(reps)


for name, make, shape in [("mlp", mlp, (784,)), ("lenet", lenet, (1, 28, 28)),
                          ("seed_cnn", seed_cnn, (3, 14, 14))]:
    for batch in ([16] if name == "seed_cnn" else [1, 64]):
        model = make().eval()
        x = torch.randn(batch, *shape)
        print("%s %d %.1f" % (name, batch, time_model(model, x)))
