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

  check_models.py <build dir> [--sim] [model ...]
"""
import json
import os
import subprocess
import sys

BUILD = sys.argv[1]
SIM = "--sim" in sys.argv[2:]
ONLY = [a for a in sys.argv[2:] if a != "--sim"]
HERE = os.path.dirname(os.path.abspath(__file__))
REF = json.load(open(os.path.join(HERE, "reference.json")))
VARIANTS = [("cpu", ["--policy=cpu", "--devices=cpu"]),
            ("sim", ["--policy=prefer-gpu", "--devices=cpu,cuda:0"])]
failures = []
for model, want in REF.items():
    if model == "made_by" or (ONLY and model not in ONLY):
        continue
    for variant, flags in VARIANTS if SIM else VARIANTS[:1]:
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
        loss_limit = max(1e-4, 4 * want["float32_loss_error"])
        eval_limit = max(1e-5, 4 * want["float32_eval_error"])
        line = ("%s (%s): %d losses within %.1e relative (limit %.1e; PyTorch "
                "float32 %.1e), %d eval values within %.1e (limit %.1e; "
                "PyTorch float32 %.1e)"
                % (model, variant, len(losses), worst_loss, loss_limit,
                   want["float32_loss_error"], len(evals), worst_eval,
                   eval_limit, want["float32_eval_error"]))
        print(line)
        if worst_loss > loss_limit or worst_eval > eval_limit:
            failures.append(line + "\n  got  %s\n  want %s" % (
                losses, want["losses"]))
for f in failures:
    print("FAIL " + f)
sys.exit(1 if failures else 0)
