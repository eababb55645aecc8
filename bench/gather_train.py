#!/usr/bin/python3
"""torch.gather in a training step, Locus on the CPU beside PyTorch CPU eager.

A parameter x [B, V], gathered along axis 1 by ids [B, K] (uniform over
V), the sum of squares of the picks as the loss, and SGD: the forward is
`locus.gather_elements`, the backward `locus.gather_elements_grad` (a
scatter-add). Both sides use 2 threads; rounds interleave them, and the
script prints the medians and the ratio Locus / PyTorch.

    PYTHONPATH=build/python /usr/bin/python3 bench/gather_train.py \
        [--batch 64] [--width 2048] [--picks 16] [--rounds 5]
"""
import argparse
import statistics
import time

import locus
import numpy as np
import torch

torch.set_num_threads(2)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--width", type=int, default=2048)
    p.add_argument("--picks", type=int, default=16)
    p.add_argument("--rounds", type=int, default=5)
    a = p.parse_args()
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((a.batch, a.width)).astype(np.float32)
    ids = rng.integers(0, a.width, size=(a.batch, a.picks)).astype(np.int64)

    g = locus.Graph("gather")
    x = g.parameter("x", [a.batch, a.width], xs.ravel().tolist())
    i = g.input("i", [a.batch, a.picks], dtype="i64")
    loss = (locus.gather(x, 1, i) ** 2).sum()
    g.output("loss", loss)
    locus.optim.SGD(g.parameters(), lr=0.1).step(locus.grad(loss, g.parameters()))
    model = locus.compile(g, policy="cpu")

    tx = torch.from_numpy(xs.copy()).requires_grad_()
    opt = torch.optim.SGD([tx], lr=0.1)
    ti = torch.from_numpy(ids)

    def torch_step():
        opt.zero_grad()
        (tx.gather(1, ti) ** 2).sum().backward()
        opt.step()

    times = {"locus": [], "torch": []}
    for step, key in ((lambda: model.run(i=ids), "locus"), (torch_step, "torch")):
        step()  # warm-up
    for _ in range(a.rounds):
        for step, key in ((lambda: model.run(i=ids), "locus"), (torch_step, "torch")):
            start = time.perf_counter()
            step()
            times[key].append(time.perf_counter() - start)
    lo, to = (statistics.median(times[k]) for k in ("locus", "torch"))
    print(f"gather [{a.batch}, {a.width}] by [{a.batch}, {a.picks}], SGD step: "
          f"locus {lo * 1e3:.2f} ms, torch {to * 1e3:.2f} ms, "
          f"locus/torch {lo / to:.2f}x ({a.rounds} interleaved rounds)")


if __name__ == "__main__":
    main()
