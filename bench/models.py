#!/usr/bin/python3
"""The inference models of bench/compare.sh, in PyTorch: exported to ONNX
(what ONNX Runtime and Locus both run) and timed in PyTorch CPU eager.

    models.py export DIR   writes DIR/<name>_b<batch>.onnx for every case
    models.py time         prints `name batch median_us` for every case

Run with Debian's /usr/bin/python3 (python3-torch); PyTorch uses 2 threads.
The timing is the median of 7 repetitions, each the mean over enough runs
to take about 0.05 s, after a warm-up; the same rule as bench/ort_bench.js.
"""
import statistics
import sys
import time

import torch
import torch.nn as nn

torch.set_num_threads(2)


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


class BasicBlock(nn.Module):
    """ResNet-34's layer-1 block with its batch norms folded into the
    convolutions' biases (what an inference export holds after folding)."""

    def __init__(self, channels):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x):
        y = torch.relu(self.conv1(x))
        return torch.relu(self.conv2(y) + x)


def resnet_blocks():
    return nn.Sequential(BasicBlock(64), BasicBlock(64), BasicBlock(64))


class Encoder(nn.Module):
    """Two BERT-style encoder layers (d=256, 4 heads, GELU feed-forward of
    1024) over 128 tokens: attention, softmax, layer norms and erf."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([
            nn.TransformerEncoderLayer(256, 4, 1024, dropout=0.0, activation="gelu",
                                       batch_first=True) for _ in range(2)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


# (name, model, input shape without the batch, batches)
CASES = [
    ("mlp", mlp, (784,), (1, 64)),
    ("lenet", lenet, (1, 28, 28), (1, 64)),
    ("seed_cnn", seed_cnn, (3, 14, 14), (1, 16, 64)),
    ("resnet_blocks", resnet_blocks, (64, 56, 56), (1, 8, 64)),
    ("encoder", Encoder, (128, 256), (1, 8)),
]


def cases():
    for name, make, shape, batches in CASES:
        for batch in batches:
            torch.manual_seed(0)
            yield name, batch, make().eval(), torch.randn(batch, *shape)


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


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "export":
        for name, batch, model, x in cases():
            torch.onnx.export(model, x, "%s/%s_b%d.onnx" % (sys.argv[2], name, batch),
                              input_names=["x"], output_names=["y"],
                              opset_version=13)
    elif len(sys.argv) == 2 and sys.argv[1] == "time":
        for name, batch, model, x in cases():
            print("%s %d %.2f" % (name, batch, time_model(model, x)), flush=True)
    else:
        sys.exit("usage: models.py export DIR | models.py time")


main()
