#!/usr/bin/env python3
"""PyTorch's side of examples/models: the same models, initial weights,
data and optimizers, in double precision; writes reference.json, which
check_models.py compares with the examples' output.

Initial weights are Locus's defaults reproduced here (locus_init_fill's
generators seeded by Graph::seedFor(<state name>)): PyTorch's own default
distributions, drawn from Locus's counter-based stream. Data comes from the
same generator with the seeds the examples use.

Each model also runs in float32, and its largest distance from the float64
run is stored (float32_loss_error, float32_eval_error): check_models.py
allows Locus four times that where it exceeds the fixed limits. And in
float32 under torch.autocast(device_type="cpu", dtype=torch.bfloat16)
(bf16_loss_error, bf16_eval_error): what check_models.py --precision=bf16
holds Locus's precision="bf16" to.

Made with Debian's python3-torch (1.13.1), on the CPU:

  /usr/bin/python3 examples/models/torch_models.py > examples/models/reference.json
"""
import json
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "seeds"))
from torch_reference import GOLDEN, MASK, mix, seed_for, uniform  # noqa: E402

torch.set_default_dtype(torch.float64)
torch.set_num_threads(2)


def normal(n, mean, std, seed):
    """locus_init_fill(LOCUS_INIT_NORMAL, mean, std, seed, n)."""
    import struct
    out = []
    for i in range(n):
        first = mix((seed + (2 * i + 1) * GOLDEN) & MASK)
        second = mix((seed + (2 * i + 2) * GOLDEN) & MASK)
        u1 = 1.0 - (first >> 11) * 2.0 ** -53
        u2 = (second >> 11) * 2.0 ** -53
        z = math.sqrt(-2.0 * math.log(u1)) * math.cos(2 * math.pi * u2)
        out.append(struct.unpack("f", struct.pack("f", mean + std * z))[0])
    return out


def tensor(values, shape):
    return torch.tensor(values, dtype=torch.get_default_dtype()).reshape(shape)


