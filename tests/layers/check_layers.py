#!/usr/bin/env python3
"""Runs layer_check on the CPU and on the sim device and compares every
output, gradient and running statistic with PyTorch's (reference.json, made
by torch_layers.py in double precision from the same inputs and weights).

Tolerance: |got - want| <= 1e-4 + 1e-4 * |want| (float32 against double,
through normalisations and softmaxes of a few dozen terms).

  check_layers.py <layer_check executable>
"""
import json
import os
import subprocess
import sys

EXE = sys.argv[1]
HERE = os.path.dirname(os.path.abspath(__file__))
REF = json.load(open(os.path.join(HERE, "reference.json")))
failures = []
compared = 0
for variant in ("cpu", "sim"):
    run = subprocess.run([EXE, variant], capture_output=True, text=True)
    if run.returncode:
        failures.append("layer_check %s failed:\n%s" % (variant, run.stderr))
        continue
    got = json.loads(run.stdout)
    for case in sorted(set(got) - set(REF)):
        failures.append("%s/%s: no reference; run torch_layers.py > "
                        "reference.json" % (variant, case))
    for case, want in REF.items():
        if case not in got:
            failures.append("%s/%s: missing" % (variant, case))
            continue
        for key, values in want.items():
            have = got[case].get(key)
            if have is None or len(have) != len(values):
                failures.append("%s/%s/%s: got %s values, want %d" % (
                    variant, case, key, None if have is None else len(have),
                    len(values)))
                continue
            worst = max([abs(g - w) / (1e-4 + 1e-4 * abs(w))
                         for g, w in zip(have, values)] or [0])
            compared += len(values)
            if worst > 1.0:
                failures.append("%s/%s/%s: worst error %.2f of tolerance\n"
                                "got  %s\nwant %s" % (variant, case, key, worst,
                                                      have[:8], values[:8]))
            else:
                print("ok   %s/%s/%s (%d values)" % (variant, case, key, len(values)))
for f in failures:
    print("FAIL " + f)
print("%d values compared, %d failures" % (compared, len(failures)))
sys.exit(1 if failures else 0)
