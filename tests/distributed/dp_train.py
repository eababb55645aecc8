#!/usr/bin/env python3
"""One rank of a data-parallel job in Python, as a PyTorch DDP user writes
it: `mpirun -np N python3 dp_train.py`. Each rank trains an MLP compiled
with data_parallel=True on its shard of each global batch (the indices
Communicator.shard gives, DistributedSampler's rule), and checks its
weights against one process trained on the whole batch. Prints one line
per rank; exits 1 when the weights differ.
"""
import sys

import numpy as np

import locus


def record(batch):
    g = locus.Graph("dp_py")
    x = g.input("x", [batch, 12])
    labels = g.input("labels", [batch], dtype="i64")
    fc1 = locus.nn.Linear(g, 12, 16, name="fc1")
    fc2 = locus.nn.Linear(g, 16, 5, name="fc2")
    loss = locus.cross_entropy(fc2(fc1(x).relu()), labels)
    g.output("loss", loss)
    locus.optim.SGD(fc1.parameters() + fc2.parameters(), lr=0.1,
                    momentum=0.9).step(loss)
    return g


def main():
    comm = locus.Communicator.from_environment()
    world, steps = comm.size, 4
    per_rank, samples = 4, 4 * comm.size * 4
    rng = np.random.default_rng(11)
    xs = rng.uniform(-1, 1, (samples, 12)).astype(np.float32)
    ys = rng.integers(0, 5, samples).astype(np.int64)
    dp = locus.compile(record(per_rank), policy="cpu", devices=["cpu"],
                       data_parallel=True, bucket_mb=0.001)
    dp.join_data_parallel(comm)
    ref = locus.compile(record(per_rank * world), policy="cpu",
                        devices=["cpu"])
    for name, value in dp.state_dict().items():
        ref.set_state(name, value)
    # Each global batch of per_rank * world samples, split as
    # DistributedSampler splits a dataset: every world-th sample.
    for step in range(steps):
        chunk = np.arange(step * per_rank * world,
                          (step + 1) * per_rank * world)
        mine = chunk[comm.shard(len(chunk))]
        dp.run(x=xs[mine], labels=ys[mine])
        ref.run(x=xs[chunk], labels=ys[chunk])
    worst = max(float(np.max(np.abs(dp.state(n) - v) / (1e-3 + np.abs(v))))
                for n, v in ref.state_dict().items())
    print(f"python rank {comm.rank} of {world}: worst relative difference "
          f"from one process at batch {per_rank * world}: {worst:.3g}")
    return 0 if worst < 1e-4 else 1


if __name__ == "__main__":
    sys.exit(main())
