#!/usr/bin/python3
"""Real models exported from PyTorch as ONNX, run by Locus and compared.

    torch_models.py BUILD_DIR [--models resnet18,mobilenet_v2,mobilenet_v3_small,squeezenet1_1,transformer]
                    [--opsets 14,17] [--sim]

A model may name its image size (`swin_t:224`; 64 otherwise). Beyond the
default list, every torchvision classifier below runs so (2026-11-29,
opset 17, cpu and sim): alexnet:224, squeezenet1_1, shufflenet_v2_x1_0,
mnasnet0_5, efficientnet_b0, efficientnet_v2_s, regnet_y_400mf,
densenet121, resnext50_32x4d, googlenet, convnext_tiny, mobilenet_v3_large,
swin_t:224, vit_b_16:224 (its head replaced by the identity: torchvision
zeroes it). inception_v3:160 agrees within 1.3e-6 of its largest output,
but random weights make that 5.6e12, so its elements near 0 miss the
per-element tolerance.

With Debian's python3-torch and python3-torchvision (seen by
/usr/bin/python3), exports torchvision's ResNet-18, MobileNetV2,
MobileNetV3-Small and SqueezeNet 1.1 (its pools in ceil_mode; random
weights, torch.manual_seed(0), eval mode, a symbolic batch dimension) and a
2-layer Transformer encoder at each opset, compiles each with
`locus-compile model.onnx --shape ...` (batch 2) for the CPU (and, with
--sim, for cpu + cuda:0 under prefer-gpu, cuda:0 running on the sim
device), runs it with locus-run and checks every output against PyTorch's
within 1e-4 relative plus 1e-4 absolute (scaled down to the outputs' size
where they are below 1). It also checks that locus-dump
locates every op of the imported graph at an ONNX node.
"""
import argparse
import os
import struct
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import torch
    import torchvision  # noqa: F401
except ImportError as e:
    print("SKIP: needs Debian's python3-torch and python3-torchvision (%s)" % e)
    sys.exit(77)


def transformer():
    torch.manual_seed(0)

    class Encoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(100, 64)
            layer = torch.nn.TransformerEncoderLayer(
                64, 4, 128, dropout=0.1, activation="gelu", batch_first=True,
                norm_first=True)
            self.encoder = torch.nn.TransformerEncoder(layer, 2)
            self.head = torch.nn.Linear(64, 100)

        def forward(self, ids):
            n = ids.shape[1]
            mask = torch.triu(torch.full((n, n), float("-inf")), 1)
            return self.head(self.encoder(self.embed(ids), mask=mask))

    model = Encoder().eval()
    ids = torch.randint(0, 100, (2, 16))
    return model, ids, {"ids": [2, 16]}, {0: "batch"}


def vision(name, size=64):
    import torchvision
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)().eval()
    if name.startswith("vit_"):
        # torchvision zeroes ViT's head: compare what feeds it.
        model.heads = torch.nn.Identity()
    # Non-trivial running statistics, as a trained model has.
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.uniform_(-0.1, 0.1)
            m.running_var.uniform_(0.5, 1.5)
    x = torch.randn(2, 3, size, size)
    return model, x, {"input": [2, 3, size, size]}, {0: "batch"}


def export(model, example, path, opset, input_name, dynamic):
    torch.onnx.export(
        model, (example,), path, opset_version=opset,
        input_names=[input_name], output_names=["output"],
        dynamic_axes={input_name: dynamic, "output": {0: "batch"}},
        do_constant_folding=True)


def write_npy(path, array):
    descr = {np.dtype("float32"): "<f4", np.dtype("int64"): "<i8"}[array.dtype]
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        descr, "".join("%d, " % d for d in array.shape))
    header += " " * (-(len(header) + 11) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)))
        f.write(header.encode() + np.ascontiguousarray(array).tobytes())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--models",
                    default="resnet18,mobilenet_v2,mobilenet_v3_small,"
                    "squeezenet1_1,transformer")
    ap.add_argument("--opsets", default="14,17")
    ap.add_argument("--sim", action="store_true")
    args = ap.parse_args()
    tools = os.path.join(args.build, "tools")
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for spec in args.models.split(","):
            name, _, size = spec.partition(":")
            if name == "transformer":
                model, example, shapes, dynamic = transformer()
            else:
                model, example, shapes, dynamic = vision(name, int(size or 64))
            input_name = next(iter(shapes))
            with torch.no_grad():
                expected = model(example).numpy()
            x = os.path.join(tmp, "x.npy")
            write_npy(x, example.numpy())
            for opset in [int(o) for o in args.opsets.split(",")]:
                onnx_path = os.path.join(tmp, "%s_%d.onnx" % (name, opset))
                export(model, example, onnx_path, opset, input_name, dynamic)
                shape = "%s=%s" % (input_name,
                                   "x".join(map(str, shapes[input_name])))
                targets = [("cpu", ["--devices=cpu"])]
                if args.sim:
                    targets.append(("cpu+cuda:0 (sim)",
                                    ["--devices=cpu,cuda:0",
                                     "--policy=prefer-gpu"]))
                for label, flags in targets:
                    artifact = os.path.join(tmp, "model.locus")
                    out = os.path.join(tmp, "out")
                    run = subprocess.run(
                        [os.path.join(tools, "locus-compile"), onnx_path,
                         "-o", artifact, "--shape", shape] + flags,
                        capture_output=True, text=True)
                    if run.returncode:
                        print("%s opset %d on %s: locus-compile failed:\n%s"
                              % (name, opset, label, run.stderr[-3000:]))
                        failures += 1
                        continue
                    run = subprocess.run(
                        [os.path.join(tools, "locus-run"), artifact,
                         "--input", "%s=%s" % (input_name, x),
                         "--save-outputs", out, "--quiet"],
                        capture_output=True, text=True)
                    if run.returncode:
                        print("%s: locus-run failed: %s" % (name, run.stderr))
                        failures += 1
                        continue
                    got = np.load(os.path.join(out, "output.npy"))
                    error = np.abs(got - expected)
                    # Absolute tolerance scaled down for small outputs
                    # (an untrained MobileNetV3's logits are about 0.01).
                    atol = 1e-4 * min(1.0, float(np.abs(expected).max()))
                    ok = got.shape == expected.shape and bool(
                        np.all(error <= atol + 1e-4 * np.abs(expected)))
                    print("%-13s opset %d on %-16s max |error| %.2e "
                          "(outputs up to %.2f): %s"
                          % (name, opset, label, error.max(),
                             np.abs(expected).max(),
                             "ok" if ok else "FAILED"))
                    failures += not ok
                    dump = subprocess.run(
                        [os.path.join(tools, "locus-dump"), artifact,
                         "--format=table"], capture_output=True, text=True)
                    rows = [l for l in dump.stdout.splitlines()
                            if l[:1].isdigit()]
                    unlocated = [l for l in rows if ".onnx: " not in l]
                    if unlocated:
                        print("  %d of %d ops not located at an ONNX node, "
                              "e.g. %s" % (len(unlocated), len(rows),
                                           unlocated[0]))
                        failures += 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