def locus_init(model):
    """Each parameter as Locus's layers initialise the state of that name."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            module = model.get_submodule(name.rsplit(".", 1)[0])
            leaf = name.rsplit(".", 1)[1]
            if isinstance(module, (nn.BatchNorm2d, nn.LayerNorm)):
                p.fill_(1.0 if leaf == "weight" else 0.0)
            elif isinstance(module, nn.Embedding):
                p.copy_(tensor(normal(p.numel(), 0.0, 1.0, seed_for(name)), p.shape))
            elif isinstance(module, nn.MultiheadAttention):
                if leaf == "in_proj_weight":
                    bound = math.sqrt(6.0 / (p.shape[0] + p.shape[1]))
                    p.copy_(tensor(uniform(p.numel(), -bound, bound, seed_for(name)), p.shape))
                else:
                    p.fill_(0.0)
            elif name.endswith("out_proj.bias"):
                p.fill_(0.0)
            else:
                # Linear and Conv2d: U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
                weight = module.weight
                fan_in = weight[0].numel()
                bound = 1.0 / math.sqrt(fan_in)
                p.copy_(tensor(uniform(p.numel(), -bound, bound, seed_for(name)), p.shape))


def labels(n, classes, seed):
    return torch.tensor([min(int(v), classes - 1) for v in uniform(n, 0.0, classes, seed)])


# --- ResNet-18 ---------------------------------------------------------------

class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, 0, bias=False),
                                            nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + (self.downsample(x) if self.downsample is not None else x))


class ResNet18(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        cin = 64
        for stage in range(4):
            cout = 64 << stage
            blocks = []
            for i in range(2):
                blocks.append(BasicBlock(cin, cout, 2 if i == 0 and stage > 0 else 1))
                cin = cout
            setattr(self, "layer%d" % (stage + 1), nn.Sequential(*blocks))
        self.fc = nn.Linear(512, classes)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        for stage in range(4):
            y = getattr(self, "layer%d" % (stage + 1))(y)
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(y, 1), 1))


def images(batch, y, seed):
    """Noise in [-0.5, 0.5) plus ones in channel c % 3, rows 8 (c // 3) on."""
    x = tensor(uniform(batch * 3 * 32 * 32, -1.0, 1.0, seed), (batch, 3, 32, 32)) * 0.5
    for i in range(batch):
        c = int(y[i])
        x[i, c % 3, (c // 3) * 8:(c // 3) * 8 + 8, :] += 1.0
    return x


def autocast(bf16):
    """torch.autocast on the CPU in bfloat16 when `bf16`, else nothing."""
    return torch.autocast(device_type="cpu", dtype=torch.bfloat16, enabled=bf16)


def wide(t, bf16):
    """An autocast result back in float32 (the loss and outputs in f32, as
    Locus gives them); the default dtype's as it is otherwise."""
    return t.float() if bf16 else t


def resnet18(batch=8, steps=20, bf16=False):
    model = ResNet18()
    locus_init(model)
    sgd = torch.optim.SGD(model.parameters(), lr=1e-4, weight_decay=5e-4)
    losses = []
    for step in range(steps):
        y = labels(batch, 10, 8000 + step)
        x = images(batch, y, 7000 + step)
        sgd.zero_grad()
        with autocast(bf16):
            loss = F.cross_entropy(wide(model(x), bf16), y)
        loss.backward()
        sgd.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad(), autocast(bf16):
        x = images(batch, labels(batch, 10, 9001), 9000)
        logits = wide(model(x), bf16).flatten().tolist()
    return {"losses": losses, "eval": logits}


# --- a 2-layer Transformer language model ------------------------------------

VOCAB, SEQ, MODEL, HEADS, FF, BATCH = 50, 16, 32, 4, 64, 4


def tokens(sequences, seed):
    starts = uniform(2 * sequences, 0.0, VOCAB, seed)
    out = []
    for s in range(sequences):
        first = int(starts[2 * s]) % VOCAB
        stride = 1 + int(starts[2 * s + 1]) % 3
        out.append([(first + stride * t) % VOCAB for t in range(SEQ + 1)])
    return torch.tensor(out)


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, MODEL)
        self.pos = nn.Embedding(SEQ, MODEL)
        self.layers = nn.ModuleList([
            nn.TransformerEncoderLayer(MODEL, HEADS, FF, dropout=0.0, activation="gelu",
                                       batch_first=True, norm_first=True)
            for _ in range(2)])
        self.norm = nn.LayerNorm(MODEL)
        self.head = nn.Linear(MODEL, VOCAB)

    def forward(self, ids):
        h = self.tok(ids) + self.pos(torch.arange(SEQ))
        causal = torch.triu(torch.ones(SEQ, SEQ, dtype=torch.bool), 1)
        for layer in self.layers:
            h = layer(h, src_mask=causal)
        return self.head(self.norm(h))


def transformer(steps=20, bf16=False):
    model = TinyLM()
    locus_init(model)
    adamw = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    losses = []
    for step in range(steps):
        seq = tokens(BATCH, 7000 + step)
        adamw.zero_grad()
        with autocast(bf16):
            logits = wide(model(seq[:, :SEQ]), bf16)
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), seq[:, 1:].reshape(-1))
        loss.backward()
        adamw.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad(), autocast(bf16):
        seq = tokens(BATCH, 9000)
        logits = wide(model(seq[:, :SEQ])[:, SEQ - 1], bf16).flatten().tolist()
    return {"losses": losses, "eval": logits}


MODELS = {"resnet18": resnet18, "transformer": transformer}

if __name__ == "__main__":
    names = sys.argv[1:] or list(MODELS)
    out = {"made_by": "examples/models/torch_models.py with torch %s, float64" % torch.__version__}
    for name in names:
        torch.set_default_dtype(torch.float64)
        out[name] = MODELS[name]()
        # PyTorch's own float32 run, against the float64 one: how far any
        # float32 implementation may reasonably be (check_models.py).
        torch.set_default_dtype(torch.float32)
        single = MODELS[name]()
        ref = out[name]
        out[name]["float32_loss_error"] = max(
            abs(a - b) / abs(b) for a, b in zip(single["losses"], ref["losses"]))
        out[name]["float32_eval_error"] = max(
            abs(a - b) for a, b in zip(single["eval"], ref["eval"]))
        # And under torch.autocast(bfloat16): how far mixed precision takes
        # PyTorch from float64 (check_models.py --precision=bf16).
        half = MODELS[name](bf16=True)
        out[name]["bf16_loss_error"] = max(
            abs(a - b) / abs(b) for a, b in zip(half["losses"], ref["losses"]))
        out[name]["bf16_eval_error"] = max(
            abs(a - b) for a, b in zip(half["eval"], ref["eval"]))
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")
