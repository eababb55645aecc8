#!/usr/bin/env python3
"""Runs every seed example (examples/seeds) and checks what it must show.

- Compile errors under policy=strict: the exit status, and the message naming
  the user's lines (found in the example's source, not written here).
- Placement: ops per device and copies per step, from the summary each
  example prints.
- Numerics: every training loss against PyTorch's for the same initial
  weights and data (reference.json, made by torch_reference.py), within
  1e-4 relative; the printed epoch losses (4 decimals) to their rounding.

  check_seeds.py <build dir>
"""
import json
import os
import re
import subprocess
import sys

BUILD = sys.argv[1]
HERE = os.path.dirname(os.path.abspath(__file__))
SOURCES = os.path.join(HERE, "..", "..", "examples", "seeds")
REF = json.load(open(os.path.join(HERE, "reference.json")))
failures = []


def run(example, *args):
    exe = os.path.join(BUILD, "examples", "seed_" + example)
    p = subprocess.run([exe] + list(args), capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def line_of(example, needle):
    """The line of the example's source that holds `needle`."""
    with open(os.path.join(SOURCES, "seed_%s.cpp" % example)) as f:
        for n, text in enumerate(f, 1):
            if needle in text:
                return n
    raise RuntimeError("%s not in seed_%s.cpp" % (needle, example))


def expect(name, ok, detail=""):
    print("%s %s%s" % ("ok  " if ok else "FAIL", name, "" if ok else ": " + detail))
    if not ok:
        failures.append(name)


def close(got, want, rel=1e-4):
    return abs(got - want) <= rel * abs(want)


def final_loss(out):
    m = re.search(r"final loss (\S+)", out)
    return float(m.group(1)) if m else None


def copies_per_step(out):
    m = re.search(r"copies: (\d+) per step", out)
    return int(m.group(1)) if m else None


def ops_on(out, device):
    m = re.search(r"ops per device:.*?\b%s (\d+);" % re.escape(device), out)
    return int(m.group(1)) if m else None


def check_curve(name, out, ref, pattern):
    printed = [float(v) for v in re.findall(pattern, out)]
    expect(name + ": epoch losses printed", len(printed) == len(ref),
           "%d printed, %d in the reference" % (len(printed), len(ref)))
    for i, (p, r) in enumerate(zip(printed, ref)):
        if abs(p - r) > 0.00005 + 1e-4 * abs(r):
            expect("%s: epoch %d loss" % (name, i + 1), False, "%.4f vs PyTorch %.6f" % (p, r))
            return


def strict_error(example, error_line, data_line, data_what):
    code, out = run(example)
    src = "seed_%s.cpp" % example
    expect(example + " strict: compile error", code == 1 and "compile error under policy=strict" in out,
           "exit %d:\n%s" % (code, out))
    expect(example + " strict: names the op's line", "%s:%d:" % (src, error_line) in out.split("\n")[1],
           out)
    expect(example + " strict: names the data's line",
           "%s:%d: note: %s" % (src, data_line, data_what) in out, out)
    expect(example + " strict: suggests the fix", "note: fix: move" in out, out)


# Seed 000 example 1: everything on the CPU by default.
code, out = run("cpu_default")
expect("cpu_default: runs", code == 0, out)
expect("cpu_default: every op on the CPU", ops_on(out, "cuda:0") == 0 and ops_on(out, "cpu") > 0, out)
expect("cpu_default: says the GPU is idle", "a CUDA device is available but 0 ops are placed on it" in out, out)
expect("cpu_default: no copies", copies_per_step(out) == 0, out)
check_curve("cpu_default", out, REF["linear_mse"], r"Epoch \d+, loss: (\S+) ")
loss = final_loss(out)
expect("cpu_default: final loss within 1e-4 of PyTorch's", loss is not None and close(loss, REF["linear_mse"][-1]),
       "%s vs %s" % (loss, REF["linear_mse"][-1]))

# Seed 000 example 2: model moved, data not.
strict_error("model_moved", line_of("model_moved", "model(x)"),
             line_of("model_moved", 'g.input("input_data"'), 'input "input_data" is created on cpu here')
for policy in ["prefer-gpu", "auto"]:
    code, out = run("model_moved", "--policy=" + policy)
    expect("model_moved %s: runs" % policy, code == 0, out)
    copies = copies_per_step(out)
    expect("model_moved %s: copies inserted and reported" % policy,
           copies is not None and copies > 0 and "cross devices every step" in out, out)
    loss = final_loss(out)
    expect("model_moved %s: final loss within 1e-4 of PyTorch's" % policy,
           loss is not None and close(loss, REF["linear_mse"][-1]), "%s" % loss)
code, out = run("model_moved", "--policy=prefer-gpu")
expect("model_moved prefer-gpu: the inputs and the loss cross",
       copies_per_step(out) == 3 and 'input "input_data" (cpu -> cuda:0)' in out, out)

# Seed 000 example 3: both moved.
code, out = run("both_moved")
expect("both_moved: runs", code == 0, out)
expect("both_moved: the training step on cuda:0", ops_on(out, "cuda:0") > 0 and copies_per_step(out) == 0, out)
expect("both_moved: the step's kernels run on cuda:0",
       re.search(r"cuda:0 -> (sim|cuda:0).*; [1-9]\d* kernels", out) is not None
       and re.search(r"cpu -> cpu .*; 0 kernels", out) is not None, out)
loss = final_loss(out)
expect("both_moved: final loss within 1e-4 of PyTorch's", loss is not None and close(loss, REF["linear_mse"][-1]), "%s" % loss)

# Seed 001 examples 3 and 4: the DataLoader loop that forgot to move batches.
strict_error("dataloader", line_of("dataloader", "auto output = model(inputs)"),
             line_of("dataloader", 'g.input("inputs"'), 'input "inputs" is created on cpu here')
for args, copies in [(["--policy=prefer-gpu"], 3), (["--fixed"], 0)]:
    code, out = run("dataloader", *args)
    name = "dataloader " + " ".join(args)
    expect(name + ": runs", code == 0, out)
    m = re.search(r"last step: \d+ kernel launches, (\d+) copies", out)
    expect(name + ": %d copies per step" % copies, m is not None and int(m.group(1)) == copies, out)
    check_curve(name, out, REF["dataloader"][9::10], r"Epoch \d+, loss: (\S+)")
    loss = final_loss(out)
    expect(name + ": final loss within 1e-4 of PyTorch's", loss is not None and close(loss, REF["dataloader"][-1]),
           "%s vs %s" % (loss, REF["dataloader"][-1]))

# Seed 002 example 3: the mixed-device add.
strict_error("mixed_add", line_of("mixed_add", "tensorCpu + tensorDevice"),
             line_of("mixed_add", 'g.input("tensor_cpu"'), 'input "tensor_cpu" is created on cpu here')
code, out = run("mixed_add")
expect("mixed_add strict: names the moved operand's line",
       "seed_mixed_add.cpp:%d: note: the result of .to(cuda:0) is moved to cuda:0 here" % line_of("mixed_add", ".to(locus::cuda(0))") in out, out)
code, out = run("mixed_add", "--policy=prefer-gpu")
expect("mixed_add prefer-gpu: copies and adds", code == 0 and "worst error 0" in out and copies_per_step(out) > 0, out)

# Seed 004 example 3: the CNN trained with Adam.
code, out = run("cnn_adam")
expect("cnn_adam: runs", code == 0, out)
expect("cnn_adam: all on cuda:0, no copies", ops_on(out, "cuda:0") > 0 and copies_per_step(out) == 0, out)
check_curve("cnn_adam", out, REF["cnn_adam"][19::20], r"Loss: (\S+)")
loss = final_loss(out)
expect("cnn_adam: final loss within 1e-4 of PyTorch's", loss is not None and close(loss, REF["cnn_adam"][-1]),
       "%s vs %s" % (loss, REF["cnn_adam"][-1]))

# Seed 004 example 1: the output moved back to the CPU.
code, out = run("output_to_cpu")
expect("output_to_cpu: runs and matches", code == 0, out)
expect("output_to_cpu: the output comes back to the CPU",
       "the result of locus.linear (cuda:0 -> cpu)" in out and ops_on(out, "cuda:0") > 0, out)

print("%d failed" % len(failures))
sys.exit(1 if failures else 0)
