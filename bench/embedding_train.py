#!/usr/bin/python3
"""An embedding's training step, Locus on the CPU beside PyTorch CPU eager.

The model is a bag of words: nn.Embedding(vocab, dim), the mean over the
sequence, nn.Linear(dim, classes), cross-entropy, and SGD. The weight's
gradient is the one to watch: each looked-up row's gradient added at its id.
Both sides use 2 threads. Rounds interleave the two; each round times
enough steps to take ~0.2 s, and the script prints the medians and the
ratio Locus / PyTorch.

    PYTHONPATH=build/python /usr/bin/python3 bench/embedding_train.py \
        [--vocab 32000] [--dim 256] [--batch 32] [--seq 128] [--rounds 7]
"""
import argparse
import statistics
import time

import locus
import numpy as np
import torch
import torch.nn as nn

torch.set_num_threads(2)


def locus_step(a):
    g = locus.Graph("bag")
    ids = g.input("ids", [a.batch, a.seq], dtype="i64")
    y = g.input("y", [a.batch], dtype="i64")
    emb = locus.nn.Embedding(g, a.vocab, a.dim)
    fc = locus.nn.Linear(g, a.dim, a.classes)
    loss = locus.nn.CrossEntropyLoss()(fc(emb(ids).mean(1)), y)
    g.output("loss", loss)
    opt = locus.optim.SGD(g.parameters(), lr=0.1)
    opt.step(locus.grad(loss, g.parameters()))
    model = locus.compile(g, policy="cpu")
    return lambda i, t: model.run(ids=i, y=t)["loss"]


def torch_step(a):
    emb, fc = nn.Embedding(a.vocab, a.dim), nn.Linear(a.dim, a.classes)
    params = list(emb.parameters()) + list(fc.parameters())
    opt = torch.optim.SGD(params, lr=0.1)
    lossf = nn.CrossEntropyLoss()

    def step(i, t):
        opt.zero_grad()
        loss = lossf(fc(emb(i).mean(1)), t)
        loss.backward()
        opt.step()
        return loss.item()
    return step


def timed(step, args, seconds=0.2):
    step(*args)
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        step(*args)
        n += 1
    return (time.perf_counter() - start) / n


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--vocab", type=int, default=32000)
    p.add_argument("--dim", type=int, default=256)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--rounds", type=int, default=7)
    a = p.parse_args()
    rng = np.random.default_rng(0)
    ids = rng.integers(0, a.vocab, size=(a.batch, a.seq), dtype=np.int64)
    y = rng.integers(0, a.classes, size=(a.batch,), dtype=np.int64)
    ours, theirs = locus_step(a), torch_step(a)
    tids, ty = torch.from_numpy(ids), torch.from_numpy(y)
    times = {"locus": [], "torch": []}
    for _ in range(a.rounds):
        times["locus"].append(timed(ours, (ids, y)))
        times["torch"].append(timed(theirs, (tids, ty)))
    lo, to = (statistics.median(times[k]) for k in ("locus", "torch"))
    print(f"vocab {a.vocab} dim {a.dim} batch {a.batch} seq {a.seq}: "
          f"locus {lo * 1e3:.2f} ms, torch {to * 1e3:.2f} ms, "
          f"locus/torch {lo / to:.2f}x ({a.rounds} interleaved rounds)")


if __name__ == "__main__":
    main()
