#!/usr/bin/env python3
"""Mutation fuzzing of the tools on bad IR: no input may crash them.

Takes every .mlir test input and the seed graphs, mutates them (lines deleted,
duplicated or swapped; spans cut; numbers, element types, devices and op names
replaced), and runs locus-opt with the placement passes under a random policy
then lowering to linalg and to a function, then fusion and outlining,
locus-dump, and (for one mutant in four) locus-compile, on each mutant. A
run may fail with a diagnostic; it may not die of a signal, print LLVM's
crash banner, or hang.

The run is bounded by time, not by a count: the inputs are visited in a
random order (the seed fixes it), a few mutants each, until the budget is
spent, so the suite's length does not grow with the number of lit inputs.

  mutate_ir.py <build dir> <source dir> [seconds] [seed] [mutants per input]
"""
import glob
import os
import random
import re
import subprocess
import sys
import time

build, source = sys.argv[1], sys.argv[2]
budget = float(sys.argv[3]) if len(sys.argv) > 3 else 120.0
rng = random.Random(int(sys.argv[4]) if len(sys.argv) > 4 else 20261121)
per_input = int(sys.argv[5]) if len(sys.argv) > 5 else 3

opt = os.path.join(build, "tools", "locus-opt")
dump = os.path.join(build, "tools", "locus-dump")
compiler = os.path.join(build, "tools", "locus-compile")
artifact = os.path.join(build, "tests", "fuzz-mutant.locus")
seeds = os.path.join(build, "examples", "seed_models")

OPS = ["locus.add", "locus.matmul", "locus.linear", "locus.conv2d", "locus.sum",
       "locus.reshape", "locus.to", "locus.copy", "locus.input", "locus.state",
       "locus.output", "locus.graph", "locus.broadcast", "locus.slice",
       "locus.cross_entropy", "locus.max_pool2d", "locus.select", "locus.cmp"]
TYPES = ["f32", "i64", "i1", "f16", "index", "?", "0", "-1"]
NUMBERS = ["0", "-1", "1", "65536", "4294967296", "-9223372036854775808",
           "99999999999999999999", "3", "2.5"]
DEVICES = ["<cpu>", "<cuda:0>", "<cuda:7>", "<cuda:-1>", "<gpu>", "<cuda>"]


def inputs():
    texts = []
    for path in sorted(glob.glob(os.path.join(source, "tests", "lit", "**",
                                              "*.mlir"), recursive=True)):
        with open(path) as f:
            for chunk in f.read().split("// -----"):
                texts.append(chunk)
    for model in ["linear-mse", "model-moved", "dataloader", "cnn"]:
        texts.append(subprocess.run([seeds, model], capture_output=True,
                                    text=True, check=True).stdout)
    return texts


def mutate(text):
    lines = text.split("\n")
    for _ in range(rng.randint(1, 3)):
        kind = rng.randrange(7)
        i = rng.randrange(len(lines))
        if kind == 0 and len(lines) > 1:
            del lines[i]
        elif kind == 1:
            lines.insert(i, lines[rng.randrange(len(lines))])
        elif kind == 2:
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        elif kind == 3 and lines[i]:
            a = rng.randrange(len(lines[i]))
            lines[i] = lines[i][:a] + lines[i][a + rng.randint(1, 12):]
        elif kind == 4:
            lines[i] = re.sub(r"\b\d+\b", lambda m: rng.choice(NUMBERS),
                              lines[i], count=1)
        elif kind == 5:
            lines[i] = re.sub(r"\b(f32|i64|i1)\b", lambda m: rng.choice(TYPES),
                              lines[i], count=1)
            lines[i] = re.sub(r"<(cpu|cuda:\d+)>",
                              lambda m: rng.choice(DEVICES), lines[i], count=1)
        else:
            lines[i] = re.sub(r"locus\.\w+", lambda m: rng.choice(OPS),
                              lines[i], count=1)
    return "\n".join(lines)


def crashed(result):
    banner = ("PLEASE submit a bug report" in result.stderr or
              "Stack dump" in result.stderr)
    return result.returncode < 0 or result.returncode > 125 or banner


# MLIR's own mlir-opt (mlir-19-tools), to tell a crash of MLIR 19's parser
# on upstream dialects' text from one of ours.
MLIR_OPT = "/usr/lib/llvm-19/bin/mlir-opt"


