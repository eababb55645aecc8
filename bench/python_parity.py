"""Python at the C++ API's speed: one MobileNet-style training step (depthwise
and pointwise convolutions, BatchNorm with its running statistics in the
graph, ReLU6, Hardswish, pooling, a head, SGD with momentum), recorded in
Python the PyTorch way and compiled for the CPU, timed three ways in
interleaved rounds:

  python    model.run(x=..., labels=...) on the model compile() returned
  runtime   locus.runtime.load(artifact).run(...), the runtime alone
  views     the same model's run_in_place() on inputs written into its
            input views once (no copies)
  c++       locus-run artifact --host-io: the C API setting the inputs,
            running the step and reading the outputs, as a C++ serving or
            training loop does

The artifact is saved for this CPU (cpu="native"), as compile() built the
in-process model.

Each row is the median over rounds of each round's median step (after two
warm-up runs). Usage:
  PYTHONPATH=build/python python3 bench/python_parity.py build [rounds]
"""
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

import locus
import locus.runtime

RUNS = 30


def mobile_step(batch=32, channels=32, size=32):
    """The training step, as a PyTorch user writes the model."""
    g = locus.Graph("mobile_step")
    x = g.input("x", [batch, 16, size, size])
    labels = g.input("labels", [batch], dtype="i64")
    net = locus.nn.Sequential(
        locus.nn.Conv2d(g, 16, 16, 3, padding=1, groups=16, bias=False,
                        name="dw1"),
        locus.nn.BatchNorm2d(g, 16, name="bn1"),
        locus.nn.ReLU6(),
        locus.nn.Conv2d(g, 16, channels, 1, bias=False, name="pw1"),
        locus.nn.BatchNorm2d(g, channels, name="bn2"),
        locus.nn.Hardswish(),
        locus.nn.Conv2d(g, channels, channels, 3, stride=2, padding=1,
                        groups=channels, bias=False, name="dw2"),
        locus.nn.BatchNorm2d(g, channels, name="bn3"),
        locus.nn.ReLU6(),
        locus.nn.Conv2d(g, channels, 2 * channels, 1, name="pw2"),
        locus.nn.Hardswish(),
        locus.nn.AdaptiveAvgPool2d(1),
        locus.nn.Flatten(),
        locus.nn.Linear(g, 2 * channels, 10, name="head"))
    loss = locus.nn.CrossEntropyLoss()(net(x), labels)
    g.output("loss", loss)
    locus.optim.SGD(net.parameters(), lr=0.05, momentum=0.9).step(loss)
    return g


def median_step(run, feeds):
    """The median time of RUNS steps after two warm-up runs, in us."""
    times = []
    for _ in range(RUNS + 2):
        start = time.perf_counter()
        run(**feeds)
        times.append((time.perf_counter() - start) * 1e6)
    return float(np.median(times[2:]))


def locus_run_step(build, artifact):
    """locus-run's median step with host I/O, in us."""
    out = subprocess.run(
        [os.path.join(build, "tools", "locus-run"), artifact, "--host-io",
         "--random-inputs", "--runs", str(RUNS + 2), "--quiet"],
        check=True, capture_output=True, text=True).stdout
    match = re.search(r"step time: median ([0-9.e+]+) us", out)
    if not match:
        sys.exit("no step time in locus-run's output:\n" + out)
    return float(match.group(1))


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    os.environ.setdefault("LOCUS_CACHE", "off")
    g = mobile_step()
    start = time.perf_counter()
    model = locus.compile(g, policy="cpu", devices=["cpu"])
    compiled_s = time.perf_counter() - start
    rng = np.random.default_rng(1)
    feeds = {"x": rng.uniform(-1, 1, (32, 16, 32, 32)).astype(np.float32),
             "labels": rng.integers(0, 10, (32,))}
    with tempfile.TemporaryDirectory() as tmp:
        artifact = os.path.join(tmp, "mobile.locus")
        model.save(artifact, cpu="native")  # what compile() ran
        loaded = locus.runtime.load(artifact)
        for name, value in feeds.items():
            loaded.input_view(name)[...] = value
        rows = {"python": [], "runtime": [], "views": [], "c++": []}
        for _ in range(rounds):
            rows["python"].append(median_step(model.run, feeds))
            rows["runtime"].append(median_step(loaded.run, feeds))
            rows["views"].append(median_step(loaded.run_in_place, {}))
            rows["c++"].append(locus_run_step(build, artifact))
    load = os.getloadavg()[0]
    print(f"MobileNet-style training step, batch 32, {g.num_ops()} ops "
          f"recorded, compiled in {compiled_s:.2f} s; {rounds} rounds of "
          f"{RUNS} steps, load average {load:.2f}")
    cxx = float(np.median(rows["c++"]))
    print("| way | median step | over C++ |\n|---|---|---|")
    for name, values in rows.items():
        med = float(np.median(values))
        print(f"| {name} | {med / 1000:.2f} ms "
              f"(rounds {', '.join(f'{v / 1000:.2f}' for v in values)}) "
              f"| {med / cxx:.3f} |")


if __name__ == "__main__":
    main()
