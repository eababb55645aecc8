"""Compile time of a GPT training step, cold and warm: the pytest's GPT
decoder (tests/python/test_locus.py, _tiny_gpt) grown to 6 blocks of width
64 over 32 tokens, AdamW in two groups and clip_grad_norm_, compiled for
the CPU from Python in a new process with an empty compile cache, then
again with the cache it filled. Needs python3-torch (the reference model
the helper builds). Usage:
  PYTHONPATH=build/python python3 bench/gpt_compile_time.py [blocks] [dim]
"""
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def record(blocks, dim):
    import torch
    import locus
    sys.path.insert(0, os.path.join(HERE, "..", "tests", "python"))
    import test_locus
    _, g, loss = test_locus._tiny_gpt(torch, vocab=64, dim=dim, heads=4,
                                      blocks=blocks, seq=32)
    params = g.parameters()
    decayed = [p for p in params if len(p.shape) == 2]
    others = [p for p in params if len(p.shape) != 2]
    grads = locus.grad(loss, decayed + others)
    g.output("loss", loss)
    g.output("norm", locus.nn.utils.clip_grad_norm_(grads, 1.0))
    locus.optim.AdamW([{"params": decayed, "weight_decay": 0.1},
                       {"params": others, "weight_decay": 0.0}],
                      lr=3e-3).step(grads)
    return g


def child(blocks, dim):
    import locus
    g = record(blocks, dim)
    start = time.perf_counter()
    model = locus.compile(g, policy="cpu", devices=["cpu"])
    print(f"{g.num_ops()} {time.perf_counter() - start:.3f} "
          f"{model.from_cache}")


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        return child(int(sys.argv[2]), int(sys.argv[3]))
    blocks = sys.argv[1] if len(sys.argv) > 1 else "6"
    dim = sys.argv[2] if len(sys.argv) > 2 else "64"
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, LOCUS_CACHE_DIR=cache)
        for run in ("cold", "warm"):
            ops, seconds, cached = subprocess.run(
                [sys.executable, __file__, "--child", blocks, dim], env=env,
                check=True, capture_output=True, text=True).stdout.split()
            print(f"{run}: {ops} ops compiled in {float(seconds):.2f} s "
                  f"(from the cache: {cached})")


if __name__ == "__main__":
    main()
