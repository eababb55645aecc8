#!/usr/bin/python3
"""One artifact per ONNX model with dynamic dimensions, run at several sizes
against PyTorch's outputs (tests/onnx/dynamic/, written by
make_dynamic_models.py):

    check_dynamic_models.py BUILD_DIR

- gpt.onnx (symbolic batch and seq; the causal mask and the positions are
  computed from the sequence length): compiled once with `--dynamic
  batch=8 --dynamic seq=16`, run at batch 1 and 7 and lengths 5 and 16;
- resnet.onnx (symbolic batch): compiled once with `--dynamic batch=8`,
  run at batch 1 and 7.

Each output must match PyTorch's within 1e-4 relative plus 1e-4 absolute,
and a sequence over its bound must be refused naming the input and the
bound. Needs NumPy only.
"""
import glob
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dynamic")
MODELS = {"gpt": ("ids", ["--dynamic", "batch=8", "--dynamic", "seq=16"]),
          "resnet": ("input", ["--dynamic", "batch=8"])}


def main():
    tools = os.path.join(sys.argv[1], "tools")
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for model, (input_name, flags) in MODELS.items():
            artifact = os.path.join(tmp, model + ".locus")
            run = subprocess.run(
                [os.path.join(tools, "locus-compile"),
                 os.path.join(HERE, model + ".onnx"), "-o", artifact,
                 "--policy=cpu", "--devices=cpu"] + flags,
                capture_output=True, text=True)
            if run.returncode:
                print("%s: locus-compile failed:\n%s" % (model, run.stderr))
                failures += 1
                continue
            for inp in sorted(glob.glob(os.path.join(HERE, model + "_*_in.npy"))):
                case = os.path.basename(inp)[len(model) + 1:-len("_in.npy")]
                want = np.load(inp.replace("_in.npy", "_out.npy"))
                out = os.path.join(tmp, "out")
                run = subprocess.run(
                    [os.path.join(tools, "locus-run"), artifact, "--input",
                     "%s=%s" % (input_name, inp), "--save-outputs", out,
                     "--quiet"], capture_output=True, text=True)
                if run.returncode:
                    print("%s %s: locus-run failed: %s" % (model, case, run.stderr))
                    failures += 1
                    continue
                got = np.load(os.path.join(out, "output.npy"))
                ok = got.shape == want.shape and np.allclose(
                    got, want, rtol=1e-4, atol=1e-4)
                err = float(np.abs(got - want).max()) if got.shape == want.shape \
                    else float("nan")
                print("%s %s: %s %s, largest difference %.3g: %s" % (
                    model, case, list(np.load(inp).shape), list(got.shape), err,
                    "ok" if ok else "WRONG"))
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
