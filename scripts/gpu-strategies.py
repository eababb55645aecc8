#!/usr/bin/env python3
"""Which GPU strategy each reduction of the example training steps gets.

    scripts/gpu-strategies.py [BUILD] [--model transformer|resnet18]
                              [--batch N] [--all] [--launches]

Saves the example's training step (build/examples/<model> --save-graph),
places it with --policy=prefer-gpu, runs the CUDA pipeline up to
--locus-map-to-gpu, and runs that pass with explain=true: a remark at each
op or row group with the strategy it gets and why (docs/passes.md). Prints
one line per distinct strategy and shape with its count and kernels;
elementwise ops are counted in one line unless --all. A convolution
gradient's generated kernel is the fallback its launcher runs only where
cuDNN is absent. With --launches, also how many kernels and launches one
step makes: the step compiled with locus-compile, run once on sim with a
trace, each kernel call of the step counted with its gpu.launch ops and
library calls (sgemm, cuDNN). A convolution's launcher holds both its cuDNN
calls and the generated kernels it falls back to, and both are counted, so
for a step with convolutions the count is an upper bound. Needs no GPU.
"""
import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ELEMENTWISE = ("a thread per element", "consecutive elements per thread")


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def kernel_ir(build, model, batch, tmp):
    """The CUDA kernels' IR just before --locus-map-to-gpu."""
    graph, placed = os.path.join(tmp, "step.mlir"), os.path.join(tmp, "placed.mlir")
    run([os.path.join(build, "examples", model), "--save-graph=" + graph] +
        (["--batch=%d" % batch] if batch else []))
    opt = os.path.join(build, "tools", "locus-opt")
    run([opt, graph, "--locus-placement-pipeline=policy=prefer-gpu devices=cpu,cuda:0",
         "-o", placed])
    before = run([opt, placed, "--locus-cuda-pipeline",
                  "--mlir-print-ir-before=locus-map-to-gpu", "-o", os.devnull]).stderr
    path = os.path.join(tmp, "before.mlir")
    with open(path, "w") as f:
        f.write(before)
    return path


def remarks(build, path):
    """(line, remark) for each remark of map-to-gpu with explain=true."""
    p = run([os.path.join(build, "tools", "locus-opt"), path,
             "--locus-map-to-gpu=explain=true", "-o", os.devnull])
    for line in p.stderr.splitlines():
        m = re.match(r".*:(\d+):\d+: remark: (.*)", line)
        if m:
            yield int(m.group(1)), m.group(2)


def kernel_names(path):
    """The enclosing function's name for each line of `path`."""
    names, current = [], "?"
    with open(path) as f:
        for line in f:
            m = re.search(r"func\.func @(\S+?)\(", line)
            if m:
                current = re.sub(r"__cuda$", "", re.sub(r"^.*?_k(\d+)_", r"k\1_",
                                                        m.group(1)))
            names.append(current)
    return names


def launches_per_step(build, before, tmp):
    """(kernel calls, launches, library calls) of one step on sim."""
    graph, artifact = os.path.join(tmp, "step.mlir"), os.path.join(tmp, "step.locus")
    trace = os.path.join(tmp, "trace.json")
    env = dict(os.environ, LOCUS_CACHE="off")
    run([os.path.join(build, "tools", "locus-compile"), graph, "--policy=prefer-gpu",
         "-o", artifact], env=env)
    run([os.path.join(build, "tools", "locus-run"), artifact, "--random-inputs",
         "--device-map", "cuda:0=sim", "--runs", "1", "--trace", trace, "--quiet"])
    after = run([os.path.join(build, "tools", "locus-opt"), before,
                 "--locus-map-to-gpu", "-o", "-"]).stdout
    launches, calls = {}, {}
    for body in after.split("func.func @")[1:]:
        name = re.sub(r"__cuda$", "", body.split("(")[0])
        calls[name] = len(re.findall(r"call @locus_cuda_", body))
        launches[name] = body.count("gpu.launch ") + calls[name]
    with open(trace) as f:
        events = json.load(f)
    events = events["traceEvents"] if isinstance(events, dict) else events
    kernels = [e["name"] for e in events if e.get("cat") == "kernel" and
               e.get("args", {}).get("step") == 1]
    unknown = [k for k in kernels if k not in launches]
    if unknown:
        sys.exit("kernels of the trace not in the IR: " + ", ".join(unknown[:4]))
    return (len(kernels), sum(launches[k] for k in kernels),
            sum(calls[k] for k in kernels))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build", nargs="?", default=os.path.join(ROOT, "build"))
    ap.add_argument("--model", choices=["transformer", "resnet18"], default="transformer")
    ap.add_argument("--batch", type=int, default=0,
                    help="the example's batch (resnet18; its default otherwise)")
    ap.add_argument("--all", action="store_true", help="elementwise ops line by line too")
    ap.add_argument("--launches", action="store_true",
                    help="also count one step's kernels and launches on sim")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = kernel_ir(args.build, args.model, args.batch, tmp)
        names = kernel_names(path)
        groups = collections.defaultdict(list)
        flat = 0
        for line, what in remarks(args.build, path):
            if not args.all and any(e in what for e in ELEMENTWISE):
                flat += 1
                continue
            groups[what].append(names[line - 1])
        counts = (launches_per_step(args.build, path, tmp)
                  if args.launches else None)
    print("%s training step, prefer-gpu: strategy of each reduction and row group"
          % args.model)
    for what, kernels in sorted(groups.items(), key=lambda g: (-len(g[1]), g[0])):
        unique = list(dict.fromkeys(kernels))
        shown = ", ".join(unique[:4]) + (", ..." if len(unique) > 4 else "")
        fallback = all("conv2d" in k for k in kernels)
        print("%4d  %s  [%s]%s" % (len(kernels), what, shown,
                                   " (fallback without cuDNN)" if fallback else ""))
    if flat:
        print("%4d  elementwise ops (a thread per element, or several per thread)" % flat)
    if counts:
        print("one step on sim: %d kernel calls, %d launches (%d of them library "
              "calls)%s" % (counts + ((" at most: convolutions count their cuDNN "
                                      "calls and fallback kernels")
                                     if args.model == "resnet18" else "",)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
