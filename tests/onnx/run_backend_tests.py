#!/usr/bin/env python3
"""ONNX's backend test data through Locus, case by case.

    run_backend_tests.py BUILD_DIR [--data DIR] [--sim] [--jobs N] [--filter RE]

Runs build/tests/onnx_backend_check on every case of Debian's
libonnx-testdata (node tests, pytorch-converted, pytorch-operator and
simple model tests: a model.onnx and test_data_set_*/ with inputs and
expected outputs), and prints how many passed, failed, use an op Locus does
not support, were refused with an error (an attribute value, a dtype or a
run-time shape Locus does not take: each says which), or need a dtype the
harness cannot feed. Fails if any case computes a wrong result, crashes or
times out: a model Locus takes must give the right numbers.
"""
import argparse
import collections
import concurrent.futures
import os
import re
import subprocess
import sys

KINDS = {0: "passed", 1: "failed", 3: "unsupported op", 4: "refused",
         5: "dtype not fed"}

# Cases whose expected outputs are random draws of numpy's generator
# (Dropout in training mode with a ratio above 0): no other generator can
# give them. They run, and are reported apart; a crash still fails.
RANDOM = re.compile(r"node/test_training_dropout(_default|_mask|"
                    r"_default_mask)?$")


def run_case(binary, case, sim):
    cmd = [binary, case] + (["--sim"] if sim else [])
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return case, "timed out", ""
    kind = KINDS.get(p.returncode, "crashed (status %d)" % p.returncode)
    if kind == "failed" and RANDOM.search(case):
        kind = "random outputs"
    return case, kind, (p.stdout + p.stderr).strip()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--data", default="/usr/share/libonnx-testdata/data")
    ap.add_argument("--sim", action="store_true")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--filter", default="")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    if not os.path.isdir(args.data):
        print("no ONNX test data at %s (Debian's libonnx-testdata)"
              % args.data)
        return 1
    binary = os.path.join(args.build, "tests", "onnx_backend_check")
    cases = []
    for suite in ("node", "pytorch-converted", "pytorch-operator", "simple"):
        root = os.path.join(args.data, suite)
        for name in sorted(os.listdir(root)) if os.path.isdir(root) else []:
            case = os.path.join(root, name)
            if (os.path.exists(os.path.join(case, "model.onnx"))
                    and re.search(args.filter, name)):
                cases.append(case)
    results = collections.defaultdict(list)
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for case, kind, text in pool.map(
                lambda c: run_case(binary, c, args.sim), cases):
            results[kind].append((case, text))
            if args.verbose:
                print("%-14s %s" % (kind, os.path.relpath(case, args.data)))
    bad = [k for k in results
           if k not in ("passed", "unsupported op", "refused",
                        "dtype not fed", "random outputs")]
    for kind in sorted(results):
        if kind in ("passed", "unsupported op"):
            continue
        print("== %s (%d)" % (kind, len(results[kind])))
        for case, text in results[kind]:
            last = text.splitlines()[-1] if text else ""
            print("  %s: %s" % (os.path.relpath(case, args.data), last[:300]))
    ops = collections.Counter()
    for _, text in results["unsupported op"]:
        for line in text.splitlines():
            m = re.match(r"\s+(\S+) x\d+", line)
            if m:
                ops[m.group(1)] += 1
    print("unsupported op_types (cases): " +
          ", ".join("%s %d" % kv for kv in sorted(ops.items())))
    supported = len(cases) - len(results["unsupported op"])
    folded = sum("folded inputs" in text for _, text in results["passed"])
    print("%d cases%s: %d use only supported ops; %d passed (%d of them with "
          "inputs the import needs made initializers), %d failed "
          "(wrong, crashed or timed out), %d refused with an error, %d with "
          "a dtype the harness does not feed; %d use unsupported ops"
          % (len(cases), " on sim" if args.sim else "", supported,
             len(results["passed"]), folded,
             sum(len(results[k]) for k in bad),
             len(results["refused"]), len(results["dtype not fed"]),
             len(results["unsupported op"])))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
