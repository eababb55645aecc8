#!/usr/bin/env python3
"""Runs the examples/models programs and compares them with PyTorch.

reference.json (made by torch_models.py, in double precision, from the same
initial weights and data) holds every training step's loss and the
eval-mode outputs after training. Each model must match:

- every step's loss within 1e-4 relative (float32 against double);
- the eval-mode output within 1e-5 absolute;

or, where PyTorch's own float32 run is further than that from its float64
run (reference.json's float32_*_error), within four times PyTorch's float32
distance. ResNet-18 with BatchNorm over batches of 8 is such a case:
PyTorch in float32 ends 4e-5 (losses) and 6e-5 (eval logits) from float64.

It runs every model on the CPU and, with --sim, also under prefer-gpu on
cpu + cuda:0 (the sim device). The test suite runs the Transformer both
ways and ResNet-18 (two minutes a run on two cores) on the CPU.

With --precision=bf16 the examples compile with precision="bf16" and are
held to PyTorch's own distance from float64 under
torch.autocast(device_type="cpu", dtype=torch.bfloat16) (reference.json's
bf16_loss_error, bf16_eval_error): within twice it, since the two round
in different places (Locus rounds a convolution's result one time fewer).

  check_models.py <build dir> [--sim] [--precision=bf16] [model ...]
"""
import json
import os
import subprocess
import sys

BUILD = sys.argv[1]
SIM = "--sim" in sys.argv[2:]
BF16 = "--precision=bf16" in sys.argv[2:]
ONLY = [a for a in sys.argv[2:] if not a.startswith("--")]
HERE = os.path.dirname(os.path.abspath(__file__))
REF = json.load(open(os.path.join(HERE, "reference.json")))
VARIANTS = [("cpu", ["--policy=cpu", "--devices=cpu"]),
            ("sim", ["--policy=prefer-gpu", "--devices=cpu,cuda:0"])]
failures = []
for model, want in REF.items():
    if model == "made_by" or (ONLY and model not in ONLY):
        continue
    for variant, flags in VARIANTS if SIM else VARIANTS[:1]:
        if BF16:
            flags = flags + ["--precision=bf16"]
            variant += ", bf16"
        run = subprocess.run([os.path.join(BUILD, "examples", model)] + flags,
                             capture_output=True, text=True)
        if run.returncode:
            failures.append("%s (%s) failed:\n%s" % (model, variant, run.stderr))
            continue
        losses = [float(l.split()[3]) for l in run.stdout.splitlines()
                  if l.startswith("step ")]
        evals = [float(v) for l in run.stdout.splitlines()
                 if l.startswith("eval") for v in l.split()[1:]]
        if len(losses) != len(want["losses"]) or len(evals) != len(want["eval"]):
            failures.append("%s (%s): %d losses and %d eval values, want %d "
                            "and %d" % (model, variant, len(losses), len(evals),
                                        len(want["losses"]), len(want["eval"])))
            continue
        worst_loss = max(abs(g - w) / abs(w) for g, w in zip(losses, want["losses"]))
        worst_eval = max(abs(g - w) for g, w in zip(evals, want["eval"]))
        kind = "bf16" if BF16 else "float32"
        loss_limit = (2 * want["bf16_loss_error"] if BF16
                      else max(1e-4, 4 * want["float32_loss_error"]))
        eval_limit = (2 * want["bf16_eval_error"] if BF16
                      else max(1e-5, 4 * want["float32_eval_error"]))
        line = ("%s (%s): %d losses within %.1e relative (limit %.1e; PyTorch "
                "%s %.1e), %d eval values within %.1e (limit %.1e; "
                "PyTorch %s %.1e)"
                % (model, variant, len(losses), worst_loss, loss_limit, kind,
                   want[kind + "_loss_error"], len(evals), worst_eval,
                   eval_limit, kind, want[kind + "_eval_error"]))
        print(line)
        # Not vacuous: a bf16 run that computed in f32 would pass the limits.
        rounded = not BF16 or worst_eval > max(1e-5, 4 * want["float32_eval_error"])
        if not rounded:
            failures.append(line + "\n  no further from float64 than float32: "
                            "bf16 did not round")
        if worst_loss > loss_limit or worst_eval > eval_limit:
            failures.append(line + "\n  got  %s\n  want %s" % (
                losses, want["losses"]))
for f in failures:
    print("FAIL " + f)
sys.exit(1 if failures else 0)
