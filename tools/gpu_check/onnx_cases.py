#!/usr/bin/python3
"""ONNX's test models (Debian's libonnx-testdata: the 'simple' models and
the 'node' tests, at most two per op so the GPU run stays short) that
Locus compiles for cuda:0, each with its first data set as .npy: what
tools/gpu-check run compares on the GPU. ('pytorch-converted' is opset 6,
which Locus does not read.)

    onnx_cases.py OUT_DIR LOCUS_COMPILE

Writes OUT_DIR/<case>/{model.locus, in<k>.npy, inputs.json (input name ->
file), expected/<output name>.npy}; prints "<count> models". Needs
python3-onnx and python3-numpy (Debian's /usr/bin/python3).
"""
import glob
import json
import os
import shutil
import subprocess
import sys

import numpy
import onnx
from onnx import numpy_helper

DATA = "/usr/share/libonnx-testdata/data"
DTYPES = ("float32", "int64", "int32", "bool")
MAX_ARTIFACT = 2 << 20
PER_OP = 2


def compiles(compiler, model, artifact):
    p = subprocess.run([compiler, model, "-o", artifact, "--devices=cpu,cuda:0",
                        "--policy=prefer-gpu", "--progress=never"],
                       capture_output=True, text=True)
    return p.returncode == 0 and os.path.getsize(artifact) <= MAX_ARTIFACT


def export(case, out, compiler):
    """Writes one case; False when Locus or the harness cannot take it."""
    model = os.path.join(case, "model.onnx")
    data = os.path.join(case, "test_data_set_0")
    if not os.path.isdir(data):
        return False
    m = onnx.load(model)
    init = {i.name for i in m.graph.initializer}
    names = [i.name for i in m.graph.input if i.name not in init]
    files = sorted(os.listdir(data), key=lambda f: (
        not f.startswith("input"), int("".join(filter(str.isdigit, f)) or 0)))
    try:  # sequences and optionals are not tensors: not a case for the harness
        tensors = [numpy_helper.to_array(onnx.load_tensor(os.path.join(data, f)))
                   for f in files]
    except Exception:  # noqa: BLE001 (onnx raises several kinds)
        return False
    ins, outs = tensors[:len(names)], tensors[len(names):]
    if not outs or any(t.dtype.name not in DTYPES for t in tensors):
        return False
    d = os.path.join(out, os.path.basename(case))
    os.makedirs(os.path.join(d, "expected"))
    if not compiles(compiler, model, os.path.join(d, "model.locus")):
        shutil.rmtree(d)
        return False
    inputs = {}
    for k, (name, t) in enumerate(zip(names, ins)):
        numpy.save(os.path.join(d, "in%d.npy" % k), t.copy(order="C"))
        inputs[name] = "in%d.npy" % k
    for o, t in zip(m.graph.output, outs):
        numpy.save(os.path.join(d, "expected", o.name + ".npy"),
                   t.copy(order="C"))
    with open(os.path.join(d, "inputs.json"), "w") as f:
        json.dump(inputs, f)
    return True


def main():
    out, compiler = sys.argv[1], sys.argv[2]
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    cases = sorted(os.path.dirname(p) for suite in ("simple", "node")
                   for p in glob.glob(os.path.join(DATA, suite, "*", "model.onnx")))
    per_op, count = {}, 0
    for case in cases:
        op = os.path.basename(case)[len("test_"):].split("_")[0]
        if per_op.get(op, 0) < PER_OP and export(case, out, compiler):
            per_op[op] = per_op.get(op, 0) + 1
            count += 1
    print("%d models" % count)


if __name__ == "__main__":
    main()