def upstream_parser_crash(text):
    """Whether MLIR 19's own mlir-opt, which knows nothing of Locus, dies
    parsing `text` too (scf.parallel with bounds defined after it crashes
    its parser): a bug of the parser we link, not of a Locus pass. Such a
    mutant is counted apart, not as a failure."""
    if not os.path.exists(MLIR_OPT):
        return False
    try:
        result = subprocess.run([MLIR_OPT, "--allow-unregistered-dialect"],
                                input=text, text=True, capture_output=True,
                                timeout=20)
    except subprocess.TimeoutExpired:
        return False
    return crashed(result) and "MLIR Parser" in result.stderr


def main():
    runs = failures = rejected = visited = upstream = 0
    texts = inputs()
    rng.shuffle(texts)
    deadline = time.monotonic() + budget
    for text in texts:
        if time.monotonic() > deadline:
            break
        visited += 1
        for _ in range(per_input):
            mutant = mutate(text)
            policy = rng.choice(["strict", "prefer-gpu", "auto", "cpu"])
            devices = rng.choice(["cpu,cuda:0", "cpu", "cpu,cuda:0,cuda:1"])
            commands = [
                [opt, "--locus-place-devices=policy=%s devices=%s" %
                 (policy, devices), "--locus-insert-transfers"],
                [opt, "--locus-place-devices=policy=%s devices=cpu" % policy,
                 "--locus-insert-transfers", "--locus-lower-to-linalg",
                 "--locus-graph-to-func"],
                [dump, "--policy=" + policy, "--devices=" + devices,
                 rng.choice(["--format=json", "--format=html", "--format=text",
                             "--explain=1", "--format=dot"])],
                [opt, "--pass-pipeline=builtin.module(locus.graph("
                 "locus-place-devices{policy=%s devices=%s},"
                 "locus-insert-transfers,locus-fuse-kernels),"
                 "locus-outline-kernels)" % (policy, devices)],
            ]
            # Autodiff (gradients, or a training step), then placement.
            commands.append(
                [opt, "--locus-autodiff=" + rng.choice(
                    ["", "optimizer=sgd momentum=0.9", "optimizer=adam",
                     "loss=r", "wrt=x"]),
                 "--locus-place-devices=policy=%s devices=%s" %
                 (policy, devices), "--locus-insert-transfers"])
            # The whole pipeline to an artifact (slower: LLVM and lld); every
            # other time through a training step.
            if rng.randrange(4) == 0:
                train = rng.randrange(2) == 0
                source = mutant
                if train:
                    trained = subprocess.run(
                        [opt, "--locus-autodiff=optimizer=adam"], input=mutant,
                        text=True, capture_output=True, timeout=20)
                    if crashed(trained):
                        failures += 1
                        print("CRASH (autodiff):\n" + mutant + "\n" +
                              trained.stderr[-3000:])
                    if trained.returncode == 0:
                        source = trained.stdout
                commands.append(([compiler, "-", "-o", artifact,
                                  "--policy=" + policy, "--devices=" + devices],
                                 source))
            for command in commands:
                command, given = command if isinstance(command, tuple) else (command, mutant)
                try:
                    result = subprocess.run(command, input=given, text=True,
                                            capture_output=True, timeout=20)
                except subprocess.TimeoutExpired:
                    failures += 1
                    print("HANG:", " ".join(command), "\n" + given)
                    continue
                runs += 1
                rejected += result.returncode != 0
                if crashed(result) and upstream_parser_crash(given):
                    upstream += 1
                    print("MLIR 19's parser crashes on this mutant too (not "
                          "counted): %s" % " ".join(command))
                elif crashed(result):
                    failures += 1
                    print("CRASH (%d): %s\n--- input ---\n%s\n--- stderr ---\n%s"
                          % (result.returncode, " ".join(command), given,
                             result.stderr[-3000:]))
    print("%d of %d inputs in %.0f s: %d runs, %d rejected with a diagnostic, "
          "%d crashed or hung" % (visited, len(texts), budget, runs, rejected,
                                  failures))
    if upstream:
        print("%d run(s) died in MLIR 19's own parser, which crashes on the "
              "same text alone" % upstream)
    print("%d passed, %d failed" % (runs - failures, failures))
    return 1 if failures else 0


sys.exit(main())
