#!/usr/bin/python3
"""Writes the dynamic-shape ONNX models and PyTorch's outputs that
check_dynamic_models.py runs (needs Debian's python3-torch and python3-onnx;
CI reads the files committed in tests/onnx/dynamic/).

    make_dynamic_models.py [OUT_DIR]

- gpt.onnx: a GPT-style decoder (token and position embeddings, causal
  self-attention with the mask built from the sequence length, pre-LN
  blocks, GELU MLP), exported with symbolic `batch` and `seq`;
- resnet.onnx: a small ResNet (BasicBlocks with BatchNorm in eval mode,
  a strided block with a projection, global average pooling), exported with
  a symbolic `batch`.

For each, a few inputs at several sizes and PyTorch 1.13's outputs, as
<model>_<case>_in.npy and <model>_<case>_out.npy.
"""
import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.h = heads
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.fc1, self.fc2 = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

    def forward(self, x, mask):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.h, c // self.h).transpose(1, 2)
                   for z in (q, k, v))
        a = (q @ k.transpose(-2, -1)) / math.sqrt(c // self.h) + mask
        y = (a.softmax(-1) @ v).transpose(1, 2).reshape(b, t, c)
        x = x + self.proj(y)
        return x + self.fc2(nn.functional.gelu(self.fc1(self.ln2(x))))


class Gpt(nn.Module):
    def __init__(self, vocab=50, dim=32, heads=2, layers=2, max_len=16):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, dim), nn.Embedding(max_len, dim)
        self.blocks = nn.ModuleList([Block(dim, heads) for _ in range(layers)])
        self.ln, self.head = nn.LayerNorm(dim), nn.Linear(dim, vocab)

    def forward(self, ids):
        t = ids.shape[1]
        x = self.tok(ids) + self.pos(torch.arange(t))
        mask = torch.triu(torch.full((t, t), float("-inf")), 1)
        for block in self.blocks:
            x = block(x, mask)
        return self.head(self.ln(x))


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                      nn.BatchNorm2d(cout))

    def forward(self, x):
        y = self.b2(self.c2(torch.relu(self.b1(self.c1(x)))))
        return torch.relu(y + (x if self.down is None else self.down(x)))


class ResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 1, 1, bias=False),
                                  nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2))
        self.layers = nn.Sequential(BasicBlock(8, 8, 1), BasicBlock(8, 16, 2))
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        return self.fc(torch.flatten(
            nn.functional.adaptive_avg_pool2d(self.layers(self.stem(x)), 1), 1))


def export(model, example, path, name, axes):
    torch.onnx.export(model, (example,), path, opset_version=17,
                      input_names=[name], output_names=["output"],
                      dynamic_axes={name: axes, "output": {0: "batch"}},
                      do_constant_folding=True)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "dynamic")
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    gpt = Gpt().eval()
    resnet = ResNet().eval()
    for m in resnet.modules():  # running statistics as a trained model's
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.1, 0.1)
            m.running_var.uniform_(0.5, 1.5)
    export(gpt, torch.randint(0, 50, (2, 8)), os.path.join(out, "gpt.onnx"),
           "ids", {0: "batch", 1: "seq"})
    export(resnet, torch.randn(2, 3, 16, 16), os.path.join(out, "resnet.onnx"),
           "input", {0: "batch"})
    cases = [("gpt", gpt, "b1_s5", torch.randint(0, 50, (1, 5))),
             ("gpt", gpt, "b7_s16", torch.randint(0, 50, (7, 16))),
             ("gpt", gpt, "b7_s5", torch.randint(0, 50, (7, 5))),
             ("gpt", gpt, "b1_s16", torch.randint(0, 50, (1, 16))),
             ("resnet", resnet, "b1", torch.randn(1, 3, 16, 16)),
             ("resnet", resnet, "b7", torch.randn(7, 3, 16, 16))]
    with torch.no_grad():
        for model_name, model, case, x in cases:
            stem = os.path.join(out, "%s_%s" % (model_name, case))
            np.save(stem + "_in.npy", x.numpy())
            np.save(stem + "_out.npy", model(x).numpy())
    print("wrote", out)


if __name__ == "__main__":
    main()
