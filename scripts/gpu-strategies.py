#!/usr/bin/env python3
"""Which GPU strategy each reduction of the example training steps gets.

    scripts/gpu-strategies.py [BUILD] [--model transformer|resnet18]
                              [--batch N] [--all]

Saves the example's training step (build/examples/<model> --save-graph),
places it with --policy=prefer-gpu, runs the CUDA pipeline up to
--locus-map-to-gpu, and runs that pass with explain=true: a remark at each
op or row group with the strategy it gets and why (docs/passes.md). Prints
one line per distinct strategy and shape with its count and kernels;
elementwise ops are counted in one line unless --all. A convolution
gradient's generated kernel is the fallback its launcher runs only where
cuDNN is absent. Needs no GPU.
"""
import argparse
import collections
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build", nargs="?", default=os.path.join(ROOT, "build"))
    ap.add_argument("--model", choices=["transformer", "resnet18"], default="transformer")
    ap.add_argument("--batch", type=int, default=0,
                    help="the example's batch (resnet18; its default otherwise)")
    ap.add_argument("--all", action="store_true", help="elementwise ops line by line too")
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
