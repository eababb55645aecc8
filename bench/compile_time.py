#!/usr/bin/python3
"""Compile time against the number of ops, in one run: a chain of n
elementwise ops (relu, neg, exp, tanh in turn) on a [16] input,
  - recorded with the C++ frontend and compiled in-process (compile_time);
  - as locus IR text through locus-compile;
  - as an ONNX file through locus-compile (needs python3-onnx);
all for the CPU (--policy=cpu), and the MLIR chain also with
--policy=auto --devices=cpu,cuda:0 (placement by min-cut, CUDA kernels).

    bench/compile_time.py [N ...]     default: 1000 10000 100000

Prints one row per case and size: seconds (wall clock of the whole
command, or record + compile for C++) and peak memory for the tools.
"""
import os
import resource
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("LOCUS_BUILD_DIR", os.path.join(ROOT, "build"))
OPS = ["relu", "neg", "exp", "tanh"]


def mlir_chain(n, path):
    with open(path, "w") as f:
        f.write('locus.graph @chain {\n  %v0 = locus.input "x" : tensor<16xf32>\n')
        for i in range(n):
            f.write("  %%v%d = locus.%s %%v%d : tensor<16xf32>\n" % (i + 1, OPS[i % 4], i))
        f.write('  locus.output "y" = %%v%d : tensor<16xf32>\n}\n' % n)


def onnx_chain(n, path):
    import onnx
    from onnx import TensorProto, helper
    names = {"relu": "Relu", "neg": "Neg", "exp": "Exp", "tanh": "Tanh"}
    nodes, prev = [], "x"
    for i in range(n):
        nodes.append(helper.make_node(names[OPS[i % 4]], [prev], ["v%d" % i],
                                      name="n%d" % i))
        prev = "v%d" % i
    g = helper.make_graph(nodes, "chain",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [16])],
                          [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [16])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, path)


def timed(cmd):
    start = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    secs = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    if p.returncode != 0:
        return "failed: " + p.stderr.strip()[-200:]
    return "%.2f s (peak so far %.0f MB)" % (secs, peak)


def main():
    sizes = [int(a) for a in sys.argv[1:]] or [1000, 10000, 100000]
    compile_ = os.path.join(BUILD, "tools", "locus-compile")
    print("load: %s" % open("/proc/loadavg").read().strip())
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            p = subprocess.run([os.path.join(BUILD, "bench", "compile_time"), str(n)],
                               capture_output=True, text=True)
            cols = p.stdout.split()
            print("C++  %7d ops: %s" % (n, "record %s s + compile %s s" % (cols[2], cols[3])
                                        if p.returncode == 0 else "failed: " + p.stderr))
            mlir = os.path.join(tmp, "chain.mlir")
            mlir_chain(n, mlir)
            out = os.path.join(tmp, "chain.locus")
            print("MLIR %7d ops: %s" % (n, timed([compile_, mlir, "-o", out, "--policy=cpu",
                                                   "--devices=cpu", "--progress=never"])))
            print("MLIR %7d ops, auto cpu+cuda:0: %s" % (n, timed(
                [compile_, mlir, "-o", out, "--policy=auto", "--devices=cpu,cuda:0",
                 "--progress=never"])))
            try:
                model = os.path.join(tmp, "chain.onnx")
                onnx_chain(n, model)
                print("ONNX %7d ops: %s" % (n, timed([compile_, model, "-o", out,
                                                       "--policy=cpu", "--devices=cpu",
                                                       "--progress=never"])))
            except ImportError:
                print("ONNX %7d ops: skipped (no python3-onnx)" % n)
            sys.stdout.flush()


if __name__ == "__main__":
    main()
