"""tools/gpu-check prepare: everything the GPU machine needs, made here.

Builds the compiler (build/) and the runtime alone without sanitizers
(build-gpu/), then writes the bundle (git-ignored):
  bin/        locus-run, runtime_tests, device_conformance_tests and
              liblocus_runtime.so, which need no LLVM, MLIR or Boost;
  cases/      every op configuration as an artifact for cuda:0, with inputs
              and the double-precision reference (check_lowering.py);
  grad_cases/ every gradient case likewise (check_gradients.py);
  bench/      the artifacts of workloads.py;
  numerics/   the example models' training steps for GPU-vs-host checks;
  dynamic/    graphs with dynamic sizes for cuda:0, with inputs at several
              sizes of their dynamic dimension (GPU-vs-host checks);
  onnx/       ONNX test models compiled for cuda:0 with inputs and
              expected outputs as .npy.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

from . import graphs

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BUILD = os.path.join(ROOT, "build")
MAX_ONNX_ARTIFACT = 2 << 20


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def build():
    sh([os.path.join(ROOT, "scripts", "build.sh")], stdout=subprocess.DEVNULL)
    env = dict(os.environ, LOCUS_BUILD_DIR=os.path.join(ROOT, "build-gpu"))
    sh([os.path.join(ROOT, "scripts", "build.sh"), "-DLOCUS_BUILD_COMPILER=OFF",
        "-DLOCUS_SANITIZE=OFF"], env=env, stdout=subprocess.DEVNULL)


def copy_binaries(bundle):
    gpu = os.path.join(ROOT, "build-gpu")
    os.makedirs(os.path.join(bundle, "bin"))
    for f in ("runtime/liblocus_runtime.so", "tools/locus-run", "tests/runtime_tests",
              "tests/device_conformance_tests"):
        shutil.copy2(os.path.join(gpu, f), os.path.join(bundle, "bin"))


def compile_graph(text, artifact, policy="strict", extra=()):
    """Compiles locus IR `text` for cpu + cuda:0 into `artifact`; the error
    text on failure."""
    with tempfile.NamedTemporaryFile("w", suffix=".mlir", delete=False) as f:
        f.write(text)
    try:
        return compile_file(f.name, artifact, policy, extra)
    finally:
        os.unlink(f.name)


def compile_file(path, artifact, policy, extra=()):
    p = subprocess.run([os.path.join(BUILD, "tools", "locus-compile"), path, "-o", artifact,
                        "--devices=cpu,cuda:0", "--policy=" + policy,
                        "--progress=never"] + list(extra),
                       capture_output=True, text=True)
    return "" if p.returncode == 0 else (p.stderr or p.stdout).strip()[-400:]


def with_optimizer(text, optimizer):
    """`text` (a forward graph with a loss) with its backward pass and
    `optimizer` added by locus-opt --locus-autodiff."""
    p = subprocess.run([os.path.join(BUILD, "tools", "locus-opt"), "-",
                        "--locus-autodiff=" + optimizer], input=text,
                       capture_output=True, text=True, check=True)
    return p.stdout


def bench_artifacts(bench):
    """The benchmark artifacts; failures as (artifact, why)."""
    os.makedirs(bench)
    jobs = [
        ("launch_chain", graphs.launch_chain(), "strict", ["--no-fuse"]),
        ("relu", graphs.elementwise(), "strict", []),
        ("sum", graphs.reduce_sum([64 << 20], [0], [], "sum"), "strict", []),
        ("softmax1024", graphs.softmax(16384, 1024), "strict", []),
        ("softmax32", graphs.softmax(524288, 32), "strict", []),
        ("softmax32768", graphs.softmax(512, 32768), "strict", []),
        ("colsum", graphs.reduce_sum([4096, 1000], [0], [1000], "colsum"), "strict", []),
        ("bnstats", graphs.reduce_sum([128, 64, 32, 32], [0, 2, 3], [64], "bnstats"),
         "strict", []),
        ("layernorm", graphs.layer_norm(8192, 1024), "strict", []),
        ("copies", graphs.to_gpu(), "strict", []),
        ("gpu_input", graphs.gpu_input(), "strict", []),
        ("conv_fwd", graphs.conv("fwd"), "strict", []),
        ("conv_dgrad", graphs.conv("dgrad"), "strict", []),
        ("conv_wgrad", graphs.conv("wgrad"), "strict", []),
        ("mlp", graphs.mlp(), "strict", []),
        ("mlp_train", with_optimizer(graphs.mlp(train=True),
                                     "optimizer=sgd lr=0.01 momentum=0.9"), "strict", []),
        ("mlp_train_bf16", with_optimizer(graphs.mlp(train=True),
                                          "optimizer=sgd lr=0.01 momentum=0.9"),
         "strict", ["--precision=bf16"]),
        ("cnn_train", with_optimizer(graphs.seed_cnn_loss(), "optimizer=adam lr=0.001"),
         "strict", []),
        # The same MLP step with its gradients averaged over a job's ranks:
        # at world size 1 on a GPU, NCCL's path (tools/gpu_check/run.py).
        ("mlp_train_dp", with_optimizer(graphs.mlp(train=True),
                                        "optimizer=sgd lr=0.01 momentum=0.9"),
         "strict", ["--data-parallel"]),
    ]
    jobs.append(("embedding_train",
                 with_optimizer(graphs.embedding_bag(**graphs.EMBEDDING),
                                "optimizer=sgd lr=0.1"), "strict", []))
    embedding_ids(os.path.join(bench, "embedding_ids.npy"))
    failed = []
    for name, text, policy, extra in jobs:
        why = compile_graph(text, os.path.join(bench, name + ".locus"), policy, extra)
        if why:
            failed.append((name, why))
    return failed


def example_artifacts(bundle, tmp):
    """The example models' training steps: ResNet-18 (b128 to time, b16 for
    numerics; each also with TF32 allowed and in bf16) and the tiny Transformer
    (prefer-gpu, auto, and prefer-gpu in bf16)."""
    failed = []
    models = os.path.join(BUILD, "examples")
    for model, batch, artifacts in (
            ("resnet18", 128, [("bench/resnet18_train", "prefer-gpu"),
                               ("bench/resnet18_train_tf32", "prefer-gpu tf32"),
                               ("bench/resnet18_train_bf16", "prefer-gpu bf16")]),
            ("resnet18", 16, [("numerics/resnet18", "prefer-gpu"),
                              ("numerics/resnet18_tf32", "prefer-gpu tf32"),
                              ("numerics/resnet18_bf16", "prefer-gpu bf16")]),
            ("transformer", None, [("bench/transformer_gpu", "prefer-gpu"),
                                   ("bench/transformer_auto", "auto"),
                                   ("bench/transformer_gpu_bf16", "prefer-gpu bf16"),
                                   ("numerics/transformer", "prefer-gpu"),
                                   ("numerics/transformer_bf16", "prefer-gpu bf16")])):
        graph = os.path.join(tmp, "%s_%s.mlir" % (model, batch))
        sh([os.path.join(models, model), "--save-graph=" + graph] +
           (["--batch=%d" % batch] if batch else []))
        for artifact, how in artifacts:
            policy, *flags = how.split()
            os.makedirs(os.path.dirname(os.path.join(bundle, artifact)), exist_ok=True)
            extra = {"tf32": ["--allow-tf32"], "bf16": ["--precision=bf16"]}
            why = compile_file(graph, os.path.join(bundle, artifact + ".locus"), policy,
                               [f for flag in flags for f in extra[flag]])
            if why:
                failed.append((artifact, why))
    return failed


def embedding_ids(path):
    """The embedding row's ids: uniform over the vocabulary from a fixed
    linear congruential sequence (PyTorch's side draws its own the same
    way: tools/gpu_check/peer.py)."""
    e = graphs.EMBEDDING
    write_npy(path, "q", [e["batch"], e["seq"]],
              graphs.embedding_ids(e["vocab"], e["batch"] * e["seq"]))


def write_npy(path, fmt, shape, values):
    """A little-endian .npy of f4 ("f") or i8 ("q") values (no NumPy)."""
    import struct
    descr = {"f": "<f4", "q": "<i8"}[fmt]
    dims = "(%s)" % "".join("%d, " % d for d in shape) if len(shape) != 1 else \
        "(%d,)" % shape[0]
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, dims)
    header += " " * (63 - (len(header) + 10) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") +
                header.encode("latin1") + struct.pack("<%d%s" % (len(values), fmt),
                                                      *values))


# Graphs with dynamic sizes (the lit tests' inputs, and the ONNX models of
# tests/onnx/dynamic), their dynamic inputs at each size: (name, file from
# the root, compile flags, sizes, inputs as (name, fmt, shape at size n)).
# BatchNorm in training needs two values per channel: its CNN starts at 2.
# The GPT-style model's ids are tokens below 3 of its 50.
LIT = "tests/lit/Tools/Inputs/"
DYNAMIC = [
    ("mlp_train", LIT + "dynamic-mlp-train.mlir", [], (7, 1, 16),
     [("x", "f", lambda n: [n, 12]), ("t", "q", lambda n: [n])]),
    ("attention", LIT + "dynamic-attention.mlir", [], (5, 1, 16),
     [("x", "f", lambda n: [2, n, 8])]),
    ("norm_cnn_train", LIT + "dynamic-norm-cnn-train.mlir", [], (5, 2, 16),
     [("x", "f", lambda n: [n, 3, 12, 12]), ("t", "q", lambda n: [n])]),
    ("gpt_onnx", "tests/onnx/dynamic/gpt.onnx",
     ["--dynamic", "batch=8", "--dynamic", "seq=16"], (5, 1, 7),
     [("ids", "q", lambda n: [n, 2 * n + 1])]),
    ("resnet_onnx", "tests/onnx/dynamic/resnet.onnx", ["--dynamic", "batch=8"],
     (7, 1, 8), [("input", "f", lambda n: [n, 3, 16, 16])]),
]


def dynamic_artifacts(bundle):
    """DYNAMIC's graphs for cuda:0 in dynamic/, with inputs at each size
    (dynamic/<name>_<n>_<input>.npy): random normal values, labels in
    [0, 3)."""
    import random
    rng = random.Random(20261128)
    out = os.path.join(bundle, "dynamic")
    os.makedirs(out)
    failed = []
    for name, path, flags, sizes, tensors in DYNAMIC:
        why = compile_file(os.path.join(ROOT, path), os.path.join(out, name + ".locus"),
                           "prefer-gpu", flags)
        if why:
            failed.append(("dynamic/" + name, why))
        for n in sizes:
            for tensor, fmt, shape_of in tensors:
                shape = shape_of(n)
                count = 1
                for d in shape:
                    count *= d
                values = [rng.gauss(0, 1) if fmt == "f" else rng.randrange(3)
                          for _ in range(count)]
                write_npy(os.path.join(out, "%s_%d_%s.npy" % (name, n, tensor)), fmt,
                          shape, values)
    return failed


# bench/models.py's ONNX inference models run with host input and output:
# (name, batches).
ONNX_MODELS = [("resnet_blocks", (1, 8, 64)), ("seed_cnn", (1, 16, 64))]


def onnx_models(bench, tmp):
    """bench/models.py's three ResNet-34 blocks and seed CNN through ONNX
    at the batches of ONNX_MODELS (PyTorch exports them: python3-torch)."""
    p = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "bench", "models.py"),
                        "export", tmp], capture_output=True, text=True)
    if p.returncode != 0:
        return [("onnx_models", "bench/models.py export failed (python3-torch?): "
                 + p.stderr.strip()[-200:])]
    failed = []
    for model, batches in ONNX_MODELS:
        for b in batches:
            name = "%s_b%d" % (model, b)
            why = compile_file(os.path.join(tmp, name + ".onnx"),
                               os.path.join(bench, name + ".locus"), "prefer-gpu")
            if why:
                failed.append((name, why))
    return failed


def onnx_cases(bundle):
    """ONNX's test models for cuda:0 with their data as .npy, made by
    onnx_cases.py under Debian's Python (python3-onnx and python3-numpy)."""
    probe = subprocess.run(["/usr/bin/python3", "-c", "import onnx.numpy_helper"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        return 0, ("Debian's python3-onnx is not installed "
                   "(sudo apt-get install python3-onnx)")
    p = subprocess.run(["/usr/bin/python3", os.path.join(HERE, "onnx_cases.py"),
                        os.path.join(bundle, "onnx"),
                        os.path.join(BUILD, "tools", "locus-compile")],
                       capture_output=True, text=True)
    last = (p.stdout.strip().splitlines() or [p.stderr.strip()[-300:]])[-1]
    return (int(last.split()[0]), "") if p.returncode == 0 else (0, last)


def export_cases(bundle):
    for script, where, extra in (("check_lowering.py", "cases", ["--compiled"]),
                                 ("check_gradients.py", "grad_cases", [])):
        p = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "e2e", script),
                            BUILD] + extra + ["--export", os.path.join(bundle, where)],
                           capture_output=True, text=True)
        print("  %s: %s" % (where, (p.stdout.strip().splitlines() or ["?"])[-1]))
        if p.returncode != 0:
            raise SystemExit("%s failed:\n%s" % (script, p.stdout[-2000:] + p.stderr[-2000:]))


