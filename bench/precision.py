"""bf16 against fp32 on the CPU: the same recorded models compiled with
CompileOptions::precision "fp32" and "bf16" (torch.autocast's contract),
run in interleaved rounds in one process; prints each model's median step
time per precision and the ratio bf16/fp32 (below 1: bf16 is faster).
Then what locus.amp.GradScaler adds to an f16 training step: the same MLP
step recorded with and without it, interleaved.

    PYTHONPATH=build/python /usr/bin/python3 bench/precision.py [ROUNDS]
"""
import os
import sys
import time

import numpy as np

import locus


def mlp(batch, width, depth):
    g = locus.Graph(f"mlp{width}")
    g.manual_seed(1)
    x = g.input("x", [batch, width])
    h = x
    for i in range(depth):
        h = locus.relu(locus.nn.Linear(g, width, width, name=f"fc{i}")(h))
    g.output("y", h)
    return g, {"x": np.random.default_rng(0).uniform(
        -1, 1, (batch, width)).astype(np.float32)}


def cnn(batch):
    g = locus.Graph("cnn")
    g.manual_seed(2)
    x = g.input("x", [batch, 64, 56, 56])
    h = x
    for i in range(2):
        conv = locus.nn.Conv2d(g, 64, 64, 3, padding=1, name=f"conv{i}")
        h = locus.relu(conv(h))
    g.output("y", h)
    return g, {"x": np.random.default_rng(0).uniform(
        -1, 1, (batch, 64, 56, 56)).astype(np.float32)}


def mlp_step(scaled):
    """An MLP training step (64x1024, 3 layers, SGD), through a GradScaler
    when `scaled`."""
    g = locus.Graph("mlp_step")
    g.manual_seed(3)
    x, y = g.input("x", [64, 1024]), g.input("y", [64, 1024])
    layers = [locus.nn.Linear(g, 1024, 1024, name=f"fc{i}") for i in range(3)]
    h = x
    for layer in layers:
        h = locus.relu(layer(h))
    loss = locus.mse_loss(h, y)
    g.output("loss", loss)
    params = [p for layer in layers for p in layer.parameters()]
    opt = locus.optim.SGD(params, lr=0.01)
    if scaled:
        scaler = locus.amp.GradScaler()
        scaler.step(opt, locus.grad(scaler.scale(loss), params))
        scaler.update()
    else:
        opt.step(locus.grad(loss, params))
    rng = np.random.default_rng(0)
    return g, {k: rng.uniform(-1, 1, (64, 1024)).astype(np.float32)
               for k in ("x", "y")}


def median_ms(model, inputs, runs):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        model.run(**inputs)
        times.append(time.perf_counter() - start)
    return 1e3 * float(np.median(times))


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    cases = [("MLP 64x1024, 3 layers", lambda: mlp(64, 1024, 3)),
             ("MLP 256x2048, 2 layers", lambda: mlp(256, 2048, 2)),
             ("2 convolutions 8x64x56x56", lambda: cnn(8))]
    print(f"load: {' '.join(open('/proc/loadavg').read().split()[:3])}; "
          f"{os.cpu_count()} CPUs; medians of 10 runs, {rounds} interleaved "
          "rounds")
    for name, make in cases:
        models = {}
        for precision in ("fp32", "bf16"):
            graph, inputs = make()
            models[precision] = locus.compile(graph, policy="cpu",
                                              devices=["cpu"],
                                              precision=precision, cache=False)
            models[precision].run(**inputs)  # warm-up
        ms = {"fp32": [], "bf16": []}
        for _ in range(rounds):
            for precision, model in models.items():
                ms[precision].append(median_ms(model, inputs, 10))
        f, b = np.median(ms["fp32"]), np.median(ms["bf16"])
        print(f"{name:28s} fp32 {f:8.3f} ms  bf16 {b:8.3f} ms  "
              f"bf16/fp32 {b / f:.2f}")
    models = {}
    for scaled in (False, True):
        graph, inputs = mlp_step(scaled)
        models[scaled] = locus.compile(graph, policy="cpu", devices=["cpu"],
                                       precision="f16", cache=False)
        models[scaled].run(**inputs)
    ms = {False: [], True: []}
    for _ in range(rounds):
        for scaled, model in models.items():
            ms[scaled].append(median_ms(model, inputs, 10))
    p, q = np.median(ms[False]), np.median(ms[True])
    print(f"{'f16 MLP step, GradScaler':28s} plain {p:8.3f} ms  "
          f"scaled {q:8.3f} ms  scaled/plain {q / p:.2f}")


if __name__ == "__main__":
    main()
