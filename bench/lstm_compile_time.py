"""Compile time of an unrolled LSTM training step: a 2-layer nn.LSTM
(input 16, hidden 32, batch 4, batch_first) with a mean-square loss and
SGD, recorded from Python for several sequence lengths and compiled for
the CPU with the compile cache off; then the step's median time over 20
runs. Usage:
  PYTHONPATH=build/python python3 bench/lstm_compile_time.py [seq ...]
"""
import os
import sys
import time

import numpy as np

import locus


def lstm_step(seq):
    g = locus.Graph("lstm")
    x = g.input("x", [4, seq, 16])
    target = g.input("y", [4, seq, 32])
    lstm = locus.nn.LSTM(g, 16, 32, num_layers=2, batch_first=True,
                         name="lstm")
    out, _ = lstm(x)
    loss = locus.mse_loss(out, target)
    g.output("loss", loss)
    locus.optim.SGD(lstm.parameters(), lr=0.1).step(loss)
    return g


def main():
    os.environ["LOCUS_CACHE"] = "off"
    lengths = [int(a) for a in sys.argv[1:]] or [8, 32, 128]
    print(f"load average {os.getloadavg()[0]:.2f}")
    print("| sequence length | ops recorded (step) | compile | step |")
    print("|---|---|---|---|")
    rng = np.random.default_rng(0)
    for seq in lengths:
        g = lstm_step(seq)
        start = time.perf_counter()
        model = locus.compile(g, policy="cpu", devices=["cpu"])
        seconds = time.perf_counter() - start
        feeds = {"x": rng.normal(size=(4, seq, 16)).astype(np.float32),
                 "y": rng.normal(size=(4, seq, 32)).astype(np.float32)}
        times = []
        for _ in range(22):
            t = time.perf_counter()
            model.run(**feeds)
            times.append(time.perf_counter() - t)
        print(f"| {seq} | {g.num_ops():,} | {seconds:.2f} s | "
              f"{np.median(times[2:]) * 1e3:.2f} ms |")


if __name__ == "__main__":
    main()
