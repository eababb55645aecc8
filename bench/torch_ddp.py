#!/usr/bin/env python3
"""PyTorch DistributedDataParallel (gloo, CPU) on the model bench/dp_bench
trains: MLP 784-1024-1024-10, SGD with momentum, cross-entropy, a fixed
batch per rank. The peer of bench/dp_scaling.py.

  torch_ddp.py RANKS [--batch=64] [--steps=30] [--threads=N]

Prints the median step time of rank 0 over the steps after the first
three, in the same words as dp_bench.
"""
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn


def worker(rank, world, batch, steps, threads, port, out):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(threads)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    model = nn.Sequential(nn.Linear(784, 1024), nn.ReLU(),
                          nn.Linear(1024, 1024), nn.ReLU(),
                          nn.Linear(1024, 10))
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    x = torch.rand(batch, 784) - 0.5
    y = (torch.arange(batch) + rank) % 10
    times = []
    for _ in range(steps):
        begin = time.perf_counter()
        opt.zero_grad()
        loss_fn(ddp(x), y).backward()
        opt.step()
        times.append((time.perf_counter() - begin) * 1000)
    warm = sorted(times[3:])
    if rank == 0:
        out.put(warm[len(warm) // 2])
    dist.destroy_process_group()


def main():
    world = int(sys.argv[1])
    opts = dict(a[2:].split("=", 1) for a in sys.argv[2:])
    batch = int(opts.get("batch", 64))
    steps = int(opts.get("steps", 30))
    threads = int(opts.get("threads", max(1, os.cpu_count() // world)))
    ctx = mp.get_context("spawn")
    out = ctx.SimpleQueue()
    port = 29500 + os.getpid() % 1000
    mp.start_processes(worker, args=(world, batch, steps, threads, port, out),
                       nprocs=world, start_method="spawn")
    ms = out.get()
    print(f"torch DDP ranks {world}, batch {batch} per rank: median step "
          f"{ms:.2f} ms, {1000 * batch * world / ms:.0f} samples/s")


if __name__ == "__main__":
    main()
