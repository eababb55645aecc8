#!/usr/bin/python3
"""One artifact per ONNX model with dynamic dimensions, run at several sizes
against PyTorch's outputs (tests/onnx/dynamic/, written by
make_dynamic_models.py):

    check_dynamic_models.py BUILD_DIR

- gpt.onnx (symbolic batch and seq; the causal mask and the positions are
  computed from the sequence length): imported once with `--dynamic
  batch=8 --dynamic seq=16`, run at batch 1 and 7 and lengths 5 and 16;
- resnet.onnx (symbolic batch): imported once with `--dynamic batch=8`,
  run at batch 1 and 7.

Each model is compiled twice: for the CPU, and with `--policy=prefer-gpu`
for cpu and cuda:0, whose kernels run on the GPU when there is one and
on sim (their host versions) here; its PTX goes through `ptxas -arch=sm_90`
where the CUDA toolkit is. Each output must match PyTorch's within 1e-4
relative plus 1e-4 absolute, and a sequence over its bound must be refused
naming the input and the bound. Needs NumPy only.
"""
import glob
import itertools
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dynamic")
MODELS = {"gpt": ("ids", ["--dynamic", "batch=8", "--dynamic", "seq=16"]),
          "resnet": ("input", ["--dynamic", "batch=8"])}
PLACEMENTS = {"cpu": ["--policy=cpu", "--devices=cpu"],
              "gpu": ["--policy=prefer-gpu", "--devices=cpu,cuda:0"]}


def find_ptxas():
    for candidate in [os.environ.get("LOCUS_PTXAS"), "/usr/local/cuda/bin/ptxas",
                      shutil.which("ptxas")]:
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def ptxas_failures(ptxdir):
    """PTX modules in `ptxdir` that ptxas rejects (none checked without it)."""
    ptxas, bad = find_ptxas(), 0
    if not ptxas:
        print("ptxas: not run (no CUDA toolkit found)")
        return 0
    modules = sorted(os.listdir(ptxdir)) if os.path.isdir(ptxdir) else []
    if not modules:
        print("no PTX modules in %s" % ptxdir)
        return 1
    for name in modules:
        check = subprocess.run([ptxas, "-arch=sm_90", os.path.join(ptxdir, name),
                                "-o", os.devnull], capture_output=True, text=True)
        if check.returncode:
            print("ptxas rejects %s:\n%s" % (name, check.stderr))
            bad += 1
    print("ptxas -arch=sm_90: %d of %d modules accepted" % (len(modules) - bad,
                                                          len(modules)))
    return bad


def main():
    tools = os.path.join(sys.argv[1], "tools")
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for (model, (input_name, flags)), (where, placement) in \
                itertools.product(MODELS.items(), PLACEMENTS.items()):
            artifact = os.path.join(tmp, model + ".locus")
            graph = os.path.join(tmp, model + ".mlir")
            ptx = os.path.join(tmp, model + "_ptx")
            shutil.rmtree(ptx, ignore_errors=True)
            run = subprocess.run(
                [os.path.join(tools, "locus-compile"),
                 os.path.join(HERE, model + ".onnx"), "-o", artifact] + placement +
                flags, capture_output=True, text=True)
            # The PTX, from the imported graph (--emit-ptx takes .mlir).
            if not run.returncode and where == "gpu":
                run = subprocess.run(
                    [os.path.join(tools, "locus-import"),
                     os.path.join(HERE, model + ".onnx"), "-o", graph] + flags,
                    capture_output=True, text=True)
            if not run.returncode and where == "gpu":
                run = subprocess.run(
                    [os.path.join(tools, "locus-compile"), graph, "-o",
                     graph + ".locus", "--emit-ptx=" + ptx] + placement,
                    capture_output=True, text=True)
            if run.returncode:
                print("%s (%s): locus-compile or locus-import failed:\n%s" % (
                    model, where, run.stderr))
                failures += 1
                continue
            if where == "gpu":
                failures += ptxas_failures(ptx)
            for inp in sorted(glob.glob(os.path.join(HERE, model + "_*_in.npy"))):
                case = os.path.basename(inp)[len(model) + 1:-len("_in.npy")]
                want = np.load(inp.replace("_in.npy", "_out.npy"))
                out = os.path.join(tmp, "out")
                run = subprocess.run(
                    [os.path.join(tools, "locus-run"), artifact, "--input",
                     "%s=%s" % (input_name, inp), "--save-outputs", out,
                     "--quiet"], capture_output=True, text=True)
                if run.returncode:
                    print("%s %s (%s): locus-run failed: %s" % (model, case, where,
                                                                run.stderr))
                    failures += 1
                    continue
                got = np.load(os.path.join(out, "output.npy"))
                ok = got.shape == want.shape and np.allclose(
                    got, want, rtol=1e-4, atol=1e-4)
                err = float(np.abs(got - want).max()) if got.shape == want.shape \
                    else float("nan")
                print("%s %s (%s): %s %s, largest difference %.3g: %s" % (
                    model, case, where, list(np.load(inp).shape), list(got.shape),
                    err, "ok" if ok else "WRONG"))
                failures += not ok
        # Over the bound: a clear error, not a wrong answer.
        long_ids = os.path.join(tmp, "long.npy")
        np.save(long_ids, np.zeros((1, 17), np.int64))
        run = subprocess.run(
            [os.path.join(tools, "locus-run"), os.path.join(tmp, "gpt.locus"),
             "--input", "ids=" + long_ids, "--quiet"], capture_output=True,
            text=True)
        expected = "input 'ids' is [1, 17], but its dimension 1 is seq, which runs from 1 to 16"
        if run.returncode == 0 or expected not in run.stderr:
            print("a sequence of 17: expected the error %r, got %r" % (
                expected, run.stderr))
            failures += 1
        else:
            print("a sequence of 17: refused (%s)" % expected)
    print("FAILED: %d" % failures if failures else "all dynamic models match PyTorch")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
