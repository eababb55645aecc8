#!/usr/bin/python3
"""Fine-tuning an imported ONNX model against PyTorch.

    finetune.py BUILD_DIR [--model resnet18] [--steps 5] [--lr 0.01]

Exports torchvision's ResNet-18 (random weights, torch.manual_seed(0),
BatchNorm kept as nodes with its running statistics: eval mode, as when
fine-tuning with frozen statistics), fine-tunes it in C++
(examples/onnx_finetune: importOnnx, a CrossEntropy loss and SGD over the
imported parameters) and in PyTorch (the same model in eval mode, the same
loss and SGD), 5 steps on one batch, and checks that every step's loss
agrees within 1e-4 relative.
"""
import argparse
import os
import subprocess
import sys
import tempfile

try:
    import torch
    import torchvision
except ImportError as e:
    print("SKIP: needs Debian's python3-torch and python3-torchvision (%s)" % e)
    sys.exit(77)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--model", default="resnet18")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--lr", type=float, default=0.01)
    args = ap.parse_args()
    torch.manual_seed(0)
    model = getattr(torchvision.models, args.model)(num_classes=10).eval()
    x = torch.randn(4, 3, 32, 32)
    labels = torch.tensor([1, 7, 3, 0])
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.onnx")
        torch.onnx.export(model, (x,), path, opset_version=14,
                          input_names=["input"], output_names=["output"],
                          training=torch.onnx.TrainingMode.PRESERVE,
                          do_constant_folding=False)
        x.numpy().tofile(os.path.join(tmp, "x.f32"))
        labels.numpy().tofile(os.path.join(tmp, "labels.i64"))
        run = subprocess.run(
            [os.path.join(args.build, "examples", "onnx_finetune"), path,
             "input=4x3x32x32", os.path.join(tmp, "x.f32"),
             os.path.join(tmp, "labels.i64"), str(args.steps), str(args.lr)],
            capture_output=True, text=True)
        if run.returncode:
            print(run.stderr)
            return 1
        got = [float(v) for v in run.stdout.split()]
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)
    expected = []
    for _ in range(args.steps):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), labels)
        loss.backward()
        opt.step()
        expected.append(loss.item())
    worst = max(abs(g - e) / abs(e) for g, e in zip(got, expected))
    for step, (g, e) in enumerate(zip(got, expected)):
        print("step %d: locus %.7f  pytorch %.7f" % (step, g, e))
    print("%s fine-tuned from ONNX, %d SGD steps: worst relative loss "
          "difference %.2e" % (args.model, args.steps, worst))
    return 0 if len(got) == args.steps and worst <= 1e-4 else 1


if __name__ == "__main__":
    sys.exit(main())