def size_mb(path):
    total = 0
    for dirpath, _, files in os.walk(path):
        total += sum(os.path.getsize(os.path.join(dirpath, f)) for f in files)
    return total / 1e6


def main(bundle):
    start = time.monotonic()
    print("== building (build/, and build-gpu/: the runtime alone)")
    build()
    built = time.monotonic()
    shutil.rmtree(bundle, ignore_errors=True)
    os.makedirs(bundle)
    copy_binaries(bundle)
    print("== op and gradient cases")
    export_cases(bundle)
    failed = []
    with tempfile.TemporaryDirectory() as tmp:
        print("== benchmark artifacts")
        failed += bench_artifacts(os.path.join(bundle, "bench"))
        print("== example models")
        failed += example_artifacts(bundle, tmp)
        print("== graphs with dynamic sizes")
        failed += dynamic_artifacts(bundle)
        print("== inference models from ONNX")
        failed += onnx_models(os.path.join(bundle, "bench"), tmp)
    print("== ONNX test models")
    count, note = onnx_cases(bundle)
    print("  %d models%s" % (count, " (" + note + ")" if note else ""))
    for name, why in failed:
        print("  could not make %s: %s" % (name, why))
    mb = size_mb(bundle)
    print("bundle: %s, %.1f MB; build %.0f s, the rest %.0f s" % (
        bundle, mb, built - start, time.monotonic() - built))
    if mb > 40:
        print("the bundle is over 40 MB: the device tool carries 64 MiB in all")
    print("carry %s and run: tools/gpu-check run" % os.path.relpath(bundle, ROOT))
    return 1 if failed else 0
